package httpserver

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// bearerOf returns bearer of a request whose Authorization headers are hs.
func bearerOf(hs ...string) orgadmin.Bearer {
	r := httptest.NewRequest("GET", "/v1/users", nil)
	for _, h := range hs {
		r.Header.Add("Authorization", h)
	}
	return bearer(r)
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	for _, h := range []string{"Bearer x", "bearer x", "BEARER x", "bEaReR x", "Bearer  x  "} {
		assert.Equalf(t, orgadmin.Bearer("x"), bearerOf(h), "%q", h)
	}
	assert.Equal(t, orgadmin.Bearer("oat_abc123"), bearerOf("Bearer oat_abc123"))
}

// A missing, repeated or malformed header is no token, which the Service
// refuses as it refuses an unknown one.
func TestBearerOfMalformedHeaders(t *testing.T) {
	for _, h := range []string{"", "Bearer", "Bearer ", "Basic x", "Bearerx", "Bearer a b", "Bearer\tx", "Token x", "x"} {
		assert.Emptyf(t, bearerOf(h), "%q", h)
	}
	assert.Empty(t, bearerOf())
	assert.Empty(t, bearerOf("Bearer x", "Bearer x"), "two headers")
}

// FuzzBearerToken: bearer against DESIGN §2 and RFC 7235: the scheme
// "Bearer" in any case, one space, then the token, which may have spaces
// around it but none (nor a tab) inside.
func FuzzBearerToken(f *testing.F) {
	for _, h := range []string{
		"", "Bearer", "Bearer ", "Bearer  ", "Bearer x", "bearer x", "BEARER x", "bEaReR x", "Bearer  x  ", "Bearer x y",
		"Bearer\tx", "Bearer x\t", "Bearer\u00a0x", "Bearer\x00x", "Bearerx", " Bearer x", "Bearer:x", "Basic x",
		"Bearer x\r\n", "Bearer \xff", "Bearer oat_" + strings.Repeat("0", 49), "Bearer " + strings.Repeat("t", 513),
		"Bearer x,y", "Bearer \"x\"", "Bearer x=", "Bearer\u2003x", "BEARER\u0130x", "Bearer ſ",
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok := string(bearerOf(header))
		scheme, rest, found := strings.Cut(header, " ")
		want := strings.Trim(rest, " ")
		if !found || !strings.EqualFold(scheme, "bearer") || strings.ContainsAny(want, " \t") {
			want = ""
		}
		require.Equal(t, want, tok, "header %q", header)
		// Whatever a header carries, the canonical header carries too.
		require.Equal(t, tok, string(bearerOf("Bearer "+tok)))
	})
}
