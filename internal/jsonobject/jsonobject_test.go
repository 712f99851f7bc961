package jsonobject

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
