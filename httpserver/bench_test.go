package httpserver_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/baseline"
	"github.com/orgadmin/orgadmin/internal/jsonlog"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// BenchmarkListTokensHTTP serves authenticated GET /v1/users/{u}/tokens
// through the Handler (ten tokens, as the load harness lists), beside a bare handler that does the least the same
// answer needs (parse the bearer, hash it, one map lookup, write the same
// body), so the Handler's overhead reads as the ratio of the two.
func BenchmarkListTokensHTTP(b *testing.B) {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	// Ten tokens, as the load harness lists.
	admin, err := svc.Authenticate(ctx, token)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 9 {
		if _, err := svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: fmt.Sprint("bench-", i)}); err != nil {
			b.Fatal(err)
		}
	}
	// The example server's log handler, lines held up to 0.1 s.
	logs := jsonlog.New(io.Discard, &jsonlog.Options{FlushDelay: 100 * time.Millisecond})
	defer logs.Flush()
	h := httpserver.New(svc, httpserver.Config{Logger: slog.New(logs)})
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
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

// BenchmarkListUsersHTTP serves GET /v1/users?limit=100 through the
// Handler, a page of 100 of 1 000 service accounts (as the load harness
// pages), with the example server's log handler.
func BenchmarkListUsersHTTP(b *testing.B) {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	admin, err := svc.Authenticate(ctx, token)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		in := orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("sa%05d", i)}
		if _, err := svc.CreateServiceAccount(ctx, admin, in); err != nil {
			b.Fatal(err)
		}
	}
	logs := jsonlog.New(io.Discard, &jsonlog.Options{FlushDelay: 100 * time.Millisecond})
	defer logs.Flush()
	h := httpserver.New(svc, httpserver.Config{Logger: slog.New(logs)})
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
