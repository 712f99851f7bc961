package httpserver_test

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// BenchmarkListTokensHTTP serves authenticated GET /v1/users/{u}/tokens
// through the Handler, beside a bare handler that does the least the same
// answer needs (parse the bearer, hash it, one map lookup, write the same
// body), so the Handler's overhead reads as the ratio of the two.
func BenchmarkListTokensHTTP(b *testing.B) {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
	if err != nil {
		b.Fatal(err)
	}
	h := httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	req := httptest.NewRequest("GET", "/v1/users/admin/tokens", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		b.Fatal(rec.Code, rec.Body.String())
	}
	body := rec.Body.Bytes()

	bare := bareHandler(token, body)
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

// bareHandler answers body to the one token it knows.
func bareHandler(token string, body []byte) http.Handler {
	known := map[[32]byte][]byte{sha256.Sum256([]byte(token)): body}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		b, found := known[sha256.Sum256([]byte(tok))]
		if !ok || !found {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}
