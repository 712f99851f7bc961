package orgadmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Code classifies an error; each code has one HTTP status and one message on
// the wire.
type Code string

// The error codes of the API.
const (
	CodeBadRequest      Code = "BAD_REQUEST"
	CodeUnauthorized    Code = "UNAUTHORIZED"
	CodeForbidden       Code = "FORBIDDEN"
	CodeNotFound        Code = "NOT_FOUND"
	CodeTooManyRequests Code = "TOO_MANY_REQUESTS"
	CodeInternal        Code = "INTERNAL_SERVER_ERROR"
	// CodeCanceled means a store call of the operation ended because the
	// caller's context was canceled (over HTTP: the client hung up). It
	// is no failure of the service; errors.Is(err, context.Canceled)
	// holds. What was under way may or may not have happened. (The memory
	// store does not look at contexts: on it an operation runs to its
	// end.)
	CodeCanceled Code = "CANCELED"
)

// Message returns the fixed human-readable message of the code.
func (c Code) Message() string {
	switch c {
	case CodeBadRequest:
		return "Bad Request"
	case CodeUnauthorized:
		return "Invalid Credentials"
	case CodeForbidden:
		return "Unauthorized"
	case CodeNotFound:
		return "Not Found"
	case CodeTooManyRequests:
		return "Too Many Requests"
	case CodeCanceled:
		return "Client Closed Request"
	default:
		return "Internal Error"
	}
}

// Issue is one problem with a request: what is wrong, and where.
type Issue struct {
	// Message says what is wrong, in English.
	Message string `json:"message"`
	// Path locates the offending field: object keys as strings, array
	// indexes as ints. It is empty for the request as a whole.
	Path []any `json:"path"`
	// Code is a machine-readable kind such as "too_big" or "invalid_type".
	Code string `json:"code"`
}

// Issue codes.
const (
	IssueInvalidType   = "invalid_type"
	IssueTooSmall      = "too_small"
	IssueTooBig        = "too_big"
	IssueInvalidEnum   = "invalid_enum_value"
	IssueInvalidString = "invalid_string"
	IssueConflict      = "already_exists"
	IssueNotAllowed    = "not_allowed"
	// IssueDuplicateKey is a JSON object that names a key twice.
	IssueDuplicateKey = "duplicate_key"
)

// Error is the error type of every Service operation. Its Code decides the
// HTTP status; Issues say what was wrong with the request.
type Error struct {
	Code   Code
	Issues []Issue
	// Err is the underlying cause of an internal or canceled error, or
	// the reason of an unauthorized one (ErrUnknownToken...). It is for
	// logs and metrics only and never reaches a client.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	for i, is := range e.Issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if len(is.Path) > 0 {
			fmt.Fprintf(&b, "%v: ", joinPath(is.Path))
		}
		b.WriteString(is.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func joinPath(p []any) string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ".")
}

// Unwrap returns the cause of an internal or canceled error, or the
// reason of an unauthorized one.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, orgadmin.ErrNotFound) works whatever the issues.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Issues == nil && t.Err == nil
}

// Sentinels for errors.Is.
var (
	ErrBadRequest   = &Error{Code: CodeBadRequest}
	ErrUnauthorized = &Error{Code: CodeUnauthorized}
	ErrForbidden    = &Error{Code: CodeForbidden}
	ErrNotFound     = &Error{Code: CodeNotFound}
	ErrInternal     = &Error{Code: CodeInternal}
	ErrCanceled     = &Error{Code: CodeCanceled}
)

// ErrorCode returns the Code of err: its own when err is or wraps an *Error,
// CodeInternal for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// badRequest returns a BAD_REQUEST error carrying issues.
func badRequest(issues ...Issue) *Error {
	return &Error{Code: CodeBadRequest, Issues: issues}
}

// notFound returns a NOT_FOUND error naming what is missing.
func notFound(what string, path ...any) *Error {
	return &Error{Code: CodeNotFound, Issues: []Issue{{Message: what + " not found", Path: nonNilPath(path), Code: "not_found"}}}
}

// forbidden returns a FORBIDDEN error saying what was refused.
func forbidden(why string) *Error {
	return &Error{Code: CodeForbidden, Issues: []Issue{{Message: why, Path: []any{}, Code: "forbidden"}}}
}

// internal wraps a store failure; the cause is kept for logs only. A store
// call that ended because the caller's context was canceled is no failure:
// it is CodeCanceled.
func internal(op string, err error) *Error {
	code := CodeInternal
	if errors.Is(err, context.Canceled) {
		code = CodeCanceled
	}
	return &Error{Code: code, Err: fmt.Errorf("%s: %w", op, err)}
}

func nonNilPath(p []any) []any {
	if p == nil {
		return []any{}
	}
	return p
}

// issues collects the problems of one request.
type issues []Issue

// add adds an issue at a copy of path: the checks' paths, built where
// they are called, then stay on the stack of a request without issues.
func (is *issues) add(code, msg string, path ...any) {
	*is = append(*is, Issue{Message: msg, Path: append([]any{}, path...), Code: code})
}

func (is *issues) required(path ...any) {
	is.add(IssueInvalidType, "Required", path...)
}

// withDecoded returns the issues a decoder found (decoded) followed by
// those of is that do not lie under the path of one of them: a field the
// decoder could not read was left unset, and is reported once, as the
// decoder found it.
func (is issues) withDecoded(decoded []Issue) issues {
	if len(decoded) == 0 {
		return is
	}
	out := append(issues{}, decoded...)
	for _, i := range is {
		if !slices.ContainsFunc(decoded, func(d Issue) bool { return hasPrefix(i.Path, d.Path) }) {
			out = append(out, i)
		}
	}
	return out
}

// hasPrefix reports whether path starts with prefix.
func hasPrefix(path, prefix []any) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

// err returns the collected issues as a BAD_REQUEST error, or nil.
func (is issues) err() error {
	if len(is) == 0 {
		return nil
	}
	return badRequest(is...)
}
