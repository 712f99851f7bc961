package httpserver

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// membersByDecoder reads the members of raw, a valid JSON object, with the
// standard decoder: what splitObject must agree with.
func membersByDecoder(t *testing.T, raw []byte) object {
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, err := dec.Token()
	require.NoError(t, err)
	o := object{}
	for dec.More() {
		key, err := dec.Token()
		require.NoError(t, err)
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
		o = append(o, member{key.(string), v})
	}
	return o
}

func TestSplitObject(t *testing.T) {
	for _, js := range []string{
		`{}`, ` { } `, `{"a":1}`, `{"a":1,"b":2}`, `{"a":1,"a":2}`, "{ \"a\" :\t-1.5e3 ,\r\n\"b\" : true }",
		`{"a,b":"c,d","e":"}"}`, `{"a\",":"\\","b":"\\\"{,"}`, `{"n":null,"f":false,"t":true,"z":0}`,
		`{"a":{"b":1,"c":[1,2,{"d":3}]},"e":[],"f":{},"g":[[]],"h":"]"}`,
		`{"":"","\u002c":",","\ud800":1,"\ud83d\ude00":"\u00e9"}`, `{"a":"é,名"}`,
	} {
		raw := bytes.TrimSpace([]byte(js))
		assert.Equal(t, membersByDecoder(t, raw), splitObject(raw), "%s", js)
	}
	assert.NotNil(t, splitObject([]byte(`{}`)), "an empty object is not a missing one")
}

// FuzzSplitObject: for every valid JSON object in valid UTF-8 (as
// readBody has it), splitObject reads the members the standard decoder
// reads, keys and values alike.
func FuzzSplitObject(f *testing.F) {
	for _, js := range []string{`{}`, `{"a":1,"a":2}`, `{"a\",":"\\","b":[{"c":","}]}`, `{"\u0061" : [ 1 , {"x":"}"} ] , "b":-0.5E+2}`} {
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, js string) {
		raw := bytes.TrimSpace([]byte(js))
		if !utf8.Valid(raw) || !json.Valid(raw) || len(raw) == 0 || raw[0] != '{' {
			return
		}
		want := membersByDecoder(t, raw)
		if got := splitObject(raw); !assert.Equal(t, want, got, "%s", raw) {
			t.FailNow()
		}
	})
}

// TestReadBodyRelease reads bodies through readBody, as handlers do,
// each released before the next: what each decodes is its own, and a
// released decoder's buffers keep nothing of the body it read.
func TestReadBodyRelease(t *testing.T) {
	h := &Handler{maxBody: DefaultMaxBodyBytes}
	bodies := []string{
		`{"config":{"read_write":{"instance_size":"jumbo"},"read_scaling":{"instance_size":"standard","flock_size":2}}}`,
		`{"name":"a token","description":"kept"}`,
		`{"name":"x","name":"y","ttl":300}`,
	}
	var kept []string
	for _, body := range bodies {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		d := h.readBody(httptest.NewRecorder(), r)
		require.NotNil(t, d.buf)
		buf := d.buf
		kept = append(kept, d.string(d.body, "name", false).Value)
		if cfg := d.object(d.body, "config", false); cfg != nil {
			rw := d.object(cfg, "read_write", false, "config")
			assert.Equal(t, "jumbo", d.string(rw, "instance_size", false, "config", "read_write").Value)
		}
		d.release()
		assert.Nil(t, d.buf, "a released decoder holds no buffers")
		assert.Zero(t, buf.text.Len(), "the body's bytes are dropped")
		for _, m := range buf.members[:cap(buf.members)] {
			assert.Zero(t, m, "no member of the body is kept")
		}
	}
	// Decoded strings are copies, not views of the reused buffers.
	assert.Equal(t, []string{"", "a token", ""}, kept)
}

// TestMembersEmptyObjectFreshBuffers reads {} into buffers that have held
// nothing yet (a new pool entry): an empty object, not a missing one.
func TestMembersEmptyObjectFreshBuffers(t *testing.T) {
	d := decoder{buf: new(bodyBuffers)}
	o := d.members([]byte(`{}`))
	assert.NotNil(t, o, "an empty object is not a missing one")
	assert.Empty(t, o)
	assert.Empty(t, d.issues)
}
