package orgadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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

// Issue is one problem with a request: what is wrong, and where. The
// client package decodes the issues of an answer into this same type.
type Issue struct {
	// Message says what is wrong, in English.
	Message string `json:"message"`
	// Path locates the offending field: object keys and array indexes,
	// outermost first, named as on the wire ("config.read_write.
	// cooldown_seconds"). It is empty for the request as a whole.
	Path Path `json:"path"`
	// Code is a machine-readable kind, one of the Issue constants.
	Code IssueCode `json:"code"`
}

// IssueCode is the machine-readable kind of an Issue.
type IssueCode string

// The issue codes: every one the API writes.
const (
	// IssueInvalidType is a field of the wrong type (a number that is not
	// whole, a duration that is not a whole number of seconds), a
	// required field that is missing, or a query parameter given twice.
	IssueInvalidType IssueCode = "invalid_type"
	// IssueTooSmall is a number under its minimum, or a string too short.
	IssueTooSmall IssueCode = "too_small"
	// IssueTooBig is a number or string over its maximum, or one record
	// more than a limit allows.
	IssueTooBig IssueCode = "too_big"
	// IssueInvalidEnum is a value outside its enumeration.
	IssueInvalidEnum IssueCode = "invalid_enum_value"
	// IssueInvalidString is a string of the wrong form.
	IssueInvalidString IssueCode = "invalid_string"
	// IssueAlreadyExists is a username taken, or a token value in use.
	IssueAlreadyExists IssueCode = "already_exists"
	// IssueNotAllowed is a field or an action the rules do not allow.
	IssueNotAllowed IssueCode = "not_allowed"
	// IssueDuplicateKey is a JSON object that names a key twice.
	IssueDuplicateKey IssueCode = "duplicate_key"
	// IssueNotFound is the issue of a NOT_FOUND error: what is missing.
	IssueNotFound IssueCode = "not_found"
	// IssueForbidden is the issue of a FORBIDDEN error: what was refused.
	IssueForbidden IssueCode = "forbidden"
)

// PathElem is one element of an issue's Path: an object key (PathKey) or
// an array index (PathIndex). It is comparable; its JSON form is a string
// or a number.
type PathElem struct {
	key     string
	index   int
	isIndex bool
}

// PathKey returns the path element of the object key k.
func PathKey(k string) PathElem { return PathElem{key: k} }

// PathIndex returns the path element of the array index i.
func PathIndex(i int) PathElem { return PathElem{index: i, isIndex: true} }

// Key returns the object key of p, and false when p is an index.
func (p PathElem) Key() (string, bool) { return p.key, !p.isIndex }

// Index returns the array index of p, and false when p is a key.
func (p PathElem) Index() (int, bool) { return p.index, p.isIndex }

// String returns the key, or the index in decimal.
func (p PathElem) String() string {
	if p.isIndex {
		return strconv.Itoa(p.index)
	}
	return p.key
}

// MarshalJSON writes a key as a JSON string and an index as a number.
func (p PathElem) MarshalJSON() ([]byte, error) {
	if p.isIndex {
		return strconv.AppendInt(nil, int64(p.index), 10), nil
	}
	return json.Marshal(p.key)
}

// UnmarshalJSON reads a JSON string as a key and a whole number as an
// index; anything else is an error.
func (p *PathElem) UnmarshalJSON(b []byte) error {
	var k string
	if err := json.Unmarshal(b, &k); err == nil {
		*p = PathKey(k)
		return nil
	}
	var i int
	if err := json.Unmarshal(b, &i); err != nil {
		return fmt.Errorf("issue path element %.32s: neither a string nor an integer", b)
	}
	*p = PathIndex(i)
	return nil
}

// Path locates a field of a request, outermost first.
type Path []PathElem

// NewPath returns the path of elems, each a string (a key), an int (an
// index) or a PathElem. It panics on any other type, a programming error.
func NewPath(elems ...any) Path {
	p := make(Path, len(elems))
	for i, e := range elems {
		switch e := e.(type) {
		case string:
			p[i] = PathKey(e)
		case int:
			p[i] = PathIndex(e)
		case PathElem:
			p[i] = e
		default:
			panic(fmt.Sprintf("orgadmin: path element %v of type %T", e, e))
		}
	}
	return p
}

// String joins the elements with dots, such as
// "config.read_write.flock_size" or "required_resources.0.url"; "" for the
// empty path.
func (p Path) String() string {
	parts := make([]string, len(p))
	for i, e := range p {
		parts[i] = e.String()
	}
	return strings.Join(parts, ".")
}

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

// Error implements error. A nil *Error (returned as an error by mistake:
// a non-nil error holding a nil pointer) reads "<nil>", rather than
// panicking where it is logged.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(string(e.Code))
	for i, is := range e.Issues {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if len(is.Path) > 0 {
			b.WriteString(is.Path.String())
			b.WriteString(": ")
		}
		b.WriteString(is.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause of an internal or canceled error, or the
// reason of an unauthorized one.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether target is an *Error with the same Code, so that
// errors.Is(err, orgadmin.ErrNotFound) works whatever the issues.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t != nil && t.Code == e.Code && t.Issues == nil && t.Err == nil
}

// Sentinels for errors.Is, one per Code: errors.Is(err, ErrNotFound)
// holds for any error that is or wraps an *Error of code NOT_FOUND, and
// for the errors of the client package that carry that code.
var (
	ErrBadRequest      = &Error{Code: CodeBadRequest}
	ErrUnauthorized    = &Error{Code: CodeUnauthorized}
	ErrForbidden       = &Error{Code: CodeForbidden}
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrTooManyRequests = &Error{Code: CodeTooManyRequests}
	ErrInternal        = &Error{Code: CodeInternal}
	ErrCanceled        = &Error{Code: CodeCanceled}
)

// ErrorCode classifies any error: "" for nil; the Code of the first
// *Error in err's chain (errors.As sees through fmt.Errorf("...: %w")
// wrapping, and the client package's errors convert to one); otherwise
// CodeInternal, also for a nil *Error held by a non-nil error (a
// mistake, which is not success). Use it, or errors.Is with the
// sentinels, rather than a type assertion, which fails once an error is
// wrapped:
//
//	switch orgadmin.ErrorCode(err) {
//	case orgadmin.CodeNotFound: ...
//	}
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e != nil {
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
	return &Error{Code: CodeNotFound, Issues: []Issue{{Message: what + " not found", Path: NewPath(path...), Code: IssueNotFound}}}
}

// forbidden returns a FORBIDDEN error saying what was refused.
func forbidden(why string) *Error {
	return &Error{Code: CodeForbidden, Issues: []Issue{{Message: why, Path: Path{}, Code: IssueForbidden}}}
}

// internal wraps a store failure of an operation of ctx; the cause is
// kept for logs only. A store call that ended because the caller's
// context was canceled is no failure: it is CodeCanceled, whatever error
// the store's driver made of the cancellation (database/sql, for one,
// rolls a transaction back when its context is canceled, and then
// answers sql.ErrTxDone, not the context's error). The context's error
// is wrapped too, so that errors.Is(err, ctx.Err()) holds. The caller's
// context decides, not the error: a store that cancels an operation of
// its own (a driver's pool cleared when the server dropped, say) and
// reports context.Canceled while the caller still waits has failed, and
// the answer is a 500 to retry, not a 499 that blames the client.
func internal(ctx context.Context, op string, err error) *Error {
	code := CodeInternal
	cerr := ctx.Err()
	if cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", err, cerr)
	}
	if errors.Is(cerr, context.Canceled) {
		code = CodeCanceled
	}
	return &Error{Code: code, Err: fmt.Errorf("%s: %w", op, err)}
}

// issues collects the problems of one request.
type issues []Issue

// add adds an issue at a copy of path: the checks' paths, built where
// they are called, then stay on the stack of a request without issues.
func (is *issues) add(code IssueCode, msg string, path ...any) {
	*is = append(*is, Issue{Message: msg, Path: NewPath(path...), Code: code})
}

func (is *issues) required(path ...any) {
	is.add(IssueInvalidType, "Required", path...)
}

// withDecoded returns the issues a decoder found (decoded) followed by
// those of is that do not lie under the path of one of them: a field the
// decoder could not read was left unset, and is reported once, as the
// decoder found it. It takes time in proportion to the issues, however
// many a request has (each compared with every decoded one took time in
// their product).
func (is issues) withDecoded(decoded []Issue) issues {
	if len(decoded) == 0 {
		return is
	}
	under := make(map[string]bool, len(decoded)) // the decoded issues' paths
	for _, d := range decoded {
		k, _ := d.Path.appendKey(nil, nil)
		under[string(k)] = true
	}
	out := append(issues{}, decoded...)
	var key []byte
	var ends []int
	for _, i := range is {
		key, ends = i.Path.appendKey(key[:0], ends[:0])
		if !slices.ContainsFunc(ends, func(end int) bool { return under[string(key[:end])] }) {
			out = append(out, i)
		}
	}
	return out
}

// appendKey appends to key a form of p that tells every path apart, in
// which the form of each prefix of p is a prefix, and appends to ends
// where the form of each prefix ends, the empty one first.
func (p Path) appendKey(key []byte, ends []int) ([]byte, []int) {
	ends = append(ends, len(key))
	for _, e := range p {
		if i, ok := e.Index(); ok {
			key = strconv.AppendInt(append(key, '#'), int64(i), 10)
		} else { // its length, then itself
			key = append(strconv.AppendInt(key, int64(len(e.key)), 10), ':')
			key = append(key, e.key...)
		}
		key = append(key, '.')
		ends = append(ends, len(key))
	}
	return key, ends
}

// err returns the collected issues as a BAD_REQUEST error, or nil.
func (is issues) err() error {
	if len(is) == 0 {
		return nil
	}
	return badRequest(is...)
}
