// Package jsonobject reads the members of a JSON object in the order they
// are written, duplicates included, where json.Unmarshal into a map or a
// struct keeps only the last value of a key. The seed decoder uses it to
// name a key given twice. (Request bodies, validated before they are
// read, are split by httpserver's own reader, which copies nothing.)
package jsonobject

import (
	"bytes"
	"encoding/json"
	"iter"
)

// Members yields each member of raw, a JSON object: its key, unescaped,
// and its value as written. It yields nothing when raw is not an object,
// and stops at the first malformed member.
func Members(raw []byte) iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return
		}
		for dec.More() {
			tok, err := dec.Token()
			key, ok := tok.(string)
			var v json.RawMessage
			if err != nil || !ok || dec.Decode(&v) != nil {
				return
			}
			if !yield(key, v) {
				return
			}
		}
	}
}
