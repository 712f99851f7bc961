package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orgadmin/orgadmin"
)

// Code is the error code of an answer: the orgadmin package's type, so
// that both sides of the wire share one set of constants.
type Code = orgadmin.Code

// The error codes of the API, the Code of an *Error.
const (
	CodeBadRequest      = orgadmin.CodeBadRequest
	CodeUnauthorized    = orgadmin.CodeUnauthorized
	CodeForbidden       = orgadmin.CodeForbidden
	CodeNotFound        = orgadmin.CodeNotFound
	CodeTooManyRequests = orgadmin.CodeTooManyRequests
	CodeInternal        = orgadmin.CodeInternal
)

// Issue is one problem with a request, as the server reports it: the
// orgadmin package's type. Its Path holds keys and indexes
// (orgadmin.PathElem), and Path.String() joins them with dots.
type Issue = orgadmin.Issue

// IssueCode is the machine-readable kind of an Issue.
type IssueCode = orgadmin.IssueCode

// The issue codes, the same constants as the orgadmin package's.
const (
	IssueInvalidType   = orgadmin.IssueInvalidType
	IssueTooSmall      = orgadmin.IssueTooSmall
	IssueTooBig        = orgadmin.IssueTooBig
	IssueInvalidEnum   = orgadmin.IssueInvalidEnum
	IssueInvalidString = orgadmin.IssueInvalidString
	IssueAlreadyExists = orgadmin.IssueAlreadyExists
	IssueNotAllowed    = orgadmin.IssueNotAllowed
	IssueDuplicateKey  = orgadmin.IssueDuplicateKey
	IssueNotFound      = orgadmin.IssueNotFound
	IssueForbidden     = orgadmin.IssueForbidden
)

// Sentinels for errors.Is: the orgadmin package's own values, so that
// errors.Is(err, client.ErrNotFound) and errors.Is(err,
// orgadmin.ErrNotFound) are the same test. An *Error matches the sentinel
// of its Code; a *ValidationError matches ErrBadRequest.
var (
	ErrBadRequest      = orgadmin.ErrBadRequest
	ErrUnauthorized    = orgadmin.ErrUnauthorized
	ErrForbidden       = orgadmin.ErrForbidden
	ErrNotFound        = orgadmin.ErrNotFound
	ErrTooManyRequests = orgadmin.ErrTooManyRequests
	ErrInternal        = orgadmin.ErrInternal
)

// ErrDeletedOnRetry is matched (errors.Is) by the error of DeleteUser and
// DeleteToken when the server answered 404 NOT_FOUND to a retry, after an
// earlier attempt of the same call may have reached the server (its answer
// was lost: the connection broke, or a gateway answered 502, 503 or 504).
// The user or token is gone, most likely deleted by that earlier attempt;
// most callers treat it as success:
//
//	err := c.DeleteToken(ctx, "robot", id)
//	if errors.Is(err, client.ErrDeletedOnRetry) {
//		err = nil // gone, as asked
//	}
//
// The same error also matches ErrNotFound and converts (errors.As) to the
// 404's *Error.
var ErrDeletedOnRetry = errors.New("orgadmin: not found on retry: an earlier attempt may have deleted it")

// Error is an answer of the API other than 200. Get at it with errors.As,
// or test it with errors.Is against the sentinels:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == client.CodeNotFound { ... }
//	if errors.Is(err, client.ErrNotFound) { ... } // the same test
//
// errors.As also converts it to an *orgadmin.Error (Code and Issues), so
// orgadmin.ErrorCode(err) classifies it, as errors.Is does. An answer
// without the JSON envelope is classified by its status where that says
// enough: a 429 as TOO_MANY_REQUESTS, a 5xx (a gateway's 502, say) as
// INTERNAL_SERVER_ERROR. Any other (the plain-text 404 of a path no route
// has, a wrong base URL most likely; a redirect) matches no sentinel and
// converts to no *orgadmin.Error; orgadmin.ErrorCode says
// INTERNAL_SERVER_ERROR for it, as for any error it does not know, so
// test Code == "" (or StatusCode) to tell it apart.
type Error struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the error code of the JSON envelope (see the Code
	// constants), or "" when the body was not one, as for the plain-text
	// 404 of a path that matches no route, or a gateway's 502.
	Code Code
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

// Error implements error: "orgadmin: 400 BAD_REQUEST: Bad Request:
// username: Username is already taken".
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "orgadmin: %d", e.StatusCode)
	if e.Code != "" {
		b.WriteString(" " + string(e.Code))
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	writeIssues(&b, e.Issues)
	return b.String()
}

func writeIssues(b *strings.Builder, issues []Issue) {
	for i, is := range issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if len(is.Path) > 0 {
			b.WriteString(is.Path.String() + ": ")
		}
		b.WriteString(is.Message)
	}
}

// code is the code the error is classified by: its envelope's, or, for an
// answer without one (a gateway's), TOO_MANY_REQUESTS for a 429 and
// INTERNAL_SERVER_ERROR for a 5xx.
func (e *Error) code() Code {
	switch {
	case e.Code != "":
		return e.Code
	case e.StatusCode == http.StatusTooManyRequests:
		return CodeTooManyRequests
	case e.StatusCode >= 500 && e.StatusCode < 600:
		return CodeInternal
	}
	return ""
}

// Is reports whether target is the orgadmin sentinel of e's code
// (orgadmin.ErrNotFound for a 404 NOT_FOUND, ...). A 404 without the JSON
// envelope (a path no route has) matches none: it is no answer about a
// user or token.
func (e *Error) Is(target error) bool {
	t, ok := target.(*orgadmin.Error)
	return ok && t.Issues == nil && t.Err == nil && t.Code != "" && t.Code == e.code()
}

// As converts e, for errors.As, to an *orgadmin.Error with its code and
// issues.
func (e *Error) As(target any) bool {
	if t, ok := target.(**orgadmin.Error); ok && e.code() != "" {
		*t = &orgadmin.Error{Code: e.code(), Issues: e.Issues}
		return true
	}
	return false
}

// ValidationError is a request the client refuses before sending it, with
// issues that name the field as a 400's do: a TTL or a cooldown that is not
// a whole number of seconds (a time.Duration of 300 is 300ns) or is out of
// range, which the server would refuse with a 400; or a path parameter (a
// username, a token id, a Dive id) that is empty, "." or "..", which no
// user, token or Dive has and which a router in front of the API would
// clean into another route's path. errors.Is(err, ErrBadRequest) holds; no
// request was sent.
type ValidationError struct {
	// Issues say what is wrong, at the field's wire name ("ttl",
	// "config.read_write.cooldown_seconds", "token_id").
	Issues []Issue
}

// Error implements error: "orgadmin: invalid request: ttl: ...".
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("orgadmin: invalid request")
	writeIssues(&b, e.Issues)
	return b.String()
}

// Is reports whether target is ErrBadRequest.
func (e *ValidationError) Is(target error) bool { return target == ErrBadRequest }

// As converts e, for errors.As, to an *orgadmin.Error of code
// BAD_REQUEST with its issues.
func (e *ValidationError) As(target any) bool {
	if t, ok := target.(**orgadmin.Error); ok {
		*t = &orgadmin.Error{Code: CodeBadRequest, Issues: e.Issues}
		return true
	}
	return false
}

// checkSeconds adds to issues when d, a duration sent as seconds, is not
// a whole number of them, at path. Its bounds are the API's to check: it
// lists one out of bounds with the request's other issues.
func checkSeconds(issues []Issue, d time.Duration, path ...any) []Issue {
	if d%time.Second != 0 {
		return append(issues, Issue{Message: fmt.Sprintf("Expected a whole number of seconds, received %v", d), Path: orgadmin.NewPath(path...), Code: IssueInvalidType})
	}
	return issues
}

// checkSegment adds to issues when value, the path parameter named name
// on the wire, cannot be sent as a path segment: empty, "." or "..".
// Escaping leaves those as they are, and a ServeMux in front of the API
// cleans them away, sending the request to another route (DELETE
// /v1/users/robot/tokens/.. would be DELETE /v1/users/robot).
func checkSegment(issues []Issue, name, value string) []Issue {
	switch value {
	case "":
		return append(issues, Issue{Message: "String must contain at least 1 character(s)", Path: orgadmin.NewPath(name), Code: IssueTooSmall})
	case ".", "..":
		return append(issues, Issue{Message: fmt.Sprintf("Expected a path segment, received %q", value), Path: orgadmin.NewPath(name), Code: IssueInvalidString})
	}
	return issues
}

// invalid returns the issues as a *ValidationError, or nil.
func invalid(issues []Issue) error {
	if len(issues) == 0 {
		return nil
	}
	return &ValidationError{Issues: issues}
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
		Code    Code    `json:"code"`
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
