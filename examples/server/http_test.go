package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The server bounds the time a client may take over its headers, its
// request and the response, how long a connection may idle, and the size
// of the headers.
func TestHTTPServerHasTimeoutsAndHeaderLimit(t *testing.T) {
	srv := newHTTPServer(http.NotFoundHandler(), slog.New(slog.DiscardHandler))
	assert.Equal(t, 5*time.Second, srv.ReadHeaderTimeout)
	assert.Equal(t, 30*time.Second, srv.ReadTimeout)
	assert.Equal(t, 35*time.Second, srv.WriteTimeout)
	assert.Equal(t, 2*time.Minute, srv.IdleTimeout)
	assert.Equal(t, 64<<10, srv.MaxHeaderBytes)
	assert.NotNil(t, srv.ErrorLog)
}

// Headers past 64 KiB are refused with 431 by the running server; below it
// they are served. (net/http's own default would accept 1 MiB.)
func TestHeadersOverTheLimitAre431(t *testing.T) {
	base, _ := startServer(t, nil)
	get := func(pad int) *http.Response {
		req, err := http.NewRequest("GET", base+"/healthz", nil)
		require.NoError(t, err)
		req.Header.Set("X-Pad", strings.Repeat("p", pad))
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	assert.Equal(t, http.StatusOK, get(60<<10).StatusCode)
	assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, get(80<<10).StatusCode)
}

// A body of 1 MiB is read; one byte more is a 400 whose one issue names
// the body (an empty path), as DESIGN §3 says.
func TestBodyOverTheLimitIs400NamingTheBody(t *testing.T) {
	const token = "env-supplied-admin-token"
	base, _ := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": token})
	post := func(body []byte) (int, []byte) {
		req, err := http.NewRequest("POST", base+"/v1/users", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, raw
	}
	// White space pads a valid body to the size wanted.
	padded := func(size int) []byte {
		b := []byte(`{"username": "padded"}`)
		return append(b, bytes.Repeat([]byte(" "), size-len(b))...)
	}
	st, raw := post(padded(httpserver.DefaultMaxBodyBytes))
	require.Equal(t, http.StatusOK, st, "%s", raw)

	st, raw = post(padded(httpserver.DefaultMaxBodyBytes + 1))
	require.Equal(t, http.StatusBadRequest, st, "%s", raw)
	assert.JSONEq(t, `{"message": "Bad Request", "code": "BAD_REQUEST", "issues": [
		{"message": "Body must be at most 1048576 bytes", "path": [], "code": "too_big"}]}`, string(raw))
}

// limitedServer serves h with the server's limits, except those set in
// tweak (tiny timeouts, so that a test sees them act), on a loopback port
// until the test ends, and returns its address.
func limitedServer(t *testing.T, h http.Handler, tweak func(*http.Server)) string {
	t.Helper()
	srv := newHTTPServer(h, slog.New(slog.DiscardHandler))
	tweak(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // http.ErrServerClosed once the test ends
	}()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		<-done
	})
	return ln.Addr().String()
}

// dial connects to addr; every read fails after a deadline far longer
// than any timeout under test, so that a server that never closes the
// connection fails the test instead of hanging it.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	return c
}

// requireClosedByServer reads c to its end and returns what came: the
// server must close the connection (io.ReadAll then stops without error)
// before the read deadline.
func requireClosedByServer(t *testing.T, c net.Conn) string {
	t.Helper()
	got, err := io.ReadAll(c)
	require.NoError(t, err, "the server left the connection open; read so far: %q", got)
	return string(got)
}

// A client that starts its headers and never ends them is cut off.
func TestSlowHeadersAreCutOff(t *testing.T) {
	addr := limitedServer(t, http.NotFoundHandler(), func(s *http.Server) { s.ReadHeaderTimeout = 50 * time.Millisecond })
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: orgadmin.test\r\nX-Slow: ")
	require.NoError(t, err)
	got := requireClosedByServer(t, c)
	assert.NotContains(t, got, "404", "no request was served")
}

// A keep-alive connection with no next request is closed.
func TestIdleConnectionsAreClosed(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	addr := limitedServer(t, ok, func(s *http.Server) { s.IdleTimeout = 50 * time.Millisecond })
	c := dial(t, addr)
	_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: orgadmin.test\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(c)
	res, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, "ok", string(body))
	require.False(t, res.Close, "the connection is kept alive for a next request")
	rest, err := io.ReadAll(r)
	require.NoError(t, err, "the server left the idle connection open")
	assert.Empty(t, rest)
}

// A body that stops coming is cut off too: the /v1 Handler answers 400
// (the body could not be read) and the server closes the connection. The
// write timeout leaves the answer its time: it is as much longer than the
// read timeout as the server's.
func TestSlowBodiesAreCutOff(t *testing.T) {
	const token = "env-supplied-admin-token"
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	_, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "default", Username: "admin", Token: token})
	require.NoError(t, err)
	h := httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.DiscardHandler)})
	addr := limitedServer(t, h, func(s *http.Server) {
		s.ReadTimeout = 100 * time.Millisecond
		s.WriteTimeout = s.ReadTimeout + writeTimeout - readTimeout
	})
	c := dial(t, addr)
	_, err = io.WriteString(c, "POST /v1/users HTTP/1.1\r\nHost: orgadmin.test\r\nAuthorization: Bearer "+token+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"username\": \"slow\", \"description\": \"")
	require.NoError(t, err)
	got := requireClosedByServer(t, c)
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	require.NoError(t, err, "%q", got)
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "%q", got)
	var env struct {
		Code   string `json:"code"`
		Issues []struct {
			Message string `json:"message"`
			Path    []any  `json:"path"`
		} `json:"issues"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&env))
	assert.Equal(t, "BAD_REQUEST", env.Code)
	require.Len(t, env.Issues, 1)
	assert.Equal(t, "Body could not be read", env.Issues[0].Message)
	assert.Empty(t, env.Issues[0].Path)
	_, err = svc.GetUser(context.Background(), "default", "slow")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// A request with both Transfer-Encoding and Content-Length is answered
// by its chunks, and then the connection is closed (RFC 9112 §6.1): the
// bytes its length would count are never read as a request. A request
// with a length alone leaves the connection open.
func TestChunkedRequestIsTheLastOfItsConnection(t *testing.T) {
	const token = "env-supplied-admin-token"
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	_, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "default", Username: "admin", Token: token})
	require.NoError(t, err)
	h := routes(httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.DiscardHandler)}), http.NotFoundHandler(), http.NotFoundHandler())
	addr := limitedServer(t, h, func(*http.Server) {})

	smuggled := "GET /v1/active_accounts HTTP/1.1\r\nHost: orgadmin.test\r\nAuthorization: Bearer " + token + "\r\n\r\n"
	c := dial(t, addr)
	_, err = io.WriteString(c, "POST /v1/users HTTP/1.1\r\nHost: orgadmin.test\r\nAuthorization: Bearer "+token+
		"\r\nContent-Length: "+strconv.Itoa(5+len(smuggled))+"\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"+smuggled)
	require.NoError(t, err)
	got := requireClosedByServer(t, c)
	res, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	require.NoError(t, err, "%q", got)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "the POST's empty body")
	assert.True(t, res.Close, "Connection: close")
	assert.Equal(t, 1, strings.Count(got, "HTTP/1.1 "), "one answer: %q", got)

	c = dial(t, addr)
	_, err = io.WriteString(c, smuggled)
	require.NoError(t, err)
	res, err = http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.False(t, res.Close, "a request with a length leaves its connection open")
}

// routes sends the two exact paths to their handlers and every other
// request to the API; unclean paths are a plain-text 404, never a
// redirect.
func TestRoutes(t *testing.T) {
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) })
	}
	h := routes(httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.DiscardHandler)}), named("health"), named("feedback"))
	for _, tc := range []struct {
		method, target string
		status         int
		body, location string
	}{
		{"GET", "/healthz", 200, "health", ""},
		{"HEAD", "/healthz", 200, "health", ""},
		{"GET", "/docs/api/feedback/agent?page_path=%2F", 200, "feedback", ""},
		{"GET", "/healthz/", 404, "404 page not found\n", ""},
		{"GET", "/v1/../healthz", 404, "404 page not found\n", ""},
		{"GET", "//healthz", 404, "404 page not found\n", ""},
		{"GET", "/./healthz", 404, "404 page not found\n", ""},
		{"GET", "//v1/users", 404, "404 page not found\n", ""},
		{"GET", "/v1/./users", 404, "404 page not found\n", ""},
		{"GET", "/v1/users/../users", 404, "404 page not found\n", ""},
		{"GET", "/v1//users", 404, "404 page not found\n", ""},
		{"GET", "/v1/users/", 404, "404 page not found\n", ""},
		{"GET", "/v1/users", 401, `{"message":"Invalid Credentials","code":"UNAUTHORIZED"}` + "\n", ""},
		// An escaped slash is part of its element, as the API's routes and
		// orgadmintest's take it: these are neither path. Other escapes
		// name the same path.
		{"GET", "/docs/api/feedback%2Fagent?page_path=%2F", 404, "404 page not found\n", ""},
		{"GET", "/docs%2fapi/feedback/agent?page_path=%2F", 404, "404 page not found\n", ""},
		{"GET", "/docs/api/feedback/agen%74?page_path=%2F", 200, "feedback", ""},
		{"GET", "/health%7A", 200, "health", ""},
	} {
		req, err := http.NewRequest(tc.method, "http://orgadmin.test"+tc.target, nil)
		require.NoError(t, err)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, tc.status, rec.Code, tc.target)
		if tc.body != "" {
			assert.Equal(t, tc.body, rec.Body.String(), tc.target)
		}
		assert.Equal(t, tc.location, rec.Header().Get("Location"), tc.target)
	}
}
