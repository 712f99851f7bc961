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

	"github.com/orgadmin/orgadmin/internal/jsonlog"
)

// LogRequests gives each request an id (in the X-Request-Id response header
// and RequestID of its context) and logs one line per request: method,
// path, status, bytes, duration, request id and remote address. It never
// logs headers, query strings or bodies, so no token value reaches a log.
// A request that already has an id (an outer LogRequests) is passed
// through without a second line.
func LogRequests(log *slog.Logger, next http.Handler) http.Handler {
	return logRequests(log, next, true)
}

// logRequests is LogRequests. With inContext false, the id is not put in
// the request's context, which spares a copy of every request: for
// handlers of this package, which find it with requestID.
func logRequests(log *slog.Logger, next http.Handler, inContext bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" {
			next.ServeHTTP(w, r)
			return
		}
		// One allocation holds the recorder and the id, and is the
		// context's value (a pointer, which needs no boxing).
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		rec.id[0] = newRequestID()
		id := rec.id[0]
		w.Header()["X-Request-Id"] = rec.id[:]
		if inContext {
			r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, rec))
		}
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
			// Straight to the handler: Logger.LogAttrs would also walk the
			// stack for a source position, which is always this line.
			// The end, from the monotonic clock alone: time.Since reads
			// one clock where time.Now reads two (about 95 ns here).
			end := start.Add(time.Since(start))
			h := log.Handler()
			if !h.Enabled(r.Context(), slog.LevelInfo) {
				return
			}
			line := jsonlog.Request{
				Time: end, ID: id, Method: r.Method, Path: r.URL.EscapedPath(),
				Status: rec.status, Bytes: rec.bytes, Duration: end.Sub(start), Remote: r.RemoteAddr,
			}
			// Nowhere to report a failing log. The example server's
			// handler writes the line without building the record.
			if jh, ok := h.(*jsonlog.Handler); ok {
				_ = jh.LogRequest(r.Context(), line)
			} else {
				_ = h.Handle(r.Context(), line.Record())
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// newRequestID returns 16 hex digits from the runtime's generator
// (ChaCha8, seeded by the system): an id tells requests apart and is no
// secret, and crypto/rand took four times as long, on every request.
func newRequestID() string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64()) // #nosec G404 -- an id, not a secret
	return hex.EncodeToString(b[:])
}

// recorder remembers the status and size of a response, and the request's
// id (an array of one, which is also the X-Request-Id header's value).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	wrote  bool
	id     [1]string
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
