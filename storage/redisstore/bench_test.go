package redisstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/baseline"
	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
)

// BenchmarkStore runs the shared operation benchmarks on the real Redis
// server (one process on loopback).
func BenchmarkStore(b *testing.B) {
	c := serverClient(b)
	servicetest.Benchmarks(b, func(tb testing.TB) storage.Store { return newStore(tb, c, true) })
}

// BenchmarkStoreCluster runs them on the 3-master Redis Cluster.
func BenchmarkStoreCluster(b *testing.B) {
	c := clusterClient(b)
	servicetest.Benchmarks(b, func(tb testing.TB) storage.Store { return newStore(tb, c, false) })
}

// BenchmarkListTokensHTTP serves authenticated GET /v1/users/{u}/tokens
// through the Handler on Redis, beside a bare handler that does one Redis
// GET per request (hash the bearer, GET a key holding the answer, write
// it), from 8 goroutines per core so the round trips overlap as a server's
// would. The ratio of their ns/op is the ratio of their throughputs.
func BenchmarkListTokensHTTP(b *testing.B) {
	token, h, bare := listTokensHandlers(b)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"handler", h}, {"bare_one_get", bare}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				req := listTokensRequest(token)
				for pb.Next() {
					w := httptest.NewRecorder()
					bc.h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Error(w.Code, w.Body.String())
						return
					}
				}
			})
		})
	}
}

// BenchmarkListTokensLoopback is BenchmarkListTokensHTTP over real
// connections: each handler behind its own net/http server on loopback,
// driven by keep-alive clients from 8 goroutines per core, so the ratio
// includes what every HTTP server pays (parsing, syscalls) as a load test
// sees it.
func BenchmarkListTokensLoopback(b *testing.B) {
	token, h, bare := listTokensHandlers(b)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"handler", h}, {"bare_one_get", bare}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := httptest.NewServer(bc.h)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			defer client.CloseIdleConnections()
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/users/admin/tokens", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				for pb.Next() {
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Error(resp.StatusCode)
						return
					}
				}
			})
		})
	}
}

// listTokensHandlers returns the token of an Admin with ten tokens, the Handler on a Redis
// store, and the bare one-GET handler primed with the Handler's answer to
// that Admin's GET /v1/users/admin/tokens.
func listTokensHandlers(b *testing.B) (token string, h, bare http.Handler) {
	c := serverClient(b)
	s := newStore(b, c, true)
	svc, token, admin := benchAdmin(b, s)
	// Ten tokens, as the load harness lists.
	for i := range 9 {
		if _, err := svc.CreateToken(b.Context(), admin, "admin", orgadmin.CreateTokenInput{Name: fmt.Sprint("bench-", i)}); err != nil {
			b.Fatal(err)
		}
	}
	h = httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, listTokensRequest(token))
	if rec.Code != http.StatusOK {
		b.Fatal(rec.Code, rec.Body.String())
	}
	sum := sha256.Sum256([]byte(token))
	if err := c.Set(b.Context(), s.prefix+"bare:"+hex.EncodeToString(sum[:]), rec.Body.String(), 0).Err(); err != nil {
		b.Fatal(err)
	}
	return token, h, baseline.OneGet(c, s.prefix+"bare:")
}

func listTokensRequest(token string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/v1/users/admin/tokens", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// BenchmarkReadAccessOtherUser authenticates an Admin whose token's
// location the Store knows, with another user (a service account) as the
// request's target, as GET /v1/users/{u}/instances does.
func BenchmarkReadAccessOtherUser(b *testing.B) {
	s := newStore(b, serverClient(b), true)
	svc, token, admin := benchAdmin(b, s)
	if _, err := svc.CreateServiceAccount(b.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "robot"}); err != nil {
		b.Fatal(err)
	}
	q := storage.AccessQuery{Digest: sha256.Sum256([]byte(token)), Username: "robot"}
	b.ReportAllocs()
	for b.Loop() {
		a, err := s.ReadAccess(b.Context(), q)
		if err != nil || !a.TargetFound {
			b.Fatal(err, a.TargetFound)
		}
	}
}

// benchAdmin bootstraps the org "bench" on s with its Admin "admin", and
// returns the Service, the Admin's token and its authentication.
func benchAdmin(b *testing.B, s *Store) (*orgadmin.Service, string, orgadmin.Auth) {
	b.Helper()
	svc := orgadmin.New(s, orgadmin.Config{})
	token, err := svc.Bootstrap(b.Context(), orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	admin, err := svc.Authenticate(b.Context(), token)
	if err != nil {
		b.Fatal(err)
	}
	return svc, token, admin
}
