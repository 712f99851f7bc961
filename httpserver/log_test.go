package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/orgadmin/orgadmin/httpserver"
)

// BenchmarkLogRequests is the cost LogRequests adds to every request: an
// id, a context value, the recorder and one JSON log line.
func BenchmarkLogRequests(b *testing.B) {
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", http.HandlerFunc(writeOK)},
		{"logged", httpserver.LogRequests(logger, http.HandlerFunc(writeOK))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/v1/users/admin/tokens", nil)
			w := discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.header)
				bc.h.ServeHTTP(w, req)
			}
		})
	}
}

func writeOK(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("{}"))
}

// discardWriter is a ResponseWriter that keeps nothing but its header
// map, reused as net/http reuses it, so that the benchmark times
// LogRequests, not a recorder.
type discardWriter struct{ header http.Header }

func (w discardWriter) Header() http.Header       { return w.header }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
