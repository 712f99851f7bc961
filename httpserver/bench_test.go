package httpserver_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/baseline"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// BenchmarkListTokensHTTP serves authenticated GET /v1/users/{u}/tokens
// through the Handler (ten tokens, as the load harness lists), beside a
// bare handler that does the least the same answer needs (parse the
// bearer, hash it, one map lookup, write the same body), so the Handler's
// overhead reads as the difference of the two. Both write to a
// ResponseWriter that keeps nothing, so that neither pays for a recorder.
func BenchmarkListTokensHTTP(b *testing.B) {
	svc, admin, token, h := benchHandler(b, orgadmin.Config{})
	// Ten tokens, as the load harness lists.
	for i := range 9 {
		if _, err := svc.CreateToken(b.Context(), admin, "admin", orgadmin.CreateTokenInput{Name: fmt.Sprint("bench-", i)}); err != nil {
			b.Fatal(err)
		}
	}
	req := httptest.NewRequest("GET", "/v1/users/admin/tokens", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatal(rec.Code, rec.Body.String())
	}
	body := rec.Body.Bytes()

	bare := baseline.Bare(sha256.Sum256([]byte(token)), body)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{{"handler", h}, {"bare", bare}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				// A new header map for every answer, as net/http makes.
				bc.h.ServeHTTP(discardWriter{header: http.Header{}}, req)
			}
		})
	}
}

// BenchmarkListUsersHTTP serves GET /v1/users?limit=100 through the
// Handler, a page of 100 of 1 000 service accounts (as the load harness
// pages).
func BenchmarkListUsersHTTP(b *testing.B) {
	svc, admin, token, h := benchHandler(b, orgadmin.Config{})
	for i := range 1000 {
		in := orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("sa%05d", i)}
		if _, err := svc.CreateServiceAccount(b.Context(), admin, in); err != nil {
			b.Fatal(err)
		}
	}
	req := httptest.NewRequest("GET", "/v1/users?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// BenchmarkFeedbackManyClients serves GET of the feedback endpoint, each
// request from a client the handler has not seen, once it has seen a
// number of other clients, each of which has spent part of its rate
// (the clock stands still). The cost of a request should not grow with
// the number of clients.
func BenchmarkFeedbackManyClients(b *testing.B) {
	for _, clients := range []int{1_000, 10_000, 40_000} {
		b.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
			svc := orgadmin.New(memstore.New(), orgadmin.Config{})
			now := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
			h := httpserver.NewFeedback(svc, httpserver.FeedbackConfig{
				Logger:    slog.New(slog.DiscardHandler),
				ClientKey: func(r *http.Request) string { return r.RemoteAddr },
				Now:       func() time.Time { return now },
			})
			req := httptest.NewRequest("GET", httpserver.FeedbackPath+"?page_path=%2Fdocs&text=great", nil)
			n := 0
			serve := func(w http.ResponseWriter) {
				n++
				req.RemoteAddr = strconv.Itoa(n)
				h.ServeHTTP(w, req)
			}
			for range clients {
				serve(discardWriter{header: http.Header{}})
			}
			rec := httptest.NewRecorder()
			serve(rec)
			if rec.Code != 200 {
				b.Fatal(rec.Code, rec.Body.String())
			}
			b.ReportAllocs()
			for b.Loop() {
				serve(discardWriter{header: http.Header{}})
			}
		})
	}
}

// benchHandler returns a Service of cfg on a memory store with the Admin
// "admin" of org "bench", the Admin as caller and its token, and the
// Service's Handler logging JSON lines, as the example server does.
func benchHandler(b *testing.B, cfg orgadmin.Config) (*orgadmin.Service, orgadmin.Caller, string, *httpserver.Handler) {
	b.Helper()
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), cfg)
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	admin, err := svc.Authenticate(ctx, token)
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	return svc, admin, token, httpserver.New(svc, httpserver.Config{Logger: log, RequestLog: io.Discard})
}

// BenchmarkWorkloadsHTTP serves each workload of the load harness
// (bench/loadharness) through the Handler, in process, on a memory store
// of the Admin with ten tokens and 1 000 service accounts: what a request
// costs the Handler, the Service and the store, and what it allocates
// (the garbage collector's work under load grows with it).
func BenchmarkWorkloadsHTTP(b *testing.B) {
	ctx := context.Background()
	// No limit of tokens in sight: create-token runs as long as it is timed.
	svc, admin, token, h := benchHandler(b, orgadmin.Config{MaxTokensPerUser: 1 << 30})
	for i := range 9 {
		if _, err := svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: fmt.Sprint("bench-", i)}); err != nil {
			b.Fatal(err)
		}
	}
	const users = 1000
	for i := range users {
		in := orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("sa%05d", i)}
		if _, err := svc.CreateServiceAccount(ctx, admin, in); err != nil {
			b.Fatal(err)
		}
	}
	const config = `{"config":{"read_write":{"instance_size":"jumbo"},"read_scaling":{"instance_size":"standard","flock_size":2}}}`
	for _, w := range []struct {
		name, method, path, body string
		perUser                  bool
	}{
		{"list-tokens", "GET", "/v1/users/admin/tokens", "", false},
		{"get-config", "GET", "/v1/users/%s/instances", "", true},
		{"set-config", "PUT", "/v1/users/%s/instances", config, true},
		{"create-token", "POST", "/v1/users/%s/tokens", `{"name":"bench"}`, true},
		{"list-users", "GET", "/v1/users?limit=100", "", false},
	} {
		b.Run(w.name, func(b *testing.B) {
			reqs := make([]*http.Request, 1)
			if w.perUser {
				reqs = make([]*http.Request, users)
			}
			for i := range reqs {
				path := w.path
				if w.perUser {
					path = fmt.Sprintf(w.path, fmt.Sprintf("sa%05d", i))
				}
				reqs[i] = httptest.NewRequest(w.method, path, nil)
				reqs[i].Header.Set("Authorization", "Bearer "+token)
				if w.body != "" {
					reqs[i].Header.Set("Content-Type", "application/json")
				}
			}
			body := strings.NewReader(w.body)
			if w.body != "" {
				reqs[0].Body = io.NopCloser(body)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, reqs[0])
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code, rec.Body.String())
			}
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				r := reqs[n%len(reqs)]
				n++
				if w.body != "" {
					body.Reset(w.body)
					r.Body = io.NopCloser(body)
				}
				// A new header map for every answer, as net/http makes.
				h.ServeHTTP(discardWriter{header: http.Header{}}, r)
			}
		})
	}
}

// BenchmarkRefusedLargeBody serves a body at the size limit that is all
// problems (some 349 000 required_resources items, each without its url),
// with a token that authenticates nowhere: what a client without a
// credential can make the Handler do with one request. The answer is 401;
// the body is decoded, and the Service checks nothing of it.
func BenchmarkRefusedLargeBody(b *testing.B) {
	f := newFixture(b, orgadmin.Config{})
	const head, tail = `{"username":"robot","required_resources":[`, `]}`
	n := (httpserver.DefaultMaxBodyBytes - len(head) - len(tail) + 1) / 3 // items "{}," but the last
	body := head + strings.Repeat("{},", n-1) + "{}" + tail
	for b.Loop() {
		req, err := http.NewRequestWithContext(b.Context(), "POST", f.srv.URL+embedPath(acmeDiveID), strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer not-a-token-of-anyone")
		res, err := testHTTP.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}
