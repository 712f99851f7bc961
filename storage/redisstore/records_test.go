package redisstore

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameAsJSON requires that read, or decodeAfresh where read reports
// false, decodes s exactly as json.Unmarshal does: the same error-ness
// and, on success, the same value.
func sameAsJSON[D any](t testing.TB, s string, read func(string, *D) bool) {
	t.Helper()
	var want, got D
	wantErr := json.Unmarshal([]byte(s), &want)
	var gotErr error
	if !read(s, &got) {
		got, gotErr = decodeAfresh[D](s)
	}
	if wantErr != nil {
		require.Error(t, gotErr, "encoding/json refuses %q", s)
		return
	}
	require.NoError(t, gotErr, "encoding/json accepts %q", s)
	require.True(t, reflect.DeepEqual(want, got), "%q:\nwant %#v\n got %#v", s, want, got)
}

// The records encode writes are read without encoding/json, to the same
// values, whatever their strings hold.
func TestRecordReadersMatchEncodingJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline", "ünïcødé ✓ 🦆", "<html>&amp;", "\u2028\u2029", "\x7f"}
	for _, s := range odd {
		users := []userDoc{
			{ID: s, Username: s, Role: "Admin", Created: 1_750_000_000_123},
			{ID: "u", Username: "n", Description: s, SA: true, Role: s, Privileges: []string{s, "x"}, Email: s, FirstName: s, LastName: s, Created: -1},
			{ID: "u", Privileges: []string{}, Created: math.MaxInt64},
			{ID: "u", Created: math.MinInt64},
		}
		for _, u := range users {
			enc := encode(u)
			sameAsJSON(t, enc, readUserDoc)
			var d userDoc
			assert.Equal(t, json.Valid([]byte(enc)) && !needsEscape(enc), readUserDoc(enc, &d), "fast path for %s", enc)
			assert.Equal(t, json.Valid([]byte(enc)) && !needsEscape(enc), readUserDocAsWritten(enc, &d), "as-written path for %s", enc)
		}
		for _, tok := range []tokenDoc{
			{ID: s, Digest: "ab", Name: s, Description: s, Type: "read_write", Created: 1, Expires: 0},
			{ID: "t", Digest: "ab", Name: s, Type: s, Created: math.MinInt64, Expires: math.MaxInt64},
		} {
			enc := encode(tok)
			sameAsJSON(t, enc, readTokenDoc)
			var d tokenDoc
			assert.Equal(t, !needsEscape(enc), readTokenDocAsWritten(enc, &d), "as-written path for %s", enc)
		}
	}
	for _, c := range []instDoc{{}, {RW: sideDoc{Size: "jumbo"}, RS: sideDoc{Size: "mega", Flock: 64, Cooldown: 86400}}, {RS: sideDoc{Flock: -3}}} {
		enc := encode(c)
		sameAsJSON(t, enc, readInstDoc)
		var d instDoc
		assert.True(t, readInstDoc(enc, &d), "fast path for %s", enc)
		assert.True(t, readInstDocAsWritten(enc, &d), "as-written path for %s", enc)
	}
}

// needsEscape reports whether encoding/json wrote an escape into s, which
// the readers leave to encoding/json.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			return true
		}
	}
	return false
}

// Texts that are not what encode writes decode as encoding/json decodes
// them, refusals included.
func TestRecordReadersOddTexts(t *testing.T) {
	texts := []string{
		``, `{`, `}`, `{}`, ` { } `, `null`, `[]`, `"x"`, `{"id":"a"}x`, `{"id":"a",}`, `{,}`,
		`{"id":"a","id":"b"}`, `{"ID":"a"}`, `{"unknown":1,"id":"a"}`, `{"id":1}`, `{"id":null}`,
		`{"c":1.5}`, `{"c":1e3}`, `{"c":01}`, `{"c":-0}`, `{"c":-}`, `{"c":+1}`, `{"c":99999999999999999999}`,
		`{"c":-12}`, `{"c":123456789012345678}`, `{"c":-123456789012345678}`, `{"c":1234567890123456789}`,
		`{"c":9223372036854775807}`, `{"c":-9223372036854775808}`, `{"c":9223372036854775808}`, `{"c":-0.5}`,
		`{"c":"5"}`, `{"sa":true}`, `{"sa":truex}`, `{"sa":null}`, `{"sa":1}`, `{"p":null}`, `{"p":[]}`,
		`{"p":["a",]}`, `{"p":["a" "b"]}`, `{"p":[1]}`, `{"p":"a"}`, "{\"id\":\"a\x01\"}", "{\"id\":\"\xff\"}",
		`{"id":"\u0061"}`, `{"id":"a\/b"}`, `{"n":"x"` + "\n" + `,"r":"Admin"}`, `{"rw":{"s":"x","f":2147483648}}`,
		`{"rw":{"s":"x","f":-2147483648}}`, `{"rw":{}}`, `{"rw":null}`, `{"rs":{"cd":1,"cd":2}}`, `{"e":0,"d":"ff"}`,
		// Near the form encode writes.
		`{"id":"a","n":"b","sa":false,"r":"x","c":1}`, `{"id":"a","n":"b","r":"x","c":1,"c":2}`,
		`{"id":"a","n":"b","r":"x","c":1} `, `{"id":"a","n":"b","r":"x","p":null,"c":1}`,
		`{"id":"a","n":"b","sa":true,"r":"x","c":-0}`, `{"id":"a","n":"b","r":"x","ds":"d","c":1}`,
		`{"id":"a","n":"b","r":"x","p":[],"em":"","c":1}`, `{"id":"a","n":"b","r":"x"}`,
		`{"rw":{"s":"x","f":1,"f":2},"rs":{"s":"y"}}`, `{"rw":{"s":"x"},"rs":{"s":"y"},"rw":{"s":"z"}}`,
		`{"rw":{"s":"x","cd":1,"f":2},"rs":{"s":"y"}}`, `{"rw":{"s":"x"},"rs":{"s":"y","f":0}}`,
	}
	for _, s := range texts {
		sameAsJSON(t, s, readUserDoc)
		sameAsJSON(t, s, readInstDoc)
		sameAsJSON(t, s, readTokenDoc)
	}
}

func FuzzRecordReaders(f *testing.F) {
	f.Add(encode(userDoc{ID: "u", Username: "Bob", Role: "Member", Privileges: []string{"p"}, Created: 5}))
	f.Add(encode(instDoc{RW: sideDoc{Size: "jumbo"}, RS: sideDoc{Size: "mega", Flock: 2, Cooldown: 60}}))
	f.Add(encode(tokenDoc{ID: "t", Digest: "00ff", Name: "ci", Type: "read_write", Created: 1, Expires: 2}))
	f.Add(`{"id":"a\"b","p":[],"sa":false}`)
	f.Fuzz(func(t *testing.T, s string) {
		sameAsJSON(t, s, readUserDoc)
		sameAsJSON(t, s, readInstDoc)
		sameAsJSON(t, s, readTokenDoc)
	})
}

// plainPrefix finds the first byte that is not plain, or the quote, at
// every position of strings long and short, after plain bytes of every
// value.
func TestPlainPrefix(t *testing.T) {
	naive := func(s string) int {
		for i := 0; i < len(s); i++ {
			if !plainByte[s[i]] || s[i] == '"' {
				return i
			}
		}
		return len(s)
	}
	var plain []byte
	for c := 0; c < 256; c++ {
		if plainByte[c] && c != '"' {
			plain = append(plain, byte(c))
		}
	}
	for n := 0; n <= 24; n++ {
		for _, fill := range plain {
			b := make([]byte, n)
			for i := range b {
				b[i] = fill
			}
			require.Equal(t, n, plainPrefix(string(b)), "%d of %q", n, fill)
			for at := 0; at < n; at++ {
				for _, odd := range []byte{'"', '\\', 0, 0x1f, 0x80, 0xff, 0xc3} {
					b[at] = odd
					require.Equal(t, naive(string(b)), plainPrefix(string(b)), "%q", b)
					require.Equal(t, at, plainPrefix(string(b)), "%q", b)
					b[at] = fill
				}
			}
		}
	}
	// Bytes that are not plain after the first one do not move it.
	require.Equal(t, 3, plainPrefix("abc\"\\\x00\x80defgh"))
	require.Equal(t, 10, plainPrefix("abcdefgh ~\x01\x7f"))
}

// BenchmarkUserFrom decodes a user record and its instance configuration
// as a page of users does, for each of its members.
func BenchmarkUserFrom(b *testing.B) {
	user := encode(userDoc{ID: "0b5f8a6e-3c1d-4f7a-9e2b-6d4c8a1f0e93", Username: "service-account-0042", SA: true,
		Role: "Member", Description: "Loads the nightly exports of the analytics warehouse into the reporting tables",
		Privileges: []string{"read_users", "read_tokens"}, Email: "service-account-0042@example.com",
		FirstName: "Service", LastName: "Account", Created: 1_750_000_000_123})
	inst := encode(instDoc{RW: sideDoc{Size: "jumbo", Flock: 4, Cooldown: 600}, RS: sideDoc{Size: "mega", Flock: 16, Cooldown: 86400}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := userFrom("acme", "service-account-0042", user, inst); err != nil {
			b.Fatal(err)
		}
	}
}
