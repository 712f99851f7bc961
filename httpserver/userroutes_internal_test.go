package httpserver

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The routes ServeHTTP finds itself are the table's routes of the shape
// METHOD /v1/users/{username}/segment, and no other.
func TestUserRoutesAreTheTables(t *testing.T) {
	h := New(orgadmin.New(memstore.New(), orgadmin.Config{}), Config{})
	var got []string
	for _, ur := range h.userRoutes {
		got = append(got, ur.pattern)
		assert.Equal(t, ur.method+" /v1/users/{username}/"+ur.segment, ur.pattern)
	}
	assert.ElementsMatch(t, []string{
		"GET /v1/users/{username}/instances",
		"PUT /v1/users/{username}/instances",
		"POST /v1/users/{username}/tokens",
		"GET /v1/users/{username}/tokens",
	}, got)
}

// userRouteMethods and userRoutePaths make the requests of
// TestUserRoutesAgreeWithMux: paths that are userRoutes, and paths near
// them that the ServeMux must decide.
var (
	userRouteMethods = []string{"GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "get", "PATCH"}
	userRoutePaths   = []string{
		"/v1/users/alice/tokens", "/v1/users/alice/instances", "/v1/users/Zoë/tokens", "/v1/users/%C3%A9/instances",
		"/v1/users/a%20b/tokens", "/v1/users/a%2Fb/tokens", "/v1/users/a%252Fb/tokens", "/v1/users/%2E/tokens",
		"/v1/users/%2E%2E/tokens", "/v1/users/./tokens", "/v1/users/../tokens", "/v1/users//tokens",
		"/v1/users/alice//tokens", "/v1/users/alice/tokens/", "/v1/users/alice/tokens/x", "/v1/users/alice/tokens/..",
		"/v1/users/alice/./tokens", "/v1/users/alice/../bob/tokens", "/v1/users/alice", "/v1/users/alice/",
		"/v1/users/alice/tokenz", "/v1/users/alice/Tokens", "/v1/users/alice/instances?x=1", "/v1/users",
		"/v1/users/", "/v1//users/alice/tokens", "/V1/users/alice/tokens", "/v1/users/alice%3Fx/tokens",
		"/v1/users/%/tokens", "/v1/users/a;b/tokens", "/v1/users/{username}/tokens", "/v1/users/alice/%74okens",
		"/v1/users/alice%00/tokens", "/v1/users/" + strings.Repeat("a", 300) + "/tokens",
	}
)

// TestUserRoutesAgreeWithMux: wherever userRoute finds a route, the
// ServeMux finds the same one, with the same username.
func TestUserRoutesAgreeWithMux(t *testing.T) {
	h := New(orgadmin.New(memstore.New(), orgadmin.Config{}), Config{})
	ref := newRefMux(h)
	found := map[string]bool{}
	for _, m := range userRouteMethods {
		for _, p := range userRoutePaths {
			if checkUserRoute(t, h, ref, m, p) {
				found[m+" "+p] = true
			}
		}
	}
	for _, want := range []string{
		"GET /v1/users/alice/tokens", "POST /v1/users/alice/tokens", "GET /v1/users/alice/instances",
		"PUT /v1/users/alice/instances", "GET /v1/users/a%20b/tokens", "PUT /v1/users/alice/instances?x=1",
	} {
		assert.True(t, found[want], "userRoute serves %s", want)
	}
	assert.Len(t, found, 20)
}

func FuzzUserRoutes(f *testing.F) {
	for i, m := range userRouteMethods {
		for _, p := range userRoutePaths {
			f.Add(m, p)
		}
		f.Add(m, userRoutePaths[i])
	}
	h := New(orgadmin.New(memstore.New(), orgadmin.Config{}), Config{})
	ref := newRefMux(h)
	f.Fuzz(func(t *testing.T, method, target string) {
		checkUserRoute(t, h, ref, method, target)
	})
}

// refMux is a ServeMux of h's route table whose handlers note the pattern
// and username they are called with.
type refMux struct {
	mux            *http.ServeMux
	pattern, value string
}

func newRefMux(h *Handler) *refMux {
	m := &refMux{mux: http.NewServeMux()}
	for _, rt := range h.routes() {
		m.mux.HandleFunc(rt.pattern, func(_ http.ResponseWriter, r *http.Request) {
			m.pattern, m.value = r.Pattern, r.PathValue("username")
		})
	}
	return m
}

// checkUserRoute checks that where h.userRoute finds a route for the
// request, as net/http's server reads it, the ServeMux of the route table
// finds the same pattern, without redirecting, and the same username; it
// reports whether it found one.
func checkUserRoute(t *testing.T, h *Handler, ref *refMux, method, target string) bool {
	t.Helper()
	read := func() *http.Request {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: x\r\n\r\n")))
		if err != nil {
			return nil
		}
		return r
	}
	r := read()
	if r == nil || strings.ContainsAny(method+target, " \r\n") {
		return false // net/http answers 400 itself
	}
	ur, username := h.userRoute(r)
	if ur == nil {
		return false
	}
	ref.pattern, ref.value = "", ""
	w := httptest.NewRecorder()
	ref.mux.ServeHTTP(w, read())
	require.Equal(t, ur.pattern, ref.pattern, "%s %s: the ServeMux answered %d", method, target, w.Code)
	require.Equal(t, ref.value, username, "%s %s", method, target)
	return true
}
