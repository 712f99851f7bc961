// Package httpserver serves an orgadmin.Service as the standard /v1 REST
// API, with its OpenAPI document at /docs/specs, plus an Admin's audit
// trail at /ext/audit/events (an extension outside /v1), the optional
// page-feedback endpoint and a health check. It mounts at the root, beside
// other routes or under a prefix, takes request ids from upstream, and
// measures itself when asked (Prometheus metrics, OpenTelemetry spans).
// The request id reaches the Service in the request's context
// (orgadmin.RequestIDKey), for the audit events of the changes it makes.
//
// Handlers are thin: decode the request, make one Service call with the
// request's bearer token (or the Caller a host's authentication hook
// gives), encode the answer. The Service decides every
// answer, in its order of checks; every error goes through one writer that
// maps the orgadmin error code to a status and the JSON envelope
// {"message", "code", "issues"}.
package httpserver

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin"
)

// DefaultMaxBodyBytes bounds request bodies; larger ones are a 400.
const DefaultMaxBodyBytes = 1 << 20

// Config configures a Handler. Zero values are the documented defaults.
type Config struct {
	// Logger receives the cause of every 5xx, and one line per request
	// unless RequestLog is set. Nil means slog.Default().
	Logger *slog.Logger
	// RequestLog, when not nil, receives the line of each request instead
	// of Logger, as LogRequestsTo writes it: a JSON object per line, at a
	// fraction of the cost of a line through slog.
	RequestLog io.Writer
	// DisableRequestLog turns the line per request off, for a host that
	// writes its own access log. The cause of every 5xx is still logged
	// to Logger.
	DisableRequestLog bool
	// MaxBodyBytes bounds request bodies. Zero means 1 MiB.
	MaxBodyBytes int64

	// Prefix is the path the Handler's routes are under, as requests
	// reach it: with "/admin" it serves /admin/v1/users and
	// /admin/docs/specs. Use it where the Handler is mounted without
	// stripping the prefix (chi's Mount, a ServeMux pattern "/admin/");
	// behind http.StripPrefix leave it empty, and at the root too. It
	// must be "" or a clean path that starts with "/" and does not end
	// with one, so "/" itself is refused (the root is ""); New panics
	// otherwise.
	Prefix string

	// RequestIDHeader names the request header a request's id is taken
	// from (an id a load balancer or a proxy gave it), and the response
	// header it is answered in. Empty means X-Request-Id. An absent,
	// repeated or invalid value (see ValidRequestID) gets a new id.
	RequestIDHeader string
	// RequestID, when not nil, returns the id of a request instead of
	// its RequestIDHeader: the id the host's own middleware gave it (chi's
	// middleware.GetReqID, say). An invalid or empty one gets a new id; a
	// function that returns "" takes no id from upstream at all.
	RequestID func(*http.Request) string

	// Authenticate, when not nil, is asked first who sends each /v1
	// request (and each of the audit trail): a host that knows its
	// callers (an SSO session, a client certificate, a gateway's header)
	// returns the orgadmin.Caller that Service.ActAs (or Authenticate)
	// gave it for that identity, and true. It returns false, and no error, to decline: the request's bearer
	// token is then checked as usual. An error ends the request: 401 when
	// it is an *orgadmin.Error of any code but INTERNAL_SERVER_ERROR and
	// CANCELED (the hook refuses the request: return
	// orgadmin.ErrUnauthorized, or ActAs's NOT_FOUND), 500 otherwise (the
	// hook failed: its cause is logged; 499 when the client hung up); the
	// bearer token is not tried. The Service
	// decides every operation of a Caller as of one that presented a
	// token, and refuses (401) a Caller it did not make (Caller{}): a hook
	// can never widen what its user may do. It must not
	// read the request's body.
	Authenticate func(r *http.Request) (c orgadmin.Caller, ok bool, err error)

	// Metrics, when not nil, receives the Handler's Prometheus metrics
	// (README, "Observability"); Handlers and Feedback handlers given one
	// registry share them. Nil means no metrics, at no cost.
	Metrics prometheus.Registerer
	// TracerProvider, when not nil, makes a server span of each request
	// (otelhttp), named after its route, with the request id as its
	// attribute orgadmin.request_id; a W3C traceparent header continues
	// the caller's trace. Nil means no tracing, at no cost.
	TracerProvider trace.TracerProvider
}

// requestIDHeader returns the canonical name of the request id's header.
func (c *Config) requestIDHeader() string {
	if c.RequestIDHeader == "" {
		return DefaultRequestIDHeader
	}
	return http.CanonicalHeaderKey(c.RequestIDHeader)
}

// Handler serves the /v1 API, and its OpenAPI document at GET /docs/specs
// (OpenAPIPath) without credentials, under Config.Prefix. Paths that
// match no route answer a plain-text 404, unclean paths (//v1/users,
// /v1/./users, /v1/x/../users) included; a known path with a wrong method
// answers 405 with an Allow header. (A ServeMux in front of the Handler
// redirects unclean paths to their clean form before the Handler sees
// them, which can lead a client to another route: see CleanPath.) Mount
// it at the root of a mux, at "/v1/" beside other routes
// (the document is then not served; serve OpenAPIHandler where you like),
// or under a prefix (README, "Mounting").
//
// A panic below the Handler (in the Service, the store or an
// authentication hook) is recovered: the client gets the 500 envelope,
// and the panic's value and stack go to Config.Logger as the request's
// internal error, so a middleware around the Handler does not see it (a
// value that holds a secret is logged with it). http.ErrAbortHandler goes
// on to net/http, as it is meant to.
type Handler struct {
	svc     *orgadmin.Service
	log     *slog.Logger
	maxBody int64
	authn   func(*http.Request) (orgadmin.Caller, bool, error)
	metrics *metrics
	next    http.Handler
}

// New returns the /v1 Handler of svc. It panics when svc is nil,
// cfg.Prefix is not a clean path, or cfg.Metrics holds other collectors of
// the names of the Handler's metrics.
func New(svc *orgadmin.Service, cfg Config) *Handler {
	if svc == nil {
		panic("httpserver: New: nil Service")
	}
	h := &Handler{svc: svc, log: cfg.Logger, maxBody: cfg.MaxBodyBytes, authn: cfg.Authenticate}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	switch p := cfg.Prefix; {
	case p == "/":
		panic(`httpserver: Config.Prefix "/": leave it "" to serve at the root`)
	case p != "" && (p[0] != '/' || path.Clean(p) != p):
		panic(fmt.Sprintf("httpserver: Config.Prefix %q is not a clean path starting with / and not ending with one", p))
	}
	if cfg.Metrics != nil {
		h.metrics = newMetrics(cfg.Metrics)
	}
	mux := http.NewServeMux()
	for _, rt := range h.routes() {
		method, p, _ := strings.Cut(rt.pattern, " ")
		mux.HandleFunc(method+" "+cfg.Prefix+p, func(w http.ResponseWriter, r *http.Request) {
			cred, scheme, err := h.authenticate(r)
			if err == nil {
				err = rt.serve(w, r, cred)
			}
			if h.metrics != nil && scheme != "" {
				h.metrics.authenticated(scheme, err)
			}
			if err != nil {
				writeError(w, r, h.log, err)
			}
		})
	}
	mux.Handle("GET "+cfg.Prefix+OpenAPIPath, &openAPIHandler{serverURL: cfg.Prefix, fromRequest: true})
	o := &observer{
		log: h.log, lines: cfg.RequestLog, noLines: cfg.DisableRequestLog,
		idHeader: cfg.requestIDHeader(), idOf: cfg.RequestID,
		metrics: h.metrics, tracing: cfg.TracerProvider != nil,
	}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A ServeMux would redirect an unclean path (//v1/users,
		// /v1/./users) to its clean form, with an HTML body: no route
		// has it, so it is a plain-text 404 like any other such path.
		if !CleanPath(r.URL.EscapedPath()) {
			http.NotFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
	h.next = o.handler(inner, cfg.TracerProvider)
	return h
}

// handler returns inner, observed by o, in the server span of an otelhttp
// handler when tp is not nil.
func (o *observer) handler(inner http.Handler, tp trace.TracerProvider) http.Handler {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { o.serve(w, r, inner) })
	if tp != nil {
		traced := otelhttp.NewHandler(h, "orgadmin",
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithMeterProvider(noop.NewMeterProvider()), // metrics are Prometheus's
			otelhttp.WithPropagators(propagation.TraceContext{}),
			otelhttp.WithSpanNameFormatter(spanName))
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			traced.ServeHTTP(w, withoutPattern(r))
		})
	}
	return h
}

// withoutPattern returns r without the pattern a router before the
// Handler matched it with ("/admin/", say): otelhttp would give the span
// that route, which is none of the Handler's. The Handler's own route, or
// none for a request it has no route for, is set by its observer.
func withoutPattern(r *http.Request) *http.Request {
	if r.Pattern == "" {
		return r
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.Pattern = ""
	return r2
}

// spanName names the server span of r: its method and route, as the
// request's observer labelled it, or its method alone before (otelhttp
// names a span when it starts it, and again at its end, when a router
// before it has set a pattern of its own).
func spanName(_ string, r *http.Request) string {
	if l, ok := otelhttp.LabelerFromContext(r.Context()); ok {
		for _, kv := range l.Get() {
			if kv.Key == semconv.HTTPRouteKey {
				return r.Method + " " + kv.Value.AsString()
			}
		}
	}
	return r.Method
}

// credential is what a request's operation is called with: the Caller
// the authentication hook gave, or the request's bearer token.
type credential struct {
	caller *orgadmin.Caller
	bearer orgadmin.Bearer
}

// auth returns c as the Service takes it. (Handlers call it where they
// call the Service: a token made an orgadmin.Auth anywhere else would be
// copied to the heap on every request.)
func (c credential) auth() orgadmin.Auth {
	if c.caller != nil {
		return *c.caller
	}
	return c.bearer
}

// authenticate returns the credential of r's operation, and its scheme:
// the Caller Config.Authenticate gives, or r's bearer token when there is
// no hook or it declines. A failing hook is an error, and no scheme
// when it is a 500.
func (h *Handler) authenticate(r *http.Request) (credential, string, error) {
	if h.authn != nil {
		c, ok, err := h.authn(r)
		switch code := orgadmin.ErrorCode(err); {
		case err == nil && ok:
			return credential{caller: &c}, schemeHook, nil
		case err == nil:
		case code == orgadmin.CodeInternal || code == orgadmin.CodeCanceled:
			if h.metrics != nil {
				h.metrics.hookFailed()
			}
			return credential{}, "", &orgadmin.Error{Code: code, Err: fmt.Errorf("authenticate hook: %w", err)}
		default:
			return credential{}, schemeHook, &orgadmin.Error{Code: orgadmin.CodeUnauthorized, Err: err}
		}
	}
	return credential{bearer: bearer(r)}, schemeBearer, nil
}

// CleanPath reports whether p, a request's escaped path
// (URL.EscapedPath), is absolute and in the form path.Clean gives it, a
// trailing slash allowed: no empty, "." or ".." element. (An escaped
// slash, %2F, is part of its element, as routing takes it.) The Handler
// answers any other path a plain-text 404. An http.ServeMux would
// redirect it to its clean form, keeping the method, before the Handler
// sees it, and a client that follows the redirect would act on another
// route (DELETE /v1/users/robot/tokens/.. on DELETE /v1/users/robot): a
// server that puts one in front of the Handler sends such requests to the
// Handler first (README, "Mounting").
func CleanPath(p string) bool {
	c := path.Clean(p)
	return p != "" && p[0] == '/' && (c == p || c+"/" == p)
}

// route is one operation of the API: its pattern, and the function that
// serves it with the request's credential (op): its answer written, or
// its error returned.
type route struct {
	pattern string
	serve   func(w http.ResponseWriter, r *http.Request, c credential) error
}

// op returns the function that serves the operation of handle, which
// decodes the request, calls the Service and returns the answer: the
// answer written as the JSON body of a 200, or handle's error. It is
// generic in the answer's type so that the answer is written from where
// handle returned it (an answer returned as an interface went to the
// heap, one allocation per request).
func op[A answer](handle func(w http.ResponseWriter, r *http.Request, c credential) (A, error)) func(http.ResponseWriter, *http.Request, credential) error {
	return func(w http.ResponseWriter, r *http.Request, c credential) error {
		a, err := handle(w, r, c)
		if err == nil {
			writeJSON(w, http.StatusOK, a)
		}
		return err
	}
}

// opReleased is op for an answer that holds an array to give back once
// it is written; handle gives it back itself when it fails.
func opReleased[A interface {
	answer
	releaser
}](handle func(w http.ResponseWriter, r *http.Request, c credential) (A, error)) func(http.ResponseWriter, *http.Request, credential) error {
	return func(w http.ResponseWriter, r *http.Request, c credential) error {
		a, err := handle(w, r, c)
		if err == nil {
			writeJSON(w, http.StatusOK, a)
			a.release()
		}
		return err
	}
}

// routes is the table of every /v1 operation, and of the extensions
// beside them (the audit trail).
func (h *Handler) routes() []route {
	return []route{
		{"GET /v1/users/{username}/instances", op(h.getInstanceConfig)},
		{"PUT /v1/users/{username}/instances", op(h.setInstanceConfig)},
		{"GET /v1/active_accounts", op(h.getActiveAccounts)},
		{"POST /v1/users", op(h.createServiceAccount)},
		{"GET /v1/users", opReleased(h.listUsers)},
		{"DELETE /v1/users/{username}", op(h.deleteUser)},
		{"POST /v1/users/{username}/tokens", op(h.createToken)},
		{"GET /v1/users/{username}/tokens", op(h.listTokens)},
		{"DELETE /v1/users/{username}/tokens/{token_id}", op(h.deleteToken)},
		{"POST /v1/dives/{dive_id}/embed-session", op(h.createEmbedSession)},
		{"GET " + AuditEventsPath, op(h.listAuditEvents)},
	}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.next.ServeHTTP(w, r)
}

// bearer returns the bearer token of the request's one Authorization
// header, "Bearer <token>" (the scheme is case-insensitive), as the
// credential of a Service call; "" for a missing, repeated or malformed
// header, which the Service refuses as it refuses an unknown token.
func bearer(r *http.Request) orgadmin.Bearer {
	auth := r.Header.Values("Authorization")
	if len(auth) != 1 {
		return ""
	}
	const scheme = "bearer"
	h := auth[0]
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) || h[len(scheme)] != ' ' {
		return ""
	}
	tok := strings.Trim(h[len(scheme):], " ")
	if strings.ContainsAny(tok, " \t") {
		return ""
	}
	return orgadmin.Bearer(tok)
}

// errorBody is the JSON envelope of every error.
type errorBody struct {
	Message string
	Code    orgadmin.Code
	// Issues are written when not nil, even empty.
	Issues []orgadmin.Issue
}

func (e errorBody) appendJSON(b []byte) []byte {
	b = appendField(append(b, '{'), "message", e.Message)
	b = appendField(b, "code", string(e.Code))
	if e.Issues != nil {
		b = appendArray(appendKey(b, "issues"), e.Issues, appendIssue)
	}
	return append(b, '}')
}

func appendIssue(b []byte, is orgadmin.Issue) []byte {
	b = appendField(append(b, '{'), "message", is.Message)
	b = appendArray(appendKey(b, "path"), is.Path, appendPathElem)
	return append(appendField(b, "code", string(is.Code)), '}')
}

// appendPathElem appends an element of an issue's path: a key (a string)
// or an index (a number).
func appendPathElem(b []byte, p orgadmin.PathElem) []byte {
	if i, ok := p.Index(); ok {
		return strconv.AppendInt(b, int64(i), 10)
	}
	k, _ := p.Key()
	return appendString(b, k)
}

// StatusClientClosedRequest is the status of a request whose client hung
// up before the answer (nginx's 499): it shows in the request's log line,
// and the client, gone, never reads it.
const StatusClientClosedRequest = 499

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
	case orgadmin.CodeCanceled:
		return StatusClientClosedRequest
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
	var e *orgadmin.Error
	if errors.As(err, &e) && code != orgadmin.CodeInternal {
		body.Issues = e.Issues
	}
	if code == orgadmin.CodeBadRequest && body.Issues == nil {
		body.Issues = []orgadmin.Issue{}
	}
	status := statusOf(code)
	if status >= 500 {
		log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", RequestID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", requestPath(r)),
			slog.String("error", err.Error()))
	}
	if code == orgadmin.CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orgadmin"`)
	}
	writeJSON(w, status, body)
}

// Health returns a handler answering GET and HEAD with 200
// {"status":"ok"} while the store answers and 503 {"status":"unavailable"}
// otherwise; any other method is a 405 with an Allow header. It panics
// when svc is nil.
func Health(svc *orgadmin.Service) http.Handler {
	if svc == nil {
		panic("httpserver: Health: nil Service")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := svc.Ping(r.Context()); err != nil {
			status := http.StatusServiceUnavailable
			if orgadmin.ErrorCode(err) == orgadmin.CodeCanceled {
				status = StatusClientClosedRequest // the client hung up, not the store
			}
			writeJSON(w, status, healthAnswer("unavailable"))
			return
		}
		writeJSON(w, http.StatusOK, healthAnswer("ok"))
	})
}

// healthAnswer is the answer of the health check: {"status"}.
type healthAnswer string

func (s healthAnswer) appendJSON(b []byte) []byte {
	return append(appendField(append(b, '{'), "status", string(s)), '}')
}
