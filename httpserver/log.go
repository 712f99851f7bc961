package httpserver

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin"
)

// LogRequests gives each request an id (in the X-Request-Id response header
// and RequestID of its context) and logs one line per request: method,
// path, status, bytes, duration, request id and remote address. It never
// logs headers, query strings or bodies, so no token value reaches a log.
// The id is the request's X-Request-Id header when it is a valid id
// (ValidRequestID), as a load balancer or an outer middleware sets it, and
// a new one otherwise. A request that already has an id (an outer
// LogRequests) is passed through without a second line. A panic below it
// is answered 500, and its cause logged to log. The line of a 5xx is
// logged at level Error, every other at Info.
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
	o := &observer{log: log, lines: w, idHeader: DefaultRequestIDHeader}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { o.serve(rw, r, next) })
}

// DefaultRequestIDHeader is the header a request's id is taken from, and
// answered in, unless Config.RequestIDHeader names another.
const DefaultRequestIDHeader = "X-Request-Id"

// MaxRequestIDLen bounds the length of an id taken from a request.
const MaxRequestIDLen = 128

// ValidRequestID reports whether id may be a request's id as given from
// upstream: 1 to MaxRequestIDLen bytes, each an ASCII letter or digit or
// one of - _ . ~ : / + = @ ; (what UUIDs, chi's ids and tracing headers
// are made of). Anything else (spaces, quotes, control characters,
// non-ASCII) could forge a log line or a header: such an id is replaced
// by a new one.
func ValidRequestID(id string) bool {
	if len(id) == 0 || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		switch c {
		case '-', '_', '.', '~', ':', '/', '+', '=', '@', ';':
		default:
			return false
		}
	}
	return true
}

// observer is what is done around each request: its id, its log line,
// its metrics and the attributes of its span.
type observer struct {
	log *slog.Logger
	// lines, when not nil, receives the request lines instead of log.
	lines io.Writer
	// noLines turns the request lines off.
	noLines bool
	// idHeader is the canonical name of the request id's header.
	idHeader string
	// idOf, when not nil, gives a request's id instead of idHeader.
	idOf func(*http.Request) string
	// metrics, when not nil, are the request metrics.
	metrics *metrics
	// tracing says whether the request's span is to be named and given
	// attributes.
	tracing bool
}

// requestID returns the id of r: from upstream when valid, else new.
func (o *observer) requestID(r *http.Request) string {
	var id string
	if o.idOf != nil {
		id = o.idOf(r)
	} else if v := r.Header[o.idHeader]; len(v) == 1 {
		id = v[0]
	}
	if ValidRequestID(id) {
		return id
	}
	return newRequestID()
}

// serve serves r with next, observed. Below an outer LogRequests, which
// gave the id and writes the line, it only measures, when it has to.
func (o *observer) serve(rw http.ResponseWriter, r *http.Request, next http.Handler) {
	outer, _ := r.Context().Value(ctxKey{}).(*idContext)
	lines := !o.noLines
	if outer != nil && outer.logged {
		if o.metrics == nil && !o.tracing {
			next.ServeHTTP(rw, r)
			return
		}
		lines = false
	}
	st := &requestState{recorder: recorder{ResponseWriter: rw, status: http.StatusOK}}
	if outer != nil {
		// AssignRequestID's or an outer LogRequests' id, in its header.
		st.ctx = idContext{Context: r.Context(), id: outer.id, logged: outer.logged || lines}
	} else {
		st.ctx = idContext{Context: r.Context(), id: o.requestID(r), logged: lines}
		st.idHeader[0] = st.ctx.id
		rw.Header()[o.idHeader] = st.idHeader[:]
	}
	id, rec := st.ctx.id, &st.recorder
	r = r.WithContext(&st.ctx)
	r.Pattern = "" // a router's before, not a route of the Handler
	var span trace.Span
	if o.tracing {
		span = trace.SpanFromContext(r.Context())
		span.SetAttributes(attribute.String(RequestIDAttribute, id))
	}
	if o.metrics != nil {
		o.metrics.begin(r.Method)
	}
	start := time.Now()
	measured := func() {
		if o.metrics == nil && span == nil {
			return
		}
		route := routeOf(r.Pattern)
		if o.metrics != nil {
			o.metrics.end(r.Method, route, rec.status, time.Since(start))
		}
		if span != nil && route != "" {
			span.SetName(r.Method + " " + route)
			span.SetAttributes(semconv.HTTPRoute(route))
			if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
				l.Add(semconv.HTTPRoute(route)) // for spanName
			}
		}
	}
	defer func() {
		// A panic is a bug; the client still gets the JSON envelope.
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				// The request ends here too: out of the gauge, into the
				// histogram, before the abort goes on to net/http.
				measured()
				panic(v)
			}
			if !rec.wrote {
				writeError(rec, r, o.log, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
			}
		}
		measured()
		if !lines {
			return
		}
		line := requestLine{
			id: id, method: r.Method, path: requestPath(r), remote: r.RemoteAddr,
			status: rec.status, bytes: rec.bytes, start: start,
		}
		if r.Method == http.MethodHead {
			line.bytes = 0 // net/http sends no body, whatever was written
		}
		if o.lines != nil {
			line.write(o.lines)
		} else {
			line.log(r.Context(), o.log)
		}
	}()
	next.ServeHTTP(rec, r)
}

// RequestIDAttribute is the attribute of a request's span that holds its
// id.
const RequestIDAttribute = "orgadmin.request_id"

// routeOf returns the path of a ServeMux pattern ("GET /v1/users/{username}"
// gives "/v1/users/{username}"): the route of a request, never its
// path, so that usernames do not become labels. "" for no route.
func routeOf(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		return pattern[i+1:]
	}
	return pattern
}

// requestPath returns the escaped path of r as the client sent it: an
// http.StripPrefix or a router's mount before the Handler leaves
// RequestURI as it was, in its origin form (/admin/v1/users) or its
// absolute form (http://host/admin/v1/users, as sent to a proxy). The
// query is left out. A request without a RequestURI (one made by
// http.NewRequest and served directly) has only its URL's path.
func requestPath(r *http.Request) string {
	u := r.RequestURI
	if !strings.HasPrefix(u, "/") {
		if abs, err := url.ParseRequestURI(u); err == nil && abs.Scheme != "" {
			return cmp.Or(abs.EscapedPath(), "/")
		}
		return r.URL.EscapedPath()
	}
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	return u
}

// AssignRequestID returns next with each request given its id as a
// Handler of cfg would give it (Config.RequestIDHeader,
// Config.RequestID): in RequestID of its context and in the response
// header. Put it in front of the host's own middleware so that they see
// the id; a Handler, LogRequests or Feedback handler below it keeps that
// id and still writes the request's line.
func AssignRequestID(cfg Config, next http.Handler) http.Handler {
	o := &observer{idHeader: cfg.requestIDHeader(), idOf: cfg.RequestID}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if RequestID(r.Context()) != "" {
			next.ServeHTTP(rw, r)
			return
		}
		c := &idContext{Context: r.Context(), id: o.requestID(r)}
		rw.Header()[o.idHeader] = []string{c.id}
		next.ServeHTTP(rw, r.WithContext(c))
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
	// logged says that the request's line is written where the id was
	// given: an inner LogRequests writes none.
	logged bool
}

func (c *idContext) Value(key any) any {
	switch key {
	case ctxKey{}:
		return c
	case orgadmin.RequestIDKey:
		return c.id
	}
	return c.Context.Value(key)
}

// ctxKey is the key RequestID asks a context's Value for.
type ctxKey struct{}

// RequestID returns the id a Handler, LogRequests or AssignRequestID gave
// the request of ctx, or "".
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

// level is the level of the line: Error for a 5xx, Info otherwise.
func (l requestLine) level() slog.Level {
	if l.status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// log hands the line to log's handler, at its level.
func (l requestLine) log(ctx context.Context, log *slog.Logger) {
	// Straight to the handler: Logger.LogAttrs would also look up the
	// caller's source position, which is always this line.
	h := log.Handler()
	level := l.level()
	if !h.Enabled(ctx, level) {
		return
	}
	end := time.Now()
	rec := slog.NewRecord(end, level, "request", 0)
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
	b = append(end.Round(0).AppendFormat(b, time.RFC3339Nano), `","level":"`...)
	b = append(append(b, l.level().String()...), `","msg":"request"`...)
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
	// headerValues hold the values of the headers of a JSON answer
	// (writeJSON).
	headerValues [3]string
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
