package httpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/httpserver"
)

// BenchmarkLogRequests is the cost LogRequests adds to every request: an
// id, a context value, the recorder and one JSON log line, through slog or
// written to a writer (LogRequestsTo).
func BenchmarkLogRequests(b *testing.B) {
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", http.HandlerFunc(writeOK)},
		{"logged", httpserver.LogRequests(slog.New(slog.NewJSONHandler(io.Discard, nil)), http.HandlerFunc(writeOK))},
		{"logged-to-writer", httpserver.LogRequestsTo(io.Discard, slog.New(slog.DiscardHandler), http.HandlerFunc(writeOK))},
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

// The request line goes through the handler like any slog line: a
// handler above Info keeps none but those of 5xx, at level Error, and a
// panic's cause is logged.
func TestRequestLogRespectsLevel(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rec := httptest.NewRecorder()
	httpserver.LogRequests(logger, http.HandlerFunc(writeOK)).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/users", nil))
	assert.Equal(t, 200, rec.Code)
	assert.NotEmpty(t, rec.Header().Get("X-Request-Id"))
	assert.Empty(t, buf.String())

	rec = httptest.NewRecorder()
	httpserver.LogRequests(logger, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/v1/users", nil))
	assert.Equal(t, 500, rec.Code)
	assert.Contains(t, buf.String(), `"level":"ERROR","msg":"internal error"`)
	assert.Contains(t, buf.String(), `"level":"ERROR","msg":"request"`)
	assert.Contains(t, buf.String(), `"status":500`)
}

// The request line, through slog or written to a writer: what it says of
// the request, and never its query or headers.
func TestRequestLogLine(t *testing.T) {
	for _, to := range []string{"slog", "writer"} {
		t.Run(to, func(t *testing.T) {
			var buf, logged bytes.Buffer
			h := httpserver.LogRequests(slog.New(slog.NewJSONHandler(&buf, nil)), http.HandlerFunc(writeOK))
			if to == "writer" {
				// Nothing goes to the logger, and an inner LogRequests
				// adds no second line.
				logger := slog.New(slog.NewJSONHandler(&logged, nil))
				h = httpserver.LogRequestsTo(&buf, logger, httpserver.LogRequests(logger, http.HandlerFunc(writeOK)))
			}
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/v1/users/a%2Fb/tokens?page_token=secret", nil)
			req.Header.Set("Authorization", "Bearer secret-token")
			h.ServeHTTP(rec, req)
			require.Equal(t, 1, strings.Count(buf.String(), "\n"), buf.String())
			var line map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
			assert.Equal(t, "INFO", line["level"])
			assert.Equal(t, "request", line["msg"])
			assert.Equal(t, rec.Header().Get("X-Request-Id"), line["request_id"])
			assert.Equal(t, "GET", line["method"])
			assert.Equal(t, "/v1/users/a%2Fb/tokens", line["path"])
			assert.EqualValues(t, 200, line["status"])
			assert.EqualValues(t, 2, line["bytes"])
			assert.Equal(t, req.RemoteAddr, line["remote"])
			assert.IsType(t, float64(0), line["duration"])
			at, err := time.Parse(time.RFC3339Nano, line["time"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, time.Now(), at, time.Minute)
			assert.Len(t, line, 10)
			assert.NotContains(t, buf.String(), "secret")
			assert.Empty(t, logged.String())

			// A HEAD request's body is never sent, whatever was written.
			buf.Reset()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("HEAD", "/v1/users", nil))
			line = map[string]any{}
			require.NoError(t, json.Unmarshal(buf.Bytes(), &line), buf.String())
			assert.Equal(t, "HEAD", line["method"])
			assert.EqualValues(t, 0, line["bytes"])
		})
	}
}

// outerKey is the key of a value a host puts in a request's context.
type outerKey struct{}

// Request ids are 16 hex digits, and tell requests apart.
func TestRequestIDsDiffer(t *testing.T) {
	h := httpserver.LogRequests(slog.New(slog.DiscardHandler), http.HandlerFunc(writeOK))
	seen := map[string]bool{}
	for range 10000 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/users", nil))
		id := rec.Header().Get("X-Request-Id")
		require.Regexp(t, `^[0-9a-f]{16}$`, id)
		require.False(t, seen[id], "id %s given twice", id)
		seen[id] = true
	}
}

// RequestID gives the handler the id of the X-Request-Id header; an outer
// LogRequests gives the id, and the inner one passes the request through
// without a second id or line.
func TestRequestIDInContext(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	var seen []string
	type key struct{}
	inner := httpserver.LogRequests(logger, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, httpserver.RequestID(r.Context()))
		// Contexts made from the request's find the id, and what the
		// request's context held; its cancellation reaches them.
		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), key{}, "mine"))
		seen = append(seen, httpserver.RequestID(ctx), ctx.Value(key{}).(string), ctx.Value(outerKey{}).(string))
		cancel()
		writeOK(w, r)
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/users", nil)
	parent, stop := context.WithCancel(context.WithValue(req.Context(), outerKey{}, "host's"))
	httpserver.LogRequests(logger, inner).ServeHTTP(rec, req.WithContext(parent))
	id := rec.Header().Get("X-Request-Id")
	require.Len(t, id, 16)
	assert.Equal(t, []string{id, id, "mine", "host's"}, seen)

	assert.Equal(t, []string{id}, rec.Header().Values("X-Request-Id"))
	assert.Equal(t, 1, strings.Count(buf.String(), `"msg":"request"`))
	assert.Empty(t, httpserver.RequestID(context.Background()))

	// The request's context ends with the context it was given.
	var done <-chan struct{}
	httpserver.LogRequests(logger, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done = r.Context().Done()
		writeOK(w, r)
	})).ServeHTTP(httptest.NewRecorder(), req.WithContext(parent))
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the request's context was not canceled with its parent")
	}
}

// Under LogRequestsTo, a panic's cause goes to the logger, and the line
// of its 500 to the writer.
func TestRequestLogToWriterPanics(t *testing.T) {
	var lines, logged bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logged, nil))
	rec := httptest.NewRecorder()
	httpserver.LogRequestsTo(&lines, logger, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/v1/users", nil))
	assert.Equal(t, 500, rec.Code)
	assert.Contains(t, logged.String(), `"level":"ERROR","msg":"internal error"`)
	assert.Contains(t, logged.String(), "boom")
	assert.NotContains(t, logged.String(), `"msg":"request"`)
	assert.Contains(t, lines.String(), `"status":500`)
	assert.NotContains(t, lines.String(), "boom")
}

// A nil logger is slog.Default(), as in Config.
func TestRequestLogNilLogger(t *testing.T) {
	var lines bytes.Buffer
	rec := httptest.NewRecorder()
	httpserver.LogRequestsTo(&lines, nil, http.HandlerFunc(writeOK)).ServeHTTP(rec, httptest.NewRequest("GET", "/v1/users", nil))
	assert.Equal(t, 200, rec.Code)
	assert.Contains(t, lines.String(), `"status":200`)
}
