package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// The error codes of the API, the Code of an *Error.
const (
	CodeBadRequest      = "BAD_REQUEST"
	CodeUnauthorized    = "UNAUTHORIZED"
	CodeForbidden       = "FORBIDDEN"
	CodeNotFound        = "NOT_FOUND"
	CodeTooManyRequests = "TOO_MANY_REQUESTS"
	CodeInternal        = "INTERNAL_SERVER_ERROR"
)

// Error is an answer of the API other than 200. Get at it with errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == client.CodeNotFound { ... }
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the error code of the JSON envelope (see the Code
	// constants), or "" when the body was not one, as for the plain-text
	// 404 of a path that matches no route.
	Code string
	// Message is the message of the envelope, or else the start of the
	// body, or else the status text.
	Message string
	// Issues lists what was wrong with the request; every 400 has at least
	// one.
	Issues []Issue
	// RetryAfter is the wait the server asked for with Retry-After, or -1
	// when it asked for none.
	RetryAfter time.Duration
	// RequestID is the X-Request-Id the server gave the request, for its
	// logs.
	RequestID string
}

// Issue is one problem with a request.
type Issue struct {
	// Message says what is wrong.
	Message string `json:"message"`
	// Path locates the offending field: object keys as strings, array
	// indexes as float64 (as encoding/json decodes numbers). It is empty
	// for the request as a whole.
	Path []any `json:"path"`
	// Code is a machine-readable kind such as "too_big" or
	// "already_exists".
	Code string `json:"code"`
}

// Error implements error: "orgadmin: 400 BAD_REQUEST: Bad Request:
// username: Username is already taken".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "orgadmin: %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	for i, is := range e.Issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if len(is.Path) > 0 {
			parts := make([]string, len(is.Path))
			for j, p := range is.Path {
				parts[j] = fmt.Sprint(p)
			}
			b.WriteString(strings.Join(parts, ".") + ": ")
		}
		b.WriteString(is.Message)
	}
	return b.String()
}

// maxPlainMessage bounds the Message taken from a body that is not the
// JSON envelope.
const maxPlainMessage = 200

// newError reads the error answer res with body raw.
func newError(res *http.Response, raw []byte) *Error {
	e := &Error{
		StatusCode: res.StatusCode,
		RetryAfter: parseRetryAfter(res.Header.Get("Retry-After"), time.Now()),
		RequestID:  res.Header.Get("X-Request-Id"),
	}
	var env struct {
		Message string  `json:"message"`
		Code    string  `json:"code"`
		Issues  []Issue `json:"issues"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Code != "" {
		e.Code, e.Message, e.Issues = env.Code, env.Message, env.Issues
		return e
	}
	msg := strings.TrimSpace(string(raw))
	if len(msg) > maxPlainMessage {
		msg = msg[:maxPlainMessage]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	if msg == "" || !utf8.ValidString(msg) {
		msg = http.StatusText(res.StatusCode)
	}
	e.Message = msg
	return e
}
