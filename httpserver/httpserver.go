// Package httpserver serves an orgadmin.Service as the standard /v1 REST
// API, with its OpenAPI document at /docs/specs, plus the optional
// page-feedback endpoint and a health check.
//
// Handlers are thin: decode the request, make one Service call, encode the
// answer. Every error goes through one writer that maps the orgadmin error
// code to a status and the JSON envelope {"message", "code", "issues"}.
package httpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/bounded"
)

// DefaultMaxBodyBytes bounds request bodies; larger ones are a 400.
const DefaultMaxBodyBytes = 1 << 20

// Config configures a Handler. Zero values are the documented defaults.
type Config struct {
	// Logger receives one line per request and the cause of every 5xx. Nil
	// means slog.Default(). The Handler gives each request an id, in the
	// X-Request-Id header and in both lines, but not in the context it
	// passes to the Service (that would copy every request); to have it
	// there, wrap the Handler in LogRequests, whose id it then uses.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies. Zero means 1 MiB.
	MaxBodyBytes int64
}

// Handler serves the /v1 API, and its OpenAPI document at GET /docs/specs
// (OpenAPIPath) without credentials. Paths that match no route answer a
// plain-text 404; a known path with a wrong method answers 405 with an Allow
// header. Mount it at the root of a mux, or at "/v1/" beside other routes
// (the document is then not served; serve OpenAPI() where you like).
type Handler struct {
	svc     *orgadmin.Service
	log     *slog.Logger
	maxBody int64
	mux     *http.ServeMux
	// userRoutes are the routes of the table ServeHTTP finds without the
	// ServeMux (see userRoute).
	userRoutes []userRoute
	next       http.Handler
	// listings are encoded token listings, by version (see listTokens),
	// and keptStamp is h.keptStampOf.
	listings  bounded.Map[uint64, keptListing]
	keptStamp func(version uint64) (orgadmin.ListingStamp, bool)
}

// New returns the /v1 Handler of svc.
func New(svc *orgadmin.Service, cfg Config) *Handler {
	h := &Handler{svc: svc, log: cfg.Logger, maxBody: cfg.MaxBodyBytes, mux: http.NewServeMux()}
	h.listings.Max = maxKeptListings
	h.keptStamp = h.keptStampOf
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	for _, rt := range h.routes() {
		if rt.public != nil {
			h.mux.Handle(rt.pattern, rt.public)
			continue
		}
		fn := rt.handleToken
		if fn == nil {
			fn = h.authenticated(rt.handle)
		}
		h.mux.Handle(rt.pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.serve(w, r, pathParamsOf(r), fn)
		}))
		if ur, ok := userRouteOf(rt.pattern, fn); ok {
			h.userRoutes = append(h.userRoutes, ur)
		}
	}
	h.next = logRequests(h.log, http.HandlerFunc(h.route), false)
	return h
}

// tokenFunc runs an operation for the bearer token token, with the
// wildcards p of its route's path, and returns its answer.
type tokenFunc func(w http.ResponseWriter, r *http.Request, token string, p pathParams) (any, error)

// route is one operation of the API (handle, which runs for an
// authenticated caller, or handleToken, which authenticates the bearer
// token itself), or a public resource (public, which needs no credential).
type route struct {
	pattern     string
	handle      func(w http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error)
	handleToken tokenFunc
	public      http.Handler
}

// pathParams are the wildcards of a route's path; those it does not have
// are empty.
type pathParams struct{ username, tokenID, diveID string }

func pathParamsOf(r *http.Request) pathParams {
	return pathParams{username: r.PathValue("username"), tokenID: r.PathValue("token_id"), diveID: r.PathValue("dive_id")}
}

// routes is the table of every /v1 operation and of the OpenAPI document.
func (h *Handler) routes() []route {
	return []route{
		{pattern: "GET /v1/users/{username}/instances", handle: h.getInstanceConfig},
		{pattern: "PUT /v1/users/{username}/instances", handle: h.setInstanceConfig},
		{pattern: "GET /v1/active_accounts", handle: h.getActiveAccounts},
		{pattern: "POST /v1/users", handle: h.createServiceAccount},
		{pattern: "GET /v1/users", handle: h.listUsers},
		{pattern: "DELETE /v1/users/{username}", handle: h.deleteUser},
		{pattern: "POST /v1/users/{username}/tokens", handle: h.createToken},
		{pattern: "GET /v1/users/{username}/tokens", handleToken: h.listTokens},
		{pattern: "DELETE /v1/users/{username}/tokens/{token_id}", handle: h.deleteToken},
		{pattern: "POST /v1/dives/{dive_id}/embed-session", handle: h.createEmbedSession},
		{pattern: "GET " + OpenAPIPath, public: http.HandlerFunc(serveOpenAPI)},
	}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.next.ServeHTTP(w, r)
}

// route sends a request to its route: the commonest ones without the
// ServeMux (userRoute), every other through it.
func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	if ur, username := h.userRoute(r); ur != nil {
		r.Pattern = ur.pattern
		h.serve(w, r, pathParams{username: username}, ur.fn)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// serve takes the bearer token from the request's one Authorization
// header, then runs fn and writes its answer as a 200 JSON object, or its
// error. A missing or malformed header is UNAUTHORIZED.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, p pathParams, fn tokenFunc) {
	// The key is in canonical form: one map lookup, no canonicalising.
	auth := r.Header["Authorization"]
	tok, ok := "", len(auth) == 1
	if ok {
		tok, ok = orgadmin.BearerToken(auth[0])
	}
	if !ok {
		writeError(w, r, h.log, orgadmin.ErrUnauthorized)
		return
	}
	v, err := fn(w, r, tok, p)
	if err != nil {
		writeError(w, r, h.log, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// authenticated resolves the bearer token to its caller, then runs fn.
func (h *Handler) authenticated(fn func(http.ResponseWriter, *http.Request, orgadmin.Caller, pathParams) (any, error)) tokenFunc {
	return func(w http.ResponseWriter, r *http.Request, tok string, p pathParams) (any, error) {
		c, err := h.svc.Authenticate(r.Context(), tok)
		if err != nil {
			return nil, err
		}
		return fn(w, r, c, p)
	}
}

// Header values every JSON answer carries. They are assigned to the header
// map directly: each is a slice of capacity one, which Header.Add copies
// before appending and Header.Set replaces, so answers that add or set
// these headers, at once, change only their own (TestAnswerHeadersStayShared,
// under -race). Only writing into the slice itself would change them for
// all; nothing here or in net/http does.
var (
	jsonContentType = []string{"application/json"}
	noStore         = []string{"no-store"}
)

// answerBufs holds the buffers of answers that write their own JSON, so
// the commonest answers are encoded without allocating.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxPooledAnswer bounds the buffers answerBufs keeps; a larger answer's
// buffer is left to the garbage collector.
const maxPooledAnswer = 64 << 10

// netHTTPBuffered is the size of the buffer net/http's server holds an
// answer in: when the whole answer fits, it sends the Content-Length
// itself. A longer answer says its length here, or it would go chunked.
const netHTTPBuffered = 2048

// writeJSON writes v as the JSON body of a response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Cache-Control"] = noStore
	switch a := v.(type) {
	case encodedJSON:
		writeBody(w, h, status, a)
	case jsonAppender:
		buf := answerBufs.Get().(*[]byte)
		b := append(a.appendJSON((*buf)[:0]), '\n')
		writeBody(w, h, status, b)
		if cap(b) <= maxPooledAnswer {
			*buf = b
			answerBufs.Put(buf)
		}
	default:
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v) // the client went away; nothing to do
	}
}

// writeBody writes the status and b, saying its length where net/http
// would not.
func writeBody(w http.ResponseWriter, h http.Header, status int, b []byte) {
	if len(b) > netHTTPBuffered {
		h["Content-Length"] = []string{strconv.Itoa(len(b))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client went away; nothing to do
}

// errorBody is the JSON envelope of every error.
type errorBody struct {
	Message string           `json:"message"`
	Code    orgadmin.Code    `json:"code"`
	Issues  []orgadmin.Issue `json:"issues,omitempty"`
}

// statusOf maps an error code to its HTTP status.
func statusOf(c orgadmin.Code) int {
	switch c {
	case orgadmin.CodeBadRequest:
		return http.StatusBadRequest
	case orgadmin.CodeUnauthorized:
		return http.StatusUnauthorized
	case orgadmin.CodeForbidden:
		return http.StatusForbidden
	case orgadmin.CodeNotFound:
		return http.StatusNotFound
	case orgadmin.CodeTooManyRequests:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// writeError writes err as the JSON error envelope. An internal error is
// logged with its cause and the request id; its body says only
// "Internal Error".
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := orgadmin.ErrorCode(err)
	body := errorBody{Message: code.Message(), Code: code}
	if e, ok := err.(*orgadmin.Error); ok && code != orgadmin.CodeInternal {
		body.Issues = e.Issues
	}
	if code == orgadmin.CodeBadRequest && body.Issues == nil {
		body.Issues = []orgadmin.Issue{}
	}
	status := statusOf(code)
	if status >= 500 {
		log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", requestID(w, r)),
			slog.String("method", r.Method),
			slog.String("path", r.URL.EscapedPath()),
			slog.String("error", err.Error()))
	}
	if code == orgadmin.CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orgadmin"`)
	}
	writeJSON(w, status, body)
}

// Health returns a handler answering 200 {"status":"ok"} while the store
// answers and 503 {"status":"unavailable"} otherwise.
func Health(svc *orgadmin.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := svc.Ping(r.Context()); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

type ctxKey struct{}

// RequestID returns the id LogRequests gave the request of ctx, or "".
func RequestID(ctx context.Context) string {
	if rec, ok := ctx.Value(ctxKey{}).(*recorder); ok {
		return rec.id[0]
	}
	return ""
}

// requestID returns the id of a request that this package's handlers
// answer with w: from its context, or from w, the recorder of a
// logRequests that kept it out of the context.
func requestID(w http.ResponseWriter, r *http.Request) string {
	if id := RequestID(r.Context()); id != "" {
		return id
	}
	if rec, ok := w.(*recorder); ok {
		return rec.id[0]
	}
	return ""
}
