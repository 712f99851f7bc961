package httpserver

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/orgadmin/orgadmin"
)

// jsonAppender is an answer that writes its own JSON: writeJSON uses it
// instead of encoding/json's reflection, on the commonest answers. What it
// writes is byte for byte what encoding/json writes of the answer's wire
// form (TestAppendJSONMatchesEncodingJSON, FuzzAppendJSON).
type jsonAppender interface {
	appendJSON(b []byte) []byte
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

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it: a plain string directly, any other through encoding/json.
func appendJSONString(b []byte, s string) []byte {
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

// appendField appends ,"key":"value" (without the comma for the first
// field of an object, when b ends with '{').
func appendField(b []byte, key, value string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	return appendJSONString(b, value)
}

// appendTimeField appends ,"key":"time" with t as the API writes times,
// which never need escaping.
func appendTimeField(b []byte, key string, t time.Time) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":"`...)
	b = orgadmin.AppendTime(b, t)
	return append(b, '"')
}

// appendToken appends t in its wire form (tokenJSON): the value only when
// t carries one, as on creation.
func appendToken(b []byte, t orgadmin.Token) []byte {
	b = append(b, '{')
	if t.Value != "" {
		b = appendField(b, "token", t.Value)
	}
	b = appendField(b, "id", t.ID)
	if t.Name != "" {
		b = appendField(b, "name", t.Name)
	}
	if t.Description != "" {
		b = appendField(b, "description", t.Description)
	}
	if !t.ExpireAt.IsZero() {
		b = appendTimeField(b, "expire_at", t.ExpireAt)
	}
	b = appendTimeField(b, "created_ts", t.CreatedAt)
	if t.ReadOnly() {
		b = append(b, `,"read_only":true`...)
	} else {
		b = append(b, `,"read_only":false`...)
	}
	b = appendField(b, "token_type", string(t.Type))
	return append(b, '}')
}

func (t tokenAnswer) appendJSON(b []byte) []byte {
	return appendToken(b, orgadmin.Token(t))
}

// encodedJSON is an answer already encoded, with its final newline:
// writeJSON writes it as it is.
type encodedJSON []byte

func (l tokenList) appendJSON(b []byte) []byte {
	b = append(b, `{"tokens":[`...)
	for i, t := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendToken(b, t)
	}
	return append(b, "]}"...)
}

func (p userPage) appendJSON(b []byte) []byte {
	b = append(b, `{"users":[`...)
	for i, u := range p.Users {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendUser(b, u)
	}
	b = append(b, `],"total_count":`...)
	b = strconv.AppendInt(b, int64(p.TotalCount), 10)
	b = append(b, `,"next_page_token":`...)
	if p.NextPageToken == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, p.NextPageToken)
	}
	return append(b, '}')
}

// appendUser appends u as list users shows it: its one role in "roles",
// and the optional fields only when set.
func appendUser(b []byte, u orgadmin.User) []byte {
	b = append(b, '{')
	b = appendField(b, "id", u.ID)
	b = appendField(b, "username", u.Username)
	if u.IsServiceAccount {
		b = append(b, `,"is_service_account":true,"roles":[`...)
	} else {
		b = append(b, `,"is_service_account":false,"roles":[`...)
	}
	b = appendJSONString(b, string(u.Role))
	b = append(b, ']')
	b = appendTimeField(b, "created_ts", u.CreatedAt)
	for _, f := range [...]struct{ key, value string }{
		{"description", u.Description},
		{"email", u.Email},
		{"first_name", u.FirstName},
		{"last_name", u.LastName},
	} {
		if f.value != "" {
			b = appendField(b, f.key, f.value)
		}
	}
	return append(b, '}')
}
