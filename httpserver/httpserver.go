// Package httpserver serves an orgadmin.Service as the standard /v1 REST
// API, with its OpenAPI document at /docs/specs, plus the optional
// page-feedback endpoint and a health check.
//
// Handlers are thin: decode the request, make one Service call with the
// request's bearer token, encode the answer. The Service decides every
// answer, in its order of checks; every error goes through one writer that
// maps the orgadmin error code to a status and the JSON envelope
// {"message", "code", "issues"}.
package httpserver

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

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
	// MaxBodyBytes bounds request bodies. Zero means 1 MiB.
	MaxBodyBytes int64
}

// Handler serves the /v1 API, and its OpenAPI document at GET /docs/specs
// (OpenAPIPath) without credentials. Paths that match no route answer a
// plain-text 404, unclean paths (//v1/users, /v1/./users, /v1/x/../users)
// included; a known path with a wrong method answers 405 with an Allow
// header. (A ServeMux in front of the Handler redirects unclean paths to
// their clean form before the Handler sees them.) Mount it at the root of
// a mux, or at "/v1/" beside other routes (the document is then not
// served; serve OpenAPI() where you like).
type Handler struct {
	svc     *orgadmin.Service
	log     *slog.Logger
	maxBody int64
	next    http.Handler
}

// New returns the /v1 Handler of svc.
func New(svc *orgadmin.Service, cfg Config) *Handler {
	h := &Handler{svc: svc, log: cfg.Logger, maxBody: cfg.MaxBodyBytes}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	mux := http.NewServeMux()
	for _, rt := range h.routes() {
		mux.HandleFunc(rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			a, err := rt.handle(w, r)
			if err != nil {
				writeError(w, r, h.log, err)
				return
			}
			writeJSON(w, http.StatusOK, a)
		})
	}
	mux.HandleFunc("GET "+OpenAPIPath, serveOpenAPI)
	h.next = LogRequestsTo(cfg.RequestLog, h.log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A ServeMux would redirect an unclean path (//v1/users,
		// /v1/./users) to its clean form, with an HTML body: no route
		// has it, so it is a plain-text 404 like any other such path.
		if !CleanPath(r.URL.EscapedPath()) {
			http.NotFound(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	return h
}

// CleanPath reports whether p, a request's escaped path
// (URL.EscapedPath), is absolute and in the form path.Clean gives it, a
// trailing slash allowed: no empty, "." or ".." element. (An escaped
// slash, %2F, is part of its element, as routing takes it.) The Handler
// answers any other path a plain-text 404. An http.ServeMux would
// redirect it to its clean form before the Handler sees it: a server that
// puts one in front of the Handler sends such requests to the Handler
// first (see examples/server) to answer them alike.
func CleanPath(p string) bool {
	c := path.Clean(p)
	return p != "" && p[0] == '/' && (c == p || c+"/" == p)
}

// route is one operation of the API: its pattern, and the function that
// decodes its request, calls the Service and returns the answer.
type route struct {
	pattern string
	handle  func(w http.ResponseWriter, r *http.Request) (answer, error)
}

// routes is the table of every /v1 operation.
func (h *Handler) routes() []route {
	return []route{
		{"GET /v1/users/{username}/instances", h.getInstanceConfig},
		{"PUT /v1/users/{username}/instances", h.setInstanceConfig},
		{"GET /v1/active_accounts", h.getActiveAccounts},
		{"POST /v1/users", h.createServiceAccount},
		{"GET /v1/users", h.listUsers},
		{"DELETE /v1/users/{username}", h.deleteUser},
		{"POST /v1/users/{username}/tokens", h.createToken},
		{"GET /v1/users/{username}/tokens", h.listTokens},
		{"DELETE /v1/users/{username}/tokens/{token_id}", h.deleteToken},
		{"POST /v1/dives/{dive_id}/embed-session", h.createEmbedSession},
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
			slog.String("path", r.URL.EscapedPath()),
			slog.String("error", err.Error()))
	}
	if code == orgadmin.CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="orgadmin"`)
	}
	writeJSON(w, status, body)
}

// Health returns a handler answering GET and HEAD with 200
// {"status":"ok"} while the store answers and 503 {"status":"unavailable"}
// otherwise; any other method is a 405 with an Allow header.
func Health(svc *orgadmin.Service) http.Handler {
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
