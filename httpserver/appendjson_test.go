package httpserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The answers that write their own JSON write what encoding/json writes.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " backslash \`, "<tag>&amp;", "tab\t\x01\x7f", "ünïcødé ✓ 🦆", "\u2028\u2029", "bad \xff utf-8", "oat_AbC123"}
	var tokens []tokenJSON
	for i, s := range odd {
		tokens = append(tokens,
			tokenJSON{Token: s, ID: s, Name: s, Description: s, ExpireAt: s, CreatedTS: s, ReadOnly: i%2 == 0, TokenType: s},
			tokenJSON{ID: "id", CreatedTS: "2026-06-19T12:00:00.000Z", TokenType: "read_write", Name: s},
		)
	}
	values := []jsonAppender{listTokensResponse{}, listTokensResponse{Tokens: []tokenJSON{}}, listTokensResponse{Tokens: tokens}}
	for _, tok := range tokens {
		values = append(values, tok, listTokensResponse{Tokens: []tokenJSON{tok}})
	}
	for _, v := range values {
		var want bytes.Buffer
		require.NoError(t, json.NewEncoder(&want).Encode(v))
		require.Equal(t, want.String(), string(append(v.appendJSON(nil), '\n')))
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("oat_x", "id", "name", "desc", "2026-06-19T12:00:00.000Z", true)
	f.Fuzz(func(t *testing.T, token, id, name, desc, ts string, ro bool) {
		v := listTokensResponse{Tokens: []tokenJSON{{Token: token, ID: id, Name: name, Description: desc, ExpireAt: ts, CreatedTS: ts, ReadOnly: ro, TokenType: name}}}
		var want bytes.Buffer
		require.NoError(t, json.NewEncoder(&want).Encode(v))
		require.Equal(t, want.String(), string(append(v.appendJSON(nil), '\n')))
	})
}
