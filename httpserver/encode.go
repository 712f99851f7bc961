package httpserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Every answer writes its own JSON with the few functions below: the same
// bytes encoding/json writes of the answer's wire form (the tests compare
// each answer with it), without its reflection, which cost a listing of
// ten tokens several times what writing it costs (BENCHMARKS.md, "The
// plain code, beside the build before it").

// answer is a response body.
type answer interface {
	// appendJSON appends the answer's JSON to b.
	appendJSON(b []byte) []byte
}

// releaser is an answer that holds an array to give back once it is
// written (opReleased).
type releaser interface {
	release()
}

// answerBufs holds the buffers answers are written into.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxPooledAnswer bounds the buffers answerBufs keeps; a larger answer's
// buffer is left to the garbage collector.
const maxPooledAnswer = 64 << 10

// writeJSON writes a as the JSON body of a response with the given status.
func writeJSON[A answer](w http.ResponseWriter, status int, a A) {
	buf := answerBufs.Get().(*[]byte)
	b := append(a.appendJSON((*buf)[:0]), '\n')
	// The keys are in canonical form already, and the values share one
	// array of their own (Header.Set would make one for each), in the
	// request's recorder when there is one.
	v := headerValues(w)
	*v = [3]string{"application/json", "no-store", strconv.Itoa(len(b))}
	h := w.Header()
	h["Content-Type"] = v[0:1:1]
	h["Cache-Control"] = v[1:2:2]
	h["Content-Length"] = v[2:3:3]
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client went away; nothing to do
	if cap(b) <= maxPooledAnswer {
		*buf = b
		answerBufs.Put(buf)
	}
}

// headerValues returns an array for the values of an answer's headers,
// which the response holds until it is sent: that of w when it is the
// recorder of a request (made with it, in one allocation), or a new one.
func headerValues(w http.ResponseWriter) *[3]string {
	if rec, ok := w.(*recorder); ok {
		return &rec.headerValues
	}
	return new([3]string)
}

// appendKey appends the key of an object's member: after a comma, unless
// it is the object's first.
func appendKey(b []byte, key string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// appendField appends the member key with the string value.
func appendField(b []byte, key, value string) []byte {
	return appendString(appendKey(b, key), value)
}

// appendOptField appends the member key with the string value, unless the
// value is empty: the API omits optional fields that are unset.
func appendOptField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	return appendField(b, key, value)
}

// plainJSON tells the bytes that encoding/json writes as they are inside a
// string: printable ASCII but for the quote, the backslash and the three
// characters it escapes for HTML.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it: a plain string directly, any other through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendTime appends t as the API writes times: a string in RFC 3339, in
// UTC, with milliseconds ("2026-06-19T12:34:56.789Z").
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339) // ends in Z: the milliseconds go there
	ms := t.Nanosecond() / 1e6
	b[len(b)-1] = '.'
	return append(b, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"') // #nosec G115 -- ms < 1000: three digits
}

// appendArray appends items as a JSON array, each written by item.
func appendArray[T any](b []byte, items []T, item func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, v := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(b, v)
	}
	return append(b, ']')
}

// appendBool appends the member key with the boolean v.
func appendBool(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(appendKey(b, key), v)
}

// appendInt appends the member key with the integer n.
func appendInt(b []byte, key string, n int) []byte {
	return strconv.AppendInt(appendKey(b, key), int64(n), 10)
}
