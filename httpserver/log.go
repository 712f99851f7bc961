package httpserver

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"time"
)

// LogRequests gives each request an id (in the X-Request-Id response header
// and RequestID of its context) and logs one line per request: method,
// path, status, bytes, duration, request id and remote address. It never
// logs headers, query strings or bodies, so no token value reaches a log.
// A request that already has an id (an outer LogRequests) is passed
// through without a second line.
func LogRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" {
			next.ServeHTTP(w, r)
			return
		}
		id := newRequestID()
		w.Header().Set("X-Request-Id", id)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, id))
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		defer func() {
			// A panic is a bug; the client still gets the JSON envelope.
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				if !rec.wrote {
					writeError(rec, r, log, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
				}
			}
			// Straight to the handler: Logger.LogAttrs would also look up
			// the caller's source position, which is always this line.
			h := log.Handler()
			if !h.Enabled(r.Context(), slog.LevelInfo) {
				return
			}
			end := time.Now()
			line := slog.NewRecord(end, slog.LevelInfo, "request", 0)
			line.AddAttrs(
				slog.String("request_id", id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.EscapedPath()),
				slog.Int("status", rec.status),
				slog.Int64("bytes", rec.bytes),
				slog.Duration("duration", end.Sub(start)),
				slog.String("remote", r.RemoteAddr))
			_ = h.Handle(r.Context(), line) // nowhere to report a failing log
		}()
		next.ServeHTTP(rec, r)
	})
}

// newRequestID returns 16 hex digits from the runtime's generator
// (ChaCha8, seeded by the system): an id tells requests apart and is no
// secret.
func newRequestID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64()) // #nosec G404 -- an id, not a secret
	return hex.EncodeToString(b[:])
}

// recorder remembers the status and size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
