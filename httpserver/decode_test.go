package httpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// A lone surrogate escape is refused wherever it stands in a string (the
// check once counted U+FFFD against "\ufffd" spelled in the raw text, so
// an escaped backslash followed by "ufffd" let one through, stored as
// U+FFFD); any other string is stored as encoding/json decodes it.
func TestLoneSurrogateAfterEscapedBackslashIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, desc := range []string{`\\ufffd\ud800`, `\\\\ufffd\udc00`, `\\ud800\ud800`, `\ud800\\ufffd`, `\uD800\\uFFFD`} {
		r := f.do("POST", "/v1/users", bearer(f.admin), `{"username":"reporter","description":"`+desc+`"}`)
		requireIssue(t, r, "description")
		require.False(t, f.userExists(acme, "reporter"), "%s", desc)
	}
	// What is accepted is stored decoded, as encoding/json decodes it.
	for _, desc := range []string{`\\ufffd`, `\\ud800`, `\\\ud83d\ude00`, `\uD83D\uDE00`, `\u00e9\\u`, `a\"b\/c\td`, `plain`} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(`"`+desc+`"`), &want))
		r := f.do("POST", "/v1/users", bearer(f.admin), `{"username":"reporter","description":"`+desc+`"}`)
		assert.Equal(t, want, requireOK(t, r)["description"], "%s", desc)
		requireOK(t, f.do("DELETE", "/v1/users/reporter", bearer(f.admin), nil))
	}
}
