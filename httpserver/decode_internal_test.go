package httpserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// membersByDecoder counts the members of raw, a valid JSON object, with
// the standard decoder: what countMembers must agree with.
func membersByDecoder(t *testing.T, raw []byte) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for dec.More() {
		var v json.RawMessage
		if _, err := dec.Token(); err != nil { // the key
			t.Fatal(err)
		}
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

func TestCountMembers(t *testing.T) {
	for _, js := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":1,"b":2}`, `{"a":1,"a":2}`,
		`{"a,b":"c,d","e":"}"}`, `{"a\",":"\\","b":"\\\"{,"}`,
		`{"a":{"b":1,"c":[1,2,{"d":3}]},"e":[],"f":{}}`,
		`{"":"","\u002c":","}`, `{"a":"é,名"}`,
	} {
		if got, want := countMembers([]byte(js)), membersByDecoder(t, []byte(js)); got != want {
			t.Errorf("countMembers(%s) = %d, want %d", js, got, want)
		}
	}
}

// FuzzCountMembers: for every valid JSON object, countMembers counts the
// members the standard decoder reads.
func FuzzCountMembers(f *testing.F) {
	for _, js := range []string{`{}`, `{"a":1,"a":2}`, `{"a\",":"\\","b":[{"c":","}]}`} {
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, js string) {
		raw := bytes.TrimSpace([]byte(js))
		if !json.Valid(raw) || len(raw) == 0 || raw[0] != '{' {
			return
		}
		if got, want := countMembers(raw), membersByDecoder(t, raw); got != want {
			t.Fatalf("countMembers(%s) = %d, want %d", raw, got, want)
		}
	})
}
