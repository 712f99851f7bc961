package jsonobject

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type member struct {
	Key   string
	Value string
}

func members(raw string) []member {
	var out []member
	for k, v := range Members([]byte(raw)) {
		out = append(out, member{k, string(v)})
	}
	return out
}

// Members yields every member in order, a key given twice twice, keys
// unescaped and values as written, and nothing of what is not an object.
func TestMembers(t *testing.T) {
	assert.Equal(t, []member{{"a", "1"}, {"b", `{"c":[1,2]}`}, {"a", `"x"`}, {"u", "null"}},
		members(`{"a":1, "b":{"c":[1,2]}, "a":"x", "\u0075":null}`))
	assert.Nil(t, members(`{}`))
	for _, raw := range []string{`[1,2]`, `"s"`, `1`, `null`, ``, `{"a":`, `{"a" 1}`} {
		assert.Nil(t, members(raw), "%s", raw)
	}
	assert.Equal(t, []member{{"a", "1"}}, members(`{"a":1,"b":}`), "stops at the first malformed member")
	var n int
	for range Members([]byte(`{"a":1,"b":2,"c":3}`)) {
		n++
		if n == 2 {
			break
		}
	}
	assert.Equal(t, 2, n, "stops when told")
}

// Unescaped writes each string that holds an escape with the fewest
// escapes, and leaves everything else as it was.
func TestUnescaped(t *testing.T) {
	for in, want := range map[string]string{
		`{"k":"plain","n":[1,2.50,-3e+2],"b":true,"z":null}`:                      `{"k":"plain","n":[1,2.50,-3e+2],"b":true,"z":null}`,
		`{"\u006b":"\u00e9\u2603\ud83d\ude00"}`:                                   `{"k":"é☃😀"}`,
		`["\"","\\","\/","\b\f\n\r\t","\u0000\u001f","\u2028\u2029","<&>\u003c"]`: `["\"","\\","/","\b\f\n\r\t","\u0000\u001f","\u2028\u2029","<&><"]`,
		`{"a\\":"b\\","c":"\\\""}`:                                                `{"a\\":"b\\","c":"\\\""}`,
		`"\u00e9"`:                                                                `"é"`,
		"{\"k\":\"a\u2028b\u2029\",\"é\":1}":                                      `{"k":"a\u2028b\u2029","é":1}`, // raw: escaped as if written so
	} {
		assert.Equal(t, want, string(Unescaped([]byte(in))), in)
	}
	plain := []byte(`{"k":"v"}`)
	assert.Same(t, &plain[0], &Unescaped(plain)[0], "no escape: the text itself")
}

// Unescaped's text is valid and reads as the same value.
func FuzzUnescaped(f *testing.F) {
	for _, s := range []string{`{"k":"\u00e9"}`, `["\"\\\/\b\f\n\r\t"]`, `{"\ud83d\ude00":[1,{"x":"\u2028"}]}`, `"a\\"`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var c bytes.Buffer
		if json.Compact(&c, []byte(in)) != nil || LoneSurrogate(c.Bytes()) {
			return
		}
		u := Unescaped(c.Bytes())
		require.True(t, json.Valid(u), "%s", u)
		assert.Equal(t, decode(t, c.Bytes()), decode(t, u))
		assert.Equal(t, string(u), string(Unescaped(u)), "one value, one text")
	})
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// WholeNumber reads a JSON number as written, whatever a float64
// rounds it to.
func TestWholeNumber(t *testing.T) {
	for lit, whole := range map[string]bool{
		"0": true, "-0": true, "4": true, "4.0": true, "4.000": true, "4e0": true, "4E+0": true, "1e1": true,
		"0.4e1": true, "400e-2": true, "1.5e1": true, "0e-400": true, "0.0e99999999999999999999": true,
		"1e400": true, "12345678901234567890": true, "-7.0": true, "10e-1": true,
		"2.5": false, "0.1": false, "4.0000000000000001": false, "1e-400": false, "401e-2": false,
		"1.05e1": false, "-0.5": false, "5e-1": false, "1e-99999999999999999999": false, "100000000000000000001e-20": false,
	} {
		assert.Equal(t, whole, WholeNumber([]byte(lit)), lit)
	}
	lit := []byte("-1.50e+1")
	assert.Zero(t, testing.AllocsPerRun(100, func() { WholeNumber(lit) }), "read in place")
}
