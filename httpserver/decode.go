package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/jsonobject"
)

// object is the members of a JSON object of a request body, in order,
// each key given once: keys decoded, values as the body has them. It is
// nil where there is no object, and empty, not nil, for {}.
type object []member

// member is a member of an object. Its value is nil for a key the object
// gives twice, which members reports and leaves out.
type member struct {
	key   string
	value json.RawMessage
}

// get returns the value of key.
func (o object) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// decoder reads request bodies field by field, collecting an issue (with
// its path) for every field of the wrong JSON type instead of stopping at
// the first; the field is then left unset, and the Service reports the
// issue with every other problem of the request (the inputs'
// DecodeIssues). Ranges, lengths and enumerations are the Service's
// business.
type decoder struct {
	// body is the request body's object; nil when the body is not one.
	body   object
	issues []orgadmin.Issue
	// buf, when not nil, holds the body and the members of its objects
	// (readBody), until release.
	buf *bodyBuffers
	// detached, when not nil, is the context of the Service call of a
	// request whose body was cut off (context); endDetached ends it.
	detached    context.Context
	endDetached context.CancelFunc
}

// bodyBuffers are what reading a request body takes: its bytes and the
// members of its objects, kept from one request to the next (bodies).
// Nothing decoded from a body points into them: strings are copies, and
// raw values are cloned (decoder.raw, decoder.array).
type bodyBuffers struct {
	text    bytes.Buffer
	members object
}

// bodies holds the buffers of request bodies.
var bodies = sync.Pool{New: func() any { return new(bodyBuffers) }}

// maxPooledBody and maxPooledMembers bound the buffers bodies keeps;
// larger ones are left to the garbage collector.
const (
	maxPooledBody    = 64 << 10
	maxPooledMembers = 1 << 10
)

// release gives d's buffers back, once the request is decoded and its
// Service call made; d may not be used after.
func (d *decoder) release() {
	if d.endDetached != nil {
		d.endDetached()
	}
	b := d.buf
	if b == nil {
		return
	}
	*d = decoder{}
	if b.text.Cap() > maxPooledBody || cap(b.members) > maxPooledMembers {
		return
	}
	b.text.Reset()
	clear(b.members[:cap(b.members)]) // keeps no key alive
	b.members = b.members[:0]
	bodies.Put(b)
}

func (d *decoder) add(code orgadmin.IssueCode, msg string, path []any) {
	d.issues = append(d.issues, orgadmin.Issue{Message: msg, Path: orgadmin.NewPath(path...), Code: code})
}

// kind names the JSON type of a raw value.
func kind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// field returns the raw value of key, or nil when it is absent or null. A
// required field that is absent or null gets an issue, unless o is nil (a
// body that is not an object has had its issue) or the key had one (it
// was given twice).
func (d *decoder) field(o object, key string, required bool, path []any) json.RawMessage {
	if o == nil {
		return nil
	}
	raw, ok := o.get(key)
	if ok && raw == nil { // given twice: its one issue, now that it is read
		d.add(orgadmin.IssueDuplicateKey, fmt.Sprintf("Duplicate key %q", key), append(slices.Clip(path), key))
		return nil
	}
	if ok && kind(raw) != "null" {
		return raw
	}
	if !required {
		return nil
	}
	if at := append(slices.Clip(path), key); ok {
		d.add(orgadmin.IssueInvalidType, "Expected a value, received null", at)
	} else {
		d.add(orgadmin.IssueInvalidType, "Required", at)
	}
	return nil
}

func (d *decoder) wrongType(want string, raw json.RawMessage, at []any) {
	d.add(orgadmin.IssueInvalidType, fmt.Sprintf("Expected %s, received %s", want, kind(raw)), at)
}

// string decodes key as a string; absent, null or mistyped is unset.
// (An Optional, not a pointer, which would put each value on the heap.)
func (d *decoder) string(o object, key string, required bool, path ...any) orgadmin.Optional[string] {
	raw := d.field(o, key, required, path)
	if raw == nil {
		return orgadmin.Optional[string]{}
	}
	if kind(raw) != "string" {
		d.wrongType("string", raw, append(slices.Clip(path), key))
		return orgadmin.Optional[string]{}
	}
	s := jsonString(raw)
	if jsonobject.LoneSurrogate(raw) {
		d.add(orgadmin.IssueInvalidString, "String must be valid Unicode (no lone surrogate escapes)", append(slices.Clip(path), key))
		return orgadmin.Optional[string]{}
	}
	return orgadmin.Some(s)
}

// int decodes key as a whole number: 4 and 4.0 are accepted, 2.5 is not.
// Values beyond the int range are clamped, so that range checks report
// them.
func (d *decoder) int(o object, key string, required bool, path ...any) orgadmin.Optional[int] {
	raw := d.field(o, key, required, path)
	if raw == nil {
		return orgadmin.Optional[int]{}
	}
	if kind(raw) != "number" {
		d.wrongType("number", raw, append(slices.Clip(path), key))
		return orgadmin.Optional[int]{}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		d.wrongType("number", raw, append(slices.Clip(path), key))
		return orgadmin.Optional[int]{}
	}
	if !jsonobject.WholeNumber(raw) {
		d.add(orgadmin.IssueInvalidType, "Expected integer, received float", append(slices.Clip(path), key))
		return orgadmin.Optional[int]{}
	}
	n := math.MaxInt32 + 1.0
	n = math.Max(-n, math.Min(n, f))
	return orgadmin.Some(int(n))
}

// seconds decodes key as a whole number of seconds (as int does) into a
// duration; absent, null or mistyped is unset.
func (d *decoder) seconds(o object, key string, required bool, path ...any) orgadmin.Optional[time.Duration] {
	n, ok := d.int(o, key, required, path...).Get()
	if !ok {
		return orgadmin.Optional[time.Duration]{}
	}
	return orgadmin.Some(time.Duration(n) * time.Second)
}

// optString is string as an Optional.
func (d *decoder) optString(o object, key string, path ...any) orgadmin.Optional[string] {
	return d.string(o, key, false, path...)
}

// object decodes key as an object; absent, null or mistyped yields nil.
func (d *decoder) object(o object, key string, required bool, path ...any) object {
	raw := d.field(o, key, required, path)
	if raw == nil {
		return nil
	}
	if kind(raw) != "object" {
		d.wrongType("object", raw, append(slices.Clip(path), key))
		return nil
	}
	return d.members(raw)
}

// item decodes raw, a valid JSON value at path, as an object; mistyped
// yields nil.
func (d *decoder) item(raw json.RawMessage, path []any) object {
	if kind(raw) != "object" {
		d.wrongType("object", raw, path)
		return nil
	}
	return d.members(raw)
}

// members decodes raw, a valid JSON object in valid UTF-8, into its
// members. A key given twice (where json.Unmarshal lets the last one win)
// stays a member once, without a value: field reports it, as an issue at
// that key, when the operation reads the key, and leaves it unset, like a
// field of the wrong type; a key the operation does not read is ignored,
// given twice or not, so that the issues stay as few as the fields read.
// (Looking for the issue among those found instead took time in
// proportion to their number for every missing field: a body of many
// items, each missing one, took time in the square of its size.)
func (d *decoder) members(raw []byte) object {
	var o object
	if d.buf != nil {
		// After the members of the objects read before, which keep
		// theirs: each object is read whole, at once.
		all := splitObjectInto(d.buf.members, raw)
		o, d.buf.members = all[len(d.buf.members):len(all):len(all)], all
		if o == nil {
			o = object{} // {} is an empty object, not a missing one
		}
	} else {
		o = splitObject(raw)
	}
	seen := map[string]int{} // how often each key came so far
	twice := false
	for _, m := range o {
		n := seen[m.key]
		seen[m.key] = n + 1
		twice = twice || n > 0
	}
	if !twice {
		return o
	}
	kept := make(object, 0, len(o))
	for _, m := range o {
		switch seen[m.key] {
		case 0: // a key given twice, kept already
		case 1:
			kept = append(kept, m)
		default:
			kept = append(kept, member{key: m.key})
			seen[m.key] = 0
		}
	}
	return kept
}

// splitObject returns the members of raw, a valid JSON object in valid
// UTF-8 (as readBody has it), in order:
// each key as encoding/json decodes it, each value as raw has it, without
// the space around it. It reads raw once and copies no value, where
// json.Unmarshal into a map validates raw again, then copies every value
// (BENCHMARKS.md, "The request body, read once"); a fuzz target holds it
// to encoding/json.
func splitObject(raw []byte) object {
	return splitObjectInto(make(object, 0, smallObject), raw)
}

// splitObjectInto is splitObject appending to o.
func splitObjectInto(o object, raw []byte) object {
	i := 1 // past the '{'
	for {
		i = skipSpace(raw, i)
		if raw[i] == '}' {
			return o
		}
		end := stringEnd(raw, i)
		key := jsonString(raw[i:end])
		i = skipSpace(raw, skipSpace(raw, end)+1) // past the ':'
		vend := valueEnd(raw, i)
		o = append(o, member{key, raw[i:vend:vend]})
		if i = skipSpace(raw, vend); raw[i] == ',' {
			i++
		}
	}
}

// smallObject is the room an object's members are first given: that of
// the objects of every request body of the API, read in one allocation.
const smallObject = 4

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the valid JSON string at b[i].
func stringEnd(b []byte, i int) int {
	for i++; b[i] != '"'; i++ {
		if b[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index just past the valid JSON value at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	default: // a number, true, false or null: up to what ends it
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && skipSpace(b, i) == i {
			i++
		}
		return i
	}
}

// jsonString decodes raw, a valid JSON string in valid UTF-8, as
// encoding/json does.
func jsonString(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // a valid JSON string always decodes
	return s
}

// array decodes key as an array of raw values; absent, null or mistyped
// yields nil, and an empty array a non-nil empty slice.
func (d *decoder) array(o object, key string, path ...any) []json.RawMessage {
	raw := d.field(o, key, false, path)
	if raw == nil {
		return nil
	}
	items := []json.RawMessage{}
	if kind(raw) != "array" || json.Unmarshal(raw, &items) != nil {
		d.wrongType("array", raw, append(slices.Clip(path), key))
		return nil
	}
	return items
}

// raw returns a copy of key's value as it is (absent or null: nil): the
// body it is part of is not kept.
func (d *decoder) raw(o object, key string) json.RawMessage {
	return bytes.Clone(d.field(o, key, false, nil))
}

// cutBodyTimeout bounds the Service call of a request whose body was cut
// off (decoder.context).
const cutBodyTimeout = 5 * time.Second

// context returns the context of the Service call of r, whose body d
// read. A body cut off, by a client that hangs up while it sends it or by
// the server's read timeout, ends r's context (net/http ends it when a
// read fails), so the call runs on r's values without its end, within
// cutBodyTimeout: the request gets the 401, 403 or 400 its cut body is
// due on every store, not a 499 from a store that looks at the context
// first. Such a call changes nothing: the body's issue is a 400.
func (d *decoder) context(r *http.Request) context.Context {
	if d.detached != nil {
		return d.detached
	}
	return r.Context()
}

// readBody reads the request body, which must be one JSON object in
// valid UTF-8 of at most the Handler's MaxBodyBytes, into a decoder of its
// members, to be released once the Service is called. What is wrong with
// the body as a whole is the decoder's one issue, at the empty path; its
// object is then nil.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) decoder {
	// Returned by value: it stays in its handler's frame.
	d := decoder{buf: bodies.Get().(*bodyBuffers)}
	var err error
	if r.ContentLength > h.maxBody {
		// Declared too big: not read at all. A client that sent "Expect:
		// 100-continue" is not asked for it; after the answer net/http
		// skips what was sent of a small body and closes the connection
		// on a large one.
		err = &http.MaxBytesError{Limit: h.maxBody}
	} else {
		_, err = d.buf.text.ReadFrom(http.MaxBytesReader(w, r.Body, h.maxBody))
	}
	body := d.buf.text.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			d.add(orgadmin.IssueTooBig, fmt.Sprintf("Body must be at most %d bytes", h.maxBody), []any{})
		} else {
			d.add(orgadmin.IssueInvalidType, "Body could not be read", []any{})
			d.detached, d.endDetached = context.WithTimeout(context.WithoutCancel(r.Context()), cutBodyTimeout)
		}
		return d
	}
	body = bytes.TrimSpace(body)
	switch {
	case len(body) == 0:
		d.add(orgadmin.IssueInvalidType, "Required: a JSON object", []any{})
	case !utf8.Valid(body):
		d.add(orgadmin.IssueInvalidString, "Body must be valid UTF-8", []any{})
	case !json.Valid(body):
		d.add(orgadmin.IssueInvalidType, "Body is not valid JSON", []any{})
	case body[0] != '{':
		d.add(orgadmin.IssueInvalidType, "Expected object, received "+kind(body), []any{})
	default:
		d.body = d.members(body)
	}
	return d
}
