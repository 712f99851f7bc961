package redisstore

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage"
)

// testHTTP sends the tests' requests through a transport of its own:
// httptest.Server.Close, which tests running in parallel call, closes
// http.DefaultTransport's idle connections and so can fail a request
// about to reuse one ("CloseIdleConnections called").
var testHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

func TestNewRefusesBadOptions(t *testing.T) {
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer plain.Close()
	_, err := New(plain, Options{})
	require.ErrorContains(t, err, "ContextTimeoutEnabled")

	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	_, err = New(c, Options{Prefix: "a{b}:"})
	require.ErrorContains(t, err, "brace")

	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	_, err = New(ring, Options{})
	require.ErrorContains(t, err, "unsupported client")

	// A Cluster client that reads from replicas, which lag their masters.
	for name, o := range map[string]redis.ClusterOptions{
		"ReadOnly":       {ReadOnly: true},
		"RouteByLatency": {RouteByLatency: true},
		"RouteRandomly":  {RouteRandomly: true},
	} {
		o.Addrs, o.ContextTimeoutEnabled = []string{"127.0.0.1:1"}, true
		cc := redis.NewClusterClient(&o)
		_, err = New(cc, Options{})
		require.ErrorContains(t, err, "masters only", name)
		require.NoError(t, cc.Close())
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer cc.Close()
	_, err = New(cc, Options{})
	require.NoError(t, err, "a Cluster client that reads from masters")
}

// silentServer accepts connections, reads what comes and never answers:
// a Redis that hangs.
func silentServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(io.Discard, conn)
			}()
		}
	}()
	return ln.Addr().String()
}

// Against a Redis that never answers, every method gives up with an error
// once its timeout has passed: no hang. (The bound checked is generous; it
// only tells "returned" from "hung".)
func TestTimeoutOnSilentRedis(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: silentServer(t), ContextTimeoutEnabled: true})
	defer c.Close()
	s, err := New(c, Options{Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	ctx := context.Background()
	u := storage.User{ID: "u", Org: "acme", Username: "a", FoldedUsername: "a", Role: "Member"}
	calls := map[string]func() error{
		"Ping":       func() error { return s.Ping(ctx) },
		"CreateUser": func() error { return s.CreateUser(ctx, u, storage.UserLimit{}, nil) },
		"ReadAccess": func() error { _, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: storage.Digest{}}); return err },
		"CreateToken": func() error {
			return s.CreateToken(ctx, storage.Token{ID: "t", Org: "acme", UserID: "u"}, storage.TokenLimit{}, nil)
		},
		"ListUsers":  func() error { _, err := s.ListUsers(ctx, "acme", storage.UserQuery{Limit: 10}); return err },
		"DeleteUser": func() error { _, err := s.DeleteUser(ctx, "acme", "u", nil); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		require.Error(t, err, name)
		assert.Less(t, time.Since(start), 10*time.Second, "%s hung", name)
	}
}

// With Redis down, the API answers 500 INTERNAL_SERVER_ERROR (the body says
// only "Internal Error") and /healthz 503; when Redis is back, 200 again
// and the data is there.
func TestRedisDownAndBack(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	defer c.Close()
	s, err := New(c, Options{Timeout: 500 * time.Millisecond})
	require.NoError(t, err)
	svc := orgadmin.New(s, orgadmin.Config{})
	token, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpserver.New(svc, httpserver.Config{}))
	mux.Handle("GET /healthz", httpserver.Health(svc))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := testHTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	code, _ := get("/healthz")
	require.Equal(t, http.StatusOK, code)
	code, _ = get("/v1/users/admin/tokens")
	require.Equal(t, http.StatusOK, code)

	m.Close()
	code, _ = get("/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	code, body := get("/v1/users/admin/tokens")
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.JSONEq(t, `{"message":"Internal Error","code":"INTERNAL_SERVER_ERROR"}`, body)

	require.NoError(t, m.Restart())
	require.Eventually(t, func() bool { code, _ := get("/healthz"); return code == http.StatusOK }, 10*time.Second, 50*time.Millisecond)
	code, body = get("/v1/users/admin/tokens")
	assert.Equal(t, http.StatusOK, code, body)
}
