package httpserver

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"
)

// LogRequests gives each request an id (in the X-Request-Id response header
// and RequestID of its context) and logs one line per request: method,
// path, status, bytes, duration, request id and remote address. It never
// logs headers, query strings or bodies, so no token value reaches a log.
// A request that already has an id (an outer LogRequests) is passed
// through without a second line. A panic below it is answered 500, and
// its cause logged to log.
func LogRequests(log *slog.Logger, next http.Handler) http.Handler {
	return LogRequestsTo(nil, log, next)
}

// LogRequestsTo is LogRequests with the request lines written to w
// instead of going through log, when w is not nil: each line is the JSON
// object slog.JSONHandler writes for it ({"time", "level":"INFO",
// "msg":"request", "request_id", ...}), in one call of w.Write, with no
// level to filter it. It costs a fraction of a line through slog
// (BENCHMARKS.md, "The request line"). w must take writes from many
// goroutines at once, as an *os.File does. A nil log means slog.Default().
func LogRequestsTo(w io.Writer, log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" {
			next.ServeHTTP(rw, r)
			return
		}
		st := &requestState{
			recorder: recorder{ResponseWriter: rw, status: http.StatusOK},
			ctx:      idContext{Context: r.Context(), id: newRequestID()},
		}
		id, rec := st.ctx.id, &st.recorder
		st.idHeader[0] = id
		rw.Header()["X-Request-Id"] = st.idHeader[:]
		r = r.WithContext(&st.ctx)
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
			line := requestLine{
				id: id, method: r.Method, path: r.URL.EscapedPath(), remote: r.RemoteAddr,
				status: rec.status, bytes: rec.bytes, start: start,
			}
			if w != nil {
				line.write(w)
			} else {
				line.log(r.Context(), log)
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// requestState is what LogRequestsTo keeps of a request while it is
// served, in one allocation.
type requestState struct {
	recorder
	ctx      idContext
	idHeader [1]string // the X-Request-Id header's value
}

// idContext is the context of a request with its id, which RequestID
// finds.
type idContext struct {
	context.Context
	id string
}

func (c *idContext) Value(key any) any {
	if key == (ctxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// ctxKey is the key RequestID asks a context's Value for.
type ctxKey struct{}

// RequestID returns the id LogRequests gave the request of ctx, or "".
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(ctxKey{}).(*idContext); ok {
		return c.id
	}
	return ""
}

// requestLine is what the line of a request says.
type requestLine struct {
	id, method, path, remote string
	status                   int
	bytes                    int64
	start                    time.Time
}

// log hands the line to log's handler, at level Info.
func (l requestLine) log(ctx context.Context, log *slog.Logger) {
	// Straight to the handler: Logger.LogAttrs would also look up the
	// caller's source position, which is always this line.
	h := log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	end := time.Now()
	rec := slog.NewRecord(end, slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("request_id", l.id),
		slog.String("method", l.method),
		slog.String("path", l.path),
		slog.Int("status", l.status),
		slog.Int64("bytes", l.bytes),
		slog.Duration("duration", end.Sub(l.start)),
		slog.String("remote", l.remote))
	_ = h.Handle(ctx, rec) // nowhere to report a failing log
}

// write writes the line to w as slog.JSONHandler would write the record of
// log, with the functions every answer is written with.
func (l requestLine) write(w io.Writer) {
	buf := answerBufs.Get().(*[]byte)
	b := l.appendJSON((*buf)[:0], time.Now())
	_, _ = w.Write(b) // nowhere to report a failing log
	if cap(b) <= maxPooledAnswer {
		*buf = b
		answerBufs.Put(buf)
	}
}

// appendJSON appends the line, ended at end, and its newline.
func (l requestLine) appendJSON(b []byte, end time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = append(end.Round(0).AppendFormat(b, time.RFC3339Nano), `","level":"INFO","msg":"request"`...)
	b = appendField(b, "request_id", l.id)
	b = appendField(b, "method", l.method)
	b = appendField(b, "path", l.path)
	b = appendInt(b, "status", l.status)
	b = strconv.AppendInt(appendKey(b, "bytes"), l.bytes, 10)
	b = strconv.AppendInt(appendKey(b, "duration"), int64(end.Sub(l.start)), 10)
	b = appendField(b, "remote", l.remote)
	return append(b, '}', '\n')
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
