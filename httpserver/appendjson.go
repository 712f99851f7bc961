package httpserver

import "encoding/json"

// jsonAppender is an answer that writes its own JSON: writeJSON uses it
// instead of encoding/json's reflection, on the commonest answers. What it
// writes is byte for byte what encoding/json would write
// (TestAppendJSONMatchesEncodingJSON).
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it: a plain string directly, any other through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
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

func (t tokenJSON) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if t.Token != "" {
		b = appendField(b, "token", t.Token)
	}
	b = appendField(b, "id", t.ID)
	if t.Name != "" {
		b = appendField(b, "name", t.Name)
	}
	if t.Description != "" {
		b = appendField(b, "description", t.Description)
	}
	if t.ExpireAt != "" {
		b = appendField(b, "expire_at", t.ExpireAt)
	}
	b = appendField(b, "created_ts", t.CreatedTS)
	if t.ReadOnly {
		b = append(b, `,"read_only":true`...)
	} else {
		b = append(b, `,"read_only":false`...)
	}
	b = appendField(b, "token_type", t.TokenType)
	return append(b, '}')
}

func (r listTokensResponse) appendJSON(b []byte) []byte {
	if r.Tokens == nil {
		return append(b, `{"tokens":null}`...)
	}
	b = append(b, `{"tokens":[`...)
	for i, t := range r.Tokens {
		if i > 0 {
			b = append(b, ',')
		}
		b = t.appendJSON(b)
	}
	return append(b, "]}"...)
}
