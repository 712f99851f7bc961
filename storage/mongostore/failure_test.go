package mongostore

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
)

// failBound is how long a call may take to fail when the server is down or
// hangs: the per-operation timeout of the stores below, plus ample slack.
// Speed is not asserted here; never hanging is.
const (
	failTimeout = 500 * time.Millisecond
	failBound   = 10 * time.Second
)

// A store on an address where no server listens fails its calls within the
// timeout, New included.
func TestDeadServerFailsWithinTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + addr + "/?directConnection=true"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })

	start := time.Now()
	_, err = New(t.Context(), c.Database("orgadmin"), Options{Timeout: failTimeout})
	require.Error(t, err)
	assert.Less(t, time.Since(start), failBound, "New on a dead server")

	s := &Store{db: c.Database("orgadmin"), timeout: failTimeout}
	start = time.Now()
	require.Error(t, s.Ping(t.Context()))
	assert.Less(t, time.Since(start), failBound, "Ping on a dead server")
}

// When the server hangs or refuses connections, /healthz answers 503 and
// /v1 answers 500, each within the timeout; when it comes back, both
// recover without a restart.
func TestServerDownAndBack(t *testing.T) {
	target := serverAddr(t)
	p := startProxy(t, target)
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + p.addr() + "/?directConnection=true"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	db := newDB(t, c)
	// The default timeout, not failTimeout: a busy FerretDB may take more
	// than half a second to create the indexes or bootstrap.
	s, err := New(t.Context(), db, Options{Timeout: 2 * time.Second})
	require.NoError(t, err)

	svc := orgadmin.New(s, orgadmin.Config{})
	token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mux := http.NewServeMux()
	mux.Handle("/", httpserver.New(svc, httpserver.Config{Logger: log}))
	mux.Handle("/healthz", httpserver.Health(svc))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	get := func(path string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Less(t, time.Since(start), failBound, "GET %s", path)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get("/healthz"))
	require.Equal(t, http.StatusOK, get("/v1/users"))

	for _, mode := range []string{"hang", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			p.set(mode)
			assert.Equal(t, http.StatusServiceUnavailable, get("/healthz"))
			assert.Equal(t, http.StatusInternalServerError, get("/v1/users"))

			p.set("forward")
			deadline := time.Now().Add(30 * time.Second)
			for get("/healthz") != http.StatusOK {
				require.True(t, time.Now().Before(deadline), "/healthz did not recover")
				time.Sleep(100 * time.Millisecond)
			}
			assert.Equal(t, http.StatusOK, get("/v1/users"))
		})
	}
}

// serverAddr returns the host:port of the test server, or skips t when
// ORGADMIN_MONGO_URI names something a TCP proxy cannot stand in for.
func serverAddr(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(testURI(t))
	require.NoError(t, err)
	if u.Scheme != "mongodb" || strings.Contains(u.Host, ",") || u.User != nil || u.Query().Has("tls") {
		t.Skip("the proxy needs a plain mongodb://HOST:PORT URI")
	}
	return u.Host
}

// proxy stands between a client and the test server. It forwards, hangs
// (accepts connections and never answers) or refuses (closes every
// connection at once); switching mode cuts the connections it holds.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  string
	conns map[net.Conn]bool
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target, mode: "forward", conns: make(map[net.Conn]bool)}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.set("closed")
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// set switches to mode and cuts every connection held.
func (p *proxy) set(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// track remembers c for the next set, unless the mode changed from want.
func (p *proxy) track(c net.Conn, want string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != want {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		switch mode {
		case "forward":
			go p.forward(c)
		case "hang":
			if !p.track(c, mode) {
				_ = c.Close()
			}
		default:
			_ = c.Close()
		}
	}
}

func (p *proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, "forward") || !p.track(up, "forward") {
		_ = c.Close()
		_ = up.Close()
		return
	}
	go func() {
		_, _ = io.Copy(up, c)
		_ = up.Close()
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
}
