package httpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// ---------------------------------------------------------------------------
// Users: the username rule, case-insensitivity, path usernames.

// DESIGN §1: 1 to 255 code points; a Unicode letter first; then letters,
// decimal digits or underscores.
func TestUsernameRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	create := func(f *fixture, name string) response {
		return f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": name})
	}
	for _, name := range []string{
		"é",                          // 1 code point, 2 bytes
		strings.Repeat("é", 255),     // 255 code points, 510 bytes
		strings.Repeat("a", 255),     // 255 ASCII
		"Zoë_2", "Ωmega", "名前", "a_", // Unicode letters, digit, underscore
		"a٣", // Arabic-Indic digit three is \p{Nd}
	} {
		t.Run("ok "+short(name), func(t *testing.T) {
			f := f.with(t)
			requireJSON(t, create(f, name), jsonString(t, map[string]any{"username": name}))
			u, err := f.svc.GetUser(t.Context(), acme, name)
			require.NoError(t, err)
			assert.Equal(t, name, u.Username)
			assert.True(t, u.IsServiceAccount)
			assert.Equal(t, orgadmin.RoleMember, u.Role)
		})
	}
	for _, tc := range []struct{ what, name string }{
		{"0 code points", ""},
		{"256 code points", strings.Repeat("é", 256)},
		{"256 ASCII", strings.Repeat("a", 256)},
		{"digit first", "1abc"},
		{"underscore first", "_abc"},
		{"hyphen", "a-b"},
		{"space", "a b"},
		{"dot", "a.b"},
		{"superscript two is not a decimal digit", "a²"},
		{"emoji", "a🙂"},
	} {
		t.Run("bad "+tc.what, func(t *testing.T) {
			f := f.with(t)
			requireIssue(t, create(f, tc.name), "username")
			if tc.name != "" && len([]rune(tc.name)) <= 255 {
				assert.False(t, f.userExists(acme, tc.name))
			}
		})
	}
}

func short(s string) string {
	if r := []rune(s); len(r) > 8 {
		return fmt.Sprintf("%s…(%d)", string(r[:4]), len(r))
	}
	return s
}

// DESIGN §3: a duplicate username is a 400 with an issue saying it is
// taken; DESIGN §1: usernames compare under Unicode simple case folding.
func TestDuplicateUsernameIsTakenCaseInsensitively(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, name := range []string{"robot", "Robot", "ROBOT", "dave", "ADMIN"} {
		is := requireIssue(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": name}), "username")
		assert.Equal(t, "already_exists", is.Code)
		assert.Contains(t, strings.ToLower(is.Message), "taken")
	}
	// Kelvin sign K (U+212A) folds to k.
	requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "kelvin"}))
	requireIssue(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "\u212Aelvin"}), "username")
	// A name taken in another org is free here.
	requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "stranger"}))
	u, err := f.svc.GetUser(t.Context(), acme, "ROBOT")
	require.NoError(t, err)
	assert.Equal(t, "robot", u.Username, "the first spelling is kept")
}

// SPEC: user description at most 1000 characters.
func TestServiceAccountDescriptionLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	d1000 := strings.Repeat("é", 1000)
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "a1", "description": d1000}),
		jsonString(t, map[string]any{"username": "a1", "description": d1000}))
	u, err := f.svc.GetUser(t.Context(), acme, "a1")
	require.NoError(t, err)
	assert.Equal(t, d1000, u.Description)
	requireIssue(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "a2", "description": d1000 + "x"}), "description")
	assert.False(t, f.userExists(acme, "a2"))
	// Every problem is listed.
	env := requireError(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "2a", "description": d1000 + "x"}), 400)
	assert.ElementsMatch(t, []string{`["username"]`, `["description"]`}, env.paths())
	// Without a description, the answer has no description key.
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "a3"}), `{"username":"a3"}`)
}

// An org holds at most Config.MaxUsersPerOrg users: one more is a 400
// naming the username, and a delete frees a place.
func TestUserLimitPerOrg(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{MaxUsersPerOrg: 6}) // acme holds 5
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "zed"}), `{"username":"zed"}`)
	r := f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "yan", "description": "one too many"})
	require.Equal(t, http.StatusBadRequest, r.status, "response: %s", r)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.JSONEq(t, `{"message":"Bad Request","code":"BAD_REQUEST","issues":[`+
		`{"message":"The organization holds the maximum number of users","path":["username"],"code":"too_big"}]}`, string(r.body))
	assert.False(t, f.userExists(acme, "yan"))
	// A taken username is told as such, at the limit too.
	requireIssue(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "ZED"}), "username")

	requireJSON(t, f.do("DELETE", userPath("zed"), bearer(f.admin), nil), `{"username":"zed"}`)
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "yan"}), `{"username":"yan"}`)
	requireError(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "zed"}), 400)
	// Another org counts its own users.
	for _, name := range []string{"g1", "g2", "g3", "g4"} {
		requireOK(t, f.do("POST", "/v1/users", bearer(f.boss), map[string]any{"username": name}))
	}
	requireError(t, f.do("POST", "/v1/users", bearer(f.boss), map[string]any{"username": "g5"}), 400)
}

// DESIGN §1: path lookups fold; the spelling given at creation is the one
// stored and returned.
func TestPathUsernameLookupIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "Alice"}), `{"username":"Alice"}`)
	requireOK(t, f.do("GET", userPath("ALICE", "instances"), bearer(f.admin), nil))
	requireOK(t, f.do("PUT", userPath("alice", "instances"), bearer(f.admin), validConfig))
	created := requireOK(t, f.do("POST", userPath("aLiCe", "tokens"), bearer(f.admin), map[string]any{"name": "x"}))
	assert.Equal(t, "Alice", f.caller(created["token"].(string)).Username())
	requireOK(t, f.do("GET", userPath("ALICE", "tokens"), bearer(created["token"].(string)), nil))
	requireJSON(t, f.do("DELETE", userPath("aLiCe"), bearer(f.admin), nil), `{"username":"Alice"}`)
	assert.False(t, f.userExists(acme, "Alice"))
}

// SPEC: a path username is at most 255 characters (400 beyond); a name that
// breaks the pattern cannot exist (404).
func TestPathUsernameBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ops := []struct {
		method, suffix string
		body           any
	}{
		{"GET", "/instances", nil},
		{"PUT", "/instances", validConfig},
		{"DELETE", "", nil},
		{"POST", "/tokens", map[string]any{"name": "x"}},
		{"GET", "/tokens", nil},
		{"DELETE", "/tokens/" + missingID, nil},
	}
	for _, op := range ops {
		t.Run(op.method+op.suffix, func(t *testing.T) {
			f := f.with(t)
			at := func(name string) string { return "/v1/users/" + url.PathEscape(name) + op.suffix }
			requireIssue(t, f.do(op.method, at(strings.Repeat("é", 256)), bearer(f.admin), op.body), "username")
			requireIssue(t, f.do(op.method, at("bob\xff"), bearer(f.admin), op.body), "username")
			requireError(t, f.do(op.method, at(strings.Repeat("é", 255)), bearer(f.admin), op.body), 404)
			requireError(t, f.do(op.method, at("no-such"), bearer(f.admin), op.body), 404)
			requireError(t, f.do(op.method, at("1abc"), bearer(f.admin), op.body), 404)
		})
	}
}

// ---------------------------------------------------------------------------
// Tokens.

// SPEC endpoint 7: name 1-255, ttl 300-31536000 (whole), description at
// most 1000, token_type read_write or read_scaling.
func TestCreateTokenBodyRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	name255 := strings.Repeat("é", 255)
	d1000 := strings.Repeat("é", 1000)
	cases := []struct {
		what string
		body string
		bad  []any // the issue path; nil means 200
		code string
	}{
		{"name missing", `{}`, []any{"name"}, "invalid_type"},
		{"name null", `{"name":null}`, []any{"name"}, "invalid_type"},
		{"name 0", `{"name":""}`, []any{"name"}, "too_small"},
		{"name 1", `{"name":"x"}`, nil, ""},
		{"name 255", jsonString(t, map[string]any{"name": name255}), nil, ""},
		{"name 256", jsonString(t, map[string]any{"name": name255 + "x"}), []any{"name"}, "too_big"},
		{"name a number", `{"name":1}`, []any{"name"}, "invalid_type"},
		{"ttl 299", `{"name":"x","ttl":299}`, []any{"ttl"}, "too_small"},
		{"ttl 300", `{"name":"x","ttl":300}`, nil, ""},
		{"ttl 31536000", `{"name":"x","ttl":31536000}`, nil, ""},
		{"ttl 31536001", `{"name":"x","ttl":31536001}`, []any{"ttl"}, "too_big"},
		{"ttl 300.0", `{"name":"x","ttl":300.0}`, nil, ""},
		{"ttl 3e2", `{"name":"x","ttl":3e2}`, nil, ""},
		{"ttl 300.5", `{"name":"x","ttl":300.5}`, []any{"ttl"}, "invalid_type"},
		{"ttl string", `{"name":"x","ttl":"300"}`, []any{"ttl"}, "invalid_type"},
		{"ttl huge", `{"name":"x","ttl":1e300}`, []any{"ttl"}, "too_big"},
		{"ttl negative", `{"name":"x","ttl":-300}`, []any{"ttl"}, "too_small"},
		{"token_type read_write", `{"name":"x","token_type":"read_write"}`, nil, ""},
		{"token_type read_scaling", `{"name":"x","token_type":"read_scaling"}`, nil, ""},
		{"token_type other", `{"name":"x","token_type":"admin"}`, []any{"token_type"}, "invalid_enum_value"},
		{"token_type upper case", `{"name":"x","token_type":"READ_WRITE"}`, []any{"token_type"}, "invalid_enum_value"},
		{"token_type empty", `{"name":"x","token_type":""}`, []any{"token_type"}, "invalid_enum_value"},
		{"description 1000", jsonString(t, map[string]any{"name": "x", "description": d1000}), nil, ""},
		{"description 1001", jsonString(t, map[string]any{"name": "x", "description": d1000 + "x"}), []any{"description"}, "too_big"},
	}
	for _, tc := range cases {
		t.Run(tc.what, func(t *testing.T) {
			f := f.with(t)
			before := len(listTokens(t, f.world, f.admin, "robot"))
			r := f.do("POST", userPath("robot", "tokens"), bearer(f.admin), tc.body)
			if tc.bad == nil {
				requireOK(t, r)
				assert.Len(t, listTokens(t, f.world, f.admin, "robot"), before+1)
				return
			}
			is := requireIssue(t, r, tc.bad...)
			assert.Equal(t, tc.code, is.Code)
			assert.Len(t, listTokens(t, f.world, f.admin, "robot"), before, "nothing created")
		})
	}
}

// listTokens returns the items of GET /v1/users/{username}/tokens.
func listTokens(tb testing.TB, w *world, token, username string) []map[string]any {
	tb.Helper()
	r := w.do("GET", userPath(username, "tokens"), bearer(token), nil)
	obj := requireOK(tb, r)
	require.Equal(tb, []string{"tokens"}, keys(obj), "body: %s", r.body)
	var out struct {
		Tokens []map[string]any `json:"tokens"`
	}
	require.NoError(tb, json.Unmarshal(r.body, &out))
	require.NotNil(tb, out.Tokens, "tokens is an array, never null")
	return out.Tokens
}

var wireTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// DESIGN §4 and §6: the create-token answer, exactly.
func TestCreateTokenResponseShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})

	r := f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "ci", "ttl": 3600})
	tok := requireOK(t, r)
	assert.Equal(t, []string{"created_ts", "expire_at", "id", "name", "read_only", "token", "token_type"}, keys(tok))
	requireUUID(t, tok["id"])
	assert.Equal(t, "ci", tok["name"])
	assert.Equal(t, "2026-06-19T12:34:56.789Z", tok["created_ts"])
	assert.Equal(t, "2026-06-19T13:34:56.789Z", tok["expire_at"])
	assert.Equal(t, false, tok["read_only"])
	assert.Equal(t, "read_write", tok["token_type"])
	value := tok["token"].(string)
	assert.True(t, orgadmin.ValidSecretChecksum(value), "minted value carries the checksum: %q", value)
	assert.Equal(t, "robot", f.caller(value).Username())

	// Times keep their trailing zeros, and expire_at is created_ts + ttl.
	f.clock.Advance(211 * time.Millisecond)
	r = f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "n", "ttl": 31536000, "description": "d", "token_type": "read_scaling"})
	tok = requireOK(t, r)
	assert.Equal(t, []string{"created_ts", "description", "expire_at", "id", "name", "read_only", "token", "token_type"}, keys(tok))
	assert.Equal(t, "2026-06-19T12:34:57.000Z", tok["created_ts"])
	assert.Equal(t, "d", tok["description"])
	assert.Equal(t, true, tok["read_only"])
	assert.Equal(t, "read_scaling", tok["token_type"])
	created, err := time.Parse(time.RFC3339Nano, tok["created_ts"].(string))
	require.NoError(t, err)
	expires, err := time.Parse(time.RFC3339Nano, tok["expire_at"].(string))
	require.NoError(t, err)
	assert.Equal(t, 31536000*time.Second, expires.Sub(created))
	for _, k := range []string{"created_ts", "expire_at"} {
		assert.Regexp(t, wireTime, tok[k])
	}

	// Without ttl there is no expire_at; without description no description.
	tok = requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "forever"}))
	assert.Equal(t, []string{"created_ts", "id", "name", "read_only", "token", "token_type"}, keys(tok))
	assert.Equal(t, false, tok["read_only"])
	assert.Equal(t, "read_write", tok["token_type"])
	assert.NotContains(t, string(f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "x"}).body), "null")
}

// DESIGN §6: read_only is true exactly for read_scaling tokens, and
// read_scaling tokens authenticate but may call no /v1 operation.
func TestTokenReadOnlyExactlyForReadScaling(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, tc := range []struct {
		body     map[string]any
		readOnly bool
		status   int
	}{
		{map[string]any{"name": "a"}, false, 200},
		{map[string]any{"name": "b", "token_type": "read_write"}, false, 200},
		{map[string]any{"name": "c", "token_type": "read_scaling"}, true, 403},
	} {
		tok := requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), tc.body))
		assert.Equal(t, tc.readOnly, tok["read_only"])
		r := f.do("GET", userPath("robot", "instances"), bearer(tok["token"].(string)), nil)
		if tc.status == 200 {
			requireOK(t, r)
		} else {
			requireError(t, r, tc.status)
			assert.Equal(t, "robot", f.caller(tok["token"].(string)).Username(), "it still authenticates")
		}
	}
	for _, item := range listTokens(t, f.world, f.admin, "robot") {
		assert.Equal(t, item["token_type"] == "read_scaling", item["read_only"], "item %v", item)
	}
}

// DESIGN §6: the token value is returned by create and nowhere else; list
// items are the create answer without the value, ordered by created_ts then
// id.
func TestListTokensOmitsValuesAndIsOrdered(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	var created []map[string]any
	mint := func(body map[string]any) {
		r := f.do("POST", userPath("robot", "tokens"), bearer(f.admin), body)
		created = append(created, requireOK(t, r))
	}
	f.clock.Advance(time.Second)
	mint(map[string]any{"name": "first", "ttl": 600, "description": "one"})
	f.clock.Advance(time.Millisecond)
	mint(map[string]any{"name": "second", "token_type": "read_scaling"})
	f.clock.Advance(time.Second)
	for i := range 6 { // same millisecond: ordered by id
		mint(map[string]any{"name": fmt.Sprintf("same-%d", i)})
	}

	r := f.do("GET", userPath("robot", "tokens"), bearer(f.admin), nil)
	requireOK(t, r)
	for _, c := range created {
		assert.NotContains(t, string(r.body), c["token"].(string))
	}
	assert.NotContains(t, string(r.body), f.robot)
	assert.NotContains(t, string(r.body), `"token"`)

	items := listTokens(t, f.world, f.admin, "robot")
	require.Len(t, items, 1+len(created), "the seeded token and the minted ones")
	// The seeded token was created first.
	assert.Equal(t, "seeded", items[0]["name"])
	items = items[1:]

	want := make([]map[string]any, len(created))
	for i, c := range created {
		w := map[string]any{}
		for k, v := range c {
			if k != "token" {
				w[k] = v
			}
		}
		want[i] = w
	}
	slices.SortStableFunc(want, func(a, b map[string]any) int {
		if c := strings.Compare(a["created_ts"].(string), b["created_ts"].(string)); c != 0 {
			return c
		}
		return strings.Compare(a["id"].(string), b["id"].(string))
	})
	assert.Equal(t, want, items)
	// The same list, seen by the token's own user.
	assert.Equal(t, want, listTokens(t, f.world, f.robot, "robot")[1:])
}

// Every JSON answer says its length, whether net/http measures it (an
// answer it holds whole) or the Handler does (a longer one, which net/http
// would otherwise send chunked).
func TestAnswersCarryContentLength(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	check := func(r response, status int) {
		t.Helper()
		require.Equal(t, status, r.status, "%s", r.body)
		assert.Equal(t, strconv.Itoa(len(r.body)), r.header.Get("Content-Length"))
	}
	check(f.do("GET", userPath("robot", "tokens"), bearer(f.admin), nil), 200)
	check(f.do("GET", userPath("robot", "tokens"), "", nil), 401)
	lengths := map[bool]bool{}
	for i := range 30 {
		r := f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": fmt.Sprint("t", i), "description": strings.Repeat("d", 60)})
		check(r, 200)
		r = f.do("GET", userPath("robot", "tokens"), bearer(f.admin), nil)
		check(r, 200)
		lengths[len(r.body) > 2048] = true
	}
	assert.Len(t, lengths, 2, "listings both shorter and longer than net/http's 2048-byte buffer")
}

// DESIGN §6: a new token authenticates; an expired one leaves the list and
// stops authenticating at expire_at.
func TestTokenExpiry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	tok := requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "short", "ttl": 300}))
	value := tok["token"].(string)
	requireOK(t, f.do("GET", userPath("robot", "tokens"), bearer(value), nil))
	assert.Len(t, listTokens(t, f.world, f.admin, "robot"), 2)

	f.clock.Advance(300*time.Second - 2*time.Millisecond)
	requireOK(t, f.do("GET", userPath("robot", "instances"), bearer(value), nil))
	assert.Len(t, listTokens(t, f.world, f.admin, "robot"), 2)

	f.clock.Advance(2 * time.Millisecond) // now >= expire_at
	requireError(t, f.do("GET", userPath("robot", "instances"), bearer(value), nil), 401)
	items := listTokens(t, f.world, f.admin, "robot")
	require.Len(t, items, 1)
	assert.NotEqual(t, tok["id"], items[0]["id"])
	// An expired token cannot be deleted either: it is gone.
	requireError(t, f.do("DELETE", userPath("robot", "tokens", tok["id"].(string)), bearer(f.admin), nil), 404)
}

// SPEC endpoint 9 and DESIGN §6: delete answers {} and takes effect at once.
func TestDeleteTokenInvalidatesAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	tok := requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "gone"}))
	value, id := tok["token"].(string), tok["id"].(string)
	requireOK(t, f.do("GET", userPath("robot", "tokens"), bearer(value), nil))

	r := f.do("DELETE", userPath("ROBOT", "tokens", id), bearer(f.admin), nil)
	requireOK(t, r)
	assert.Equal(t, "{}", strings.TrimSpace(string(r.body)))
	requireError(t, f.do("GET", userPath("robot", "tokens"), bearer(value), nil), 401)
	assert.False(t, f.authenticates(value))
	requireError(t, f.do("DELETE", userPath("robot", "tokens", id), bearer(f.admin), nil), 404)
	items := listTokens(t, f.world, f.admin, "robot")
	require.Len(t, items, 1)
	assert.NotEqual(t, id, items[0]["id"])
	// A token id of another user of the org is not found under this user.
	_, bobTok := f.seedToken(acme, "bob", orgadmin.CreateTokenInput{})
	requireError(t, f.do("DELETE", userPath("robot", "tokens", bobTok.ID), bearer(f.admin), nil), 404)
	// A user may delete their own token, even the one in use.
	requireOK(t, f.do("DELETE", userPath("robot", "tokens", items[0]["id"].(string)), bearer(f.robot), nil))
	requireError(t, f.do("GET", userPath("robot", "tokens"), bearer(f.robot), nil), 401)
}

// DESIGN §4: token ids are UUIDs, which are the same in upper or lower
// case (RFC 9562): the token named by its id in upper case is invalidated,
// not "not found" while it keeps working.
func TestDeleteTokenIDIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	tok := requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "shouted"}))
	value, id := tok["token"].(string), tok["id"].(string)
	require.NotEqual(t, id, strings.ToUpper(id))

	r := f.do("DELETE", userPath("robot", "tokens", strings.ToUpper(id)), bearer(f.admin), nil)
	requireOK(t, r)
	assert.Equal(t, "{}", strings.TrimSpace(string(r.body)))
	assert.False(t, f.authenticates(value))
	for _, item := range listTokens(t, f.world, f.admin, "robot") {
		assert.NotEqual(t, id, item["id"])
	}
	requireError(t, f.do("DELETE", userPath("robot", "tokens", id), bearer(f.admin), nil), 404)
}

// DESIGN §6: a user holds at most MaxTokensPerUser live tokens; one more is
// a 400. Expired and deleted tokens do not count.
func TestTokenLimitPerUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{MaxTokensPerUser: 3})
	dave, _ := f.seedToken(acme, "dave", orgadmin.CreateTokenInput{Name: "dave's own"}) // 1
	mint := func(name string, ttl ...int) response {
		f.clock.Advance(time.Millisecond) // keep creation order unambiguous
		body := map[string]any{"name": name}
		if len(ttl) > 0 {
			body["ttl"] = ttl[0]
		}
		return f.do("POST", userPath("dave", "tokens"), bearer(dave), body)
	}
	requireOK(t, mint("short", 300)) // 2
	requireOK(t, mint("third"))      // 3
	env := requireError(t, mint("fourth"), 400)
	require.Len(t, env.Issues, 1)
	assert.Len(t, listTokens(t, f.world, dave, "dave"), 3)

	f.clock.Advance(300 * time.Second) // "short" expires
	requireOK(t, mint("fourth"))
	requireError(t, mint("fifth"), 400)

	items := listTokens(t, f.world, dave, "dave")
	require.Len(t, items, 3)
	assert.Equal(t, []any{"dave's own", "third", "fourth"}, []any{items[0]["name"], items[1]["name"], items[2]["name"]})
	requireOK(t, f.do("DELETE", userPath("dave", "tokens", items[2]["id"].(string)), bearer(dave), nil))
	requireOK(t, mint("fifth"))
	requireError(t, mint("sixth"), 400)

	// The limit is per user: robot holds its seeded token and has room for two.
	for i := range 2 {
		requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": strconv.Itoa(i)}))
	}
	requireError(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "x"}), 400)
}

// ---------------------------------------------------------------------------
// Instance configuration.

func instancesOf(f *fixture, username string) response {
	return f.do("GET", userPath(username, "instances"), bearer(f.admin), nil)
}

func putInstances(f *fixture, username string, body any) response {
	return f.do("PUT", userPath(username, "instances"), bearer(f.admin), body)
}

// DESIGN §7: a new user starts with standard/standard, flock_size 4, and
// responses show the effective cooldown.
func TestInstanceConfigDefaultShape(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	r := instancesOf(f, "robot")
	requireOK(t, r)
	assert.Equal(t,
		`{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`,
		strings.TrimSpace(string(r.body)))
	// A service account created over HTTP starts the same way.
	requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "fresh"}))
	assert.Equal(t, string(r.body), string(instancesOf(f, "fresh").body))
}

// DESIGN §7: PUT replaces the whole configuration and answers it like GET.
func TestInstanceConfigRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	body := `{"config":{"read_write":{"instance_size":"mega","cooldown_seconds":120},"read_scaling":{"instance_size":"giga","flock_size":7,"cooldown_seconds":86400}}}`
	want := `{"read_write":{"instance_size":"mega","cooldown_seconds":120},"read_scaling":{"instance_size":"giga","flock_size":7,"cooldown_seconds":86400}}`
	requireJSON(t, putInstances(f, "robot", body), want)
	requireJSON(t, instancesOf(f, "robot"), want)
	// Other users are untouched.
	requireJSON(t, instancesOf(f, "dave"), `{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`)
	// Replacing without cooldowns falls back to the defaults of the sizes.
	want = `{"read_write":{"instance_size":"mega","cooldown_seconds":300},"read_scaling":{"instance_size":"giga","flock_size":0,"cooldown_seconds":600}}`
	requireJSON(t, putInstances(f, "robot", `{"config":{"read_write":{"instance_size":"mega"},"read_scaling":{"instance_size":"giga","flock_size":0}}}`), want)
	requireJSON(t, instancesOf(f, "robot"), want)
}

// config builds a PUT body from two sides.
func config(rw, rs map[string]any) map[string]any {
	return map[string]any{"config": map[string]any{"read_write": rw, "read_scaling": rs}}
}

// DESIGN §7: flock_size is a whole number from 0 to 64.
func TestFlockSizeBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	rw := map[string]any{"instance_size": "standard"}
	for _, tc := range []struct {
		raw  string
		want int // -1: refused
		code string
	}{
		{"0", 0, ""}, {"64", 64, ""}, {"4.0", 4, ""}, {"1e1", 10, ""},
		{"0.4e1", 4, ""}, {"400e-2", 4, ""}, {"0e-400", 0, ""}, {"-0", 0, ""},
		{"65", -1, "too_big"}, {"-1", -1, "too_small"}, {"2.5", -1, "invalid_type"},
		// Not whole, though a float64 rounds them to whole numbers.
		{"4.0000000000000001", -1, "invalid_type"}, {"1e-400", -1, "invalid_type"}, {"401e-2", -1, "invalid_type"},
		{`"4"`, -1, "invalid_type"}, {"null", -1, "invalid_type"}, {"true", -1, "invalid_type"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			f := f.with(t)
			body := fmt.Sprintf(`{"config":{"read_write":{"instance_size":"standard"},"read_scaling":{"instance_size":"standard","flock_size":%s}}}`, tc.raw)
			r := putInstances(f, "robot", body)
			if tc.want < 0 {
				is := requireIssue(t, r, "config", "read_scaling", "flock_size")
				assert.Equal(t, tc.code, is.Code)
				return
			}
			requireJSON(t, r, jsonString(t, map[string]any{
				"read_write":   map[string]any{"instance_size": "standard", "cooldown_seconds": 60},
				"read_scaling": map[string]any{"instance_size": "standard", "flock_size": tc.want, "cooldown_seconds": 60},
			}))
		})
	}
	// A refused PUT changes nothing.
	requireOK(t, putInstances(f, "robot", config(rw, map[string]any{"instance_size": "standard", "flock_size": 9})))
	requireError(t, putInstances(f, "robot", config(rw, map[string]any{"instance_size": "standard", "flock_size": 65})), 400)
	cfg := requireOK(t, instancesOf(f, "robot"))
	assert.EqualValues(t, 9, cfg["read_scaling"].(map[string]any)["flock_size"])
}

// DESIGN §7: cooldown_seconds is a whole number from 60 to 86400, on either
// non-pulse side.
func TestCooldownSecondsBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, side := range []string{"read_write", "read_scaling"} {
		for _, tc := range []struct {
			raw  string
			ok   bool
			want int
		}{
			{"59", false, 0}, {"60", true, 60}, {"86400", true, 86400}, {"86401", false, 0},
			{"60.0", true, 60}, {"60.5", false, 0}, {`"60"`, false, 0}, {"0", false, 0},
		} {
			t.Run(side+" "+tc.raw, func(t *testing.T) {
				f := f.with(t)
				rw := `{"instance_size":"jumbo"}`
				rs := `{"instance_size":"jumbo","flock_size":1}`
				if side == "read_write" {
					rw = `{"instance_size":"jumbo","cooldown_seconds":` + tc.raw + `}`
				} else {
					rs = `{"instance_size":"jumbo","flock_size":1,"cooldown_seconds":` + tc.raw + `}`
				}
				r := putInstances(f, "robot", `{"config":{"read_write":`+rw+`,"read_scaling":`+rs+`}}`)
				if !tc.ok {
					requireIssue(t, r, "config", side, "cooldown_seconds")
					return
				}
				got := requireOK(t, r)
				assert.EqualValues(t, tc.want, got[side].(map[string]any)["cooldown_seconds"])
			})
		}
	}
}

// DESIGN §7: cooldown_seconds may not be set on a pulse side, and pulse
// sides never show it.
func TestPulseHasNoCooldown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	is := requireIssue(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "pulse", "cooldown_seconds": 60},
		map[string]any{"instance_size": "standard", "flock_size": 1})), "config", "read_write", "cooldown_seconds")
	assert.Equal(t, "not_allowed", is.Code)
	requireIssue(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "standard"},
		map[string]any{"instance_size": "pulse", "flock_size": 1, "cooldown_seconds": 600})), "config", "read_scaling", "cooldown_seconds")

	want := `{"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"pulse","flock_size":2}}`
	requireJSON(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "pulse"},
		map[string]any{"instance_size": "pulse", "flock_size": 2})), want)
	requireJSON(t, instancesOf(f, "robot"), want)
	// A cooldown set on a size and then dropped by a switch to pulse is gone
	// for good: switching back shows the default again.
	requireOK(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "mega", "cooldown_seconds": 1000},
		map[string]any{"instance_size": "pulse", "flock_size": 2})))
	requireJSON(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "mega"},
		map[string]any{"instance_size": "mega", "flock_size": 2})),
		`{"read_write":{"instance_size":"mega","cooldown_seconds":300},"read_scaling":{"instance_size":"mega","flock_size":2,"cooldown_seconds":300}}`)
}

// DESIGN §7: unset cooldowns are standard 60, jumbo 60, mega 300, giga 600.
func TestEffectiveCooldownDefaults(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for size, want := range map[string]int{"standard": 60, "jumbo": 60, "mega": 300, "giga": 600} {
		t.Run(size, func(t *testing.T) {
			f := f.with(t)
			exp := jsonString(t, map[string]any{
				"read_write":   map[string]any{"instance_size": size, "cooldown_seconds": want},
				"read_scaling": map[string]any{"instance_size": size, "flock_size": 3, "cooldown_seconds": want},
			})
			requireJSON(t, f.do("PUT", userPath("bob", "instances"), bearer(f.bob), config(
				map[string]any{"instance_size": size},
				map[string]any{"instance_size": size, "flock_size": 3})), exp)
			requireJSON(t, f.do("GET", userPath("bob", "instances"), bearer(f.bob), nil), exp)
		})
	}
}

// SPEC: config, read_write, read_scaling, instance_size and flock_size are
// required; DESIGN §3: every problem is listed.
func TestInstanceConfigRequiredFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	rw := map[string]any{"instance_size": "standard"}
	rs := map[string]any{"instance_size": "standard", "flock_size": 4}
	for _, tc := range []struct {
		what string
		body any
		want [][]any
	}{
		{"config missing", map[string]any{}, [][]any{{"config"}}},
		{"config null", `{"config":null}`, [][]any{{"config"}}},
		{"config not an object", map[string]any{"config": []any{}}, [][]any{{"config"}}},
		{"read_write missing", map[string]any{"config": map[string]any{"read_scaling": rs}}, [][]any{{"config", "read_write"}}},
		{"read_scaling missing", map[string]any{"config": map[string]any{"read_write": rw}}, [][]any{{"config", "read_scaling"}}},
		{"both sides missing", map[string]any{"config": map[string]any{}}, [][]any{{"config", "read_write"}, {"config", "read_scaling"}}},
		{"instance_size missing", config(map[string]any{}, rs), [][]any{{"config", "read_write", "instance_size"}}},
		{"instance_size unknown", config(map[string]any{"instance_size": "huge"}, rs), [][]any{{"config", "read_write", "instance_size"}}},
		{"flock_size missing", config(rw, map[string]any{"instance_size": "standard"}), [][]any{{"config", "read_scaling", "flock_size"}}},
		{"several problems", config(
			map[string]any{"instance_size": "huge", "cooldown_seconds": 59},
			map[string]any{"instance_size": "pulse", "flock_size": 65, "cooldown_seconds": 60}),
			[][]any{
				{"config", "read_write", "instance_size"},
				{"config", "read_write", "cooldown_seconds"},
				{"config", "read_scaling", "flock_size"},
				{"config", "read_scaling", "cooldown_seconds"},
			}},
		{"type errors and range errors together", config(
			map[string]any{"instance_size": "tiny"},
			map[string]any{"instance_size": 3, "flock_size": "4", "cooldown_seconds": 1}),
			[][]any{
				{"config", "read_write", "instance_size"},
				{"config", "read_scaling", "instance_size"},
				{"config", "read_scaling", "flock_size"},
				{"config", "read_scaling", "cooldown_seconds"},
			}},
		{"everything missing in both sides", config(map[string]any{}, map[string]any{}),
			[][]any{
				{"config", "read_write", "instance_size"},
				{"config", "read_scaling", "instance_size"},
				{"config", "read_scaling", "flock_size"},
			}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			f := f.with(t)
			env := requireError(t, putInstances(f, "robot", tc.body), 400)
			want := make([]string, len(tc.want))
			for i, p := range tc.want {
				want[i] = pathKey(p...)
			}
			assert.ElementsMatch(t, want, env.paths())
		})
	}
	requireJSON(t, instancesOf(f, "robot"), `{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`)
}

// An instance_size given empty is a value outside the enumeration, as
// an empty token_type is; one not given is required.
func TestInstanceSizeEmptyIsOutsideTheEnumeration(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	rw := map[string]any{"instance_size": "standard"}
	rs := map[string]any{"instance_size": "standard", "flock_size": 4}
	const outside = "Invalid enum value. Expected 'pulse' | 'standard' | 'jumbo' | 'mega' | 'giga', received ''"
	for _, tc := range []struct {
		what string
		body any
		want issue
	}{
		{"read_write empty", config(map[string]any{"instance_size": ""}, rs),
			issue{outside, []any{"config", "read_write", "instance_size"}, "invalid_enum_value"}},
		{"read_scaling empty", config(rw, map[string]any{"instance_size": "", "flock_size": 4}),
			issue{outside, []any{"config", "read_scaling", "instance_size"}, "invalid_enum_value"}},
		{"read_write missing", config(map[string]any{}, rs),
			issue{"Required", []any{"config", "read_write", "instance_size"}, "invalid_type"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			env := requireError(t, putInstances(f.with(t), "robot", tc.body), 400)
			assert.Equal(t, []issue{tc.want}, env.Issues)
		})
	}
}

// DESIGN §2: any user may get and set their own configuration.
func TestMemberManagesOwnInstanceConfig(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireOK(t, f.do("GET", userPath("bob", "instances"), bearer(f.bob), nil))
	want := `{"read_write":{"instance_size":"jumbo","cooldown_seconds":60},"read_scaling":{"instance_size":"pulse","flock_size":1}}`
	requireJSON(t, f.do("PUT", userPath("Bob", "instances"), bearer(f.bob), config(
		map[string]any{"instance_size": "jumbo"},
		map[string]any{"instance_size": "pulse", "flock_size": 1})), want)
	requireJSON(t, f.do("GET", userPath("BOB", "instances"), bearer(f.bob), nil), want)
	requireJSON(t, instancesOf(f, "bob"), want)
	requireJSON(t, f.do("GET", userPath("robot", "instances"), bearer(f.robot), nil),
		`{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`)
	requireError(t, f.do("GET", userPath("robot", "instances"), bearer(f.bob), nil), 403)
}

// ---------------------------------------------------------------------------
// List users.

// listUsers calls GET /v1/users?query and decodes the page.
type userPage struct {
	Users         []map[string]any `json:"users"`
	TotalCount    int              `json:"total_count"`
	NextPageToken *string          `json:"next_page_token"`
}

func listUsers(tb testing.TB, w *world, token, query string) (userPage, response) {
	tb.Helper()
	r := w.do("GET", "/v1/users?"+query, bearer(token), nil)
	obj := requireOK(tb, r)
	require.Equal(tb, []string{"next_page_token", "total_count", "users"}, keys(obj), "body: %s", r.body)
	var p userPage
	require.NoError(tb, json.Unmarshal(r.body, &p))
	require.NotNil(tb, p.Users, "users is an array")
	return p, r
}

func usernames(p userPage) []string {
	out := make([]string, len(p.Users))
	for i, u := range p.Users {
		out[i] = u["username"].(string)
	}
	return out
}

// usersWorld is an org with an Admin "admin" (token returned) and nothing
// else.
func usersWorld(t *testing.T) (*world, string) {
	w := newWorld(t, orgadmin.Config{})
	w.createOrg(acme)
	w.createUser(acme, orgadmin.NewUser{Username: "admin", Role: orgadmin.RoleAdmin})
	tok, _ := w.seedToken(acme, "admin", orgadmin.CreateTokenInput{})
	return w, tok
}

// DESIGN §5: users are ordered by folded username.
func TestListUsersOrderedByFoldedUsername(t *testing.T) {
	t.Parallel()
	w, admin := usersWorld(t)
	for _, n := range []string{"bob", "Émile", "Alice", "zed", "Carl", "alf", "BOBBY", "b_1", "b1"} {
		w.createUser(acme, orgadmin.NewUser{Username: n, IsServiceAccount: true})
	}
	w.createUser("acme", orgadmin.NewUser{Username: "Zoë"})
	p, r := listUsers(t, w, admin, "")
	// Folded: admin alf alice b1 b_1 bob bobby carl zed zoë émile (byte order).
	assert.Equal(t, []string{"admin", "alf", "Alice", "b1", "b_1", "bob", "BOBBY", "Carl", "zed", "Zoë", "Émile"}, usernames(p))
	assert.Equal(t, 11, p.TotalCount)
	assert.Nil(t, p.NextPageToken)
	assert.Contains(t, string(r.body), `"next_page_token":null`)
}

// DESIGN §5: each user shows id, username, is_service_account, roles,
// created_ts, and description, email, first_name, last_name when set.
func TestListUsersFields(t *testing.T) {
	t.Parallel()
	w, admin := usersWorld(t)
	w.clock.Advance(time.Second)
	ann := w.createUser(acme, orgadmin.NewUser{Username: "Ann", Role: orgadmin.RoleAdmin, Description: "boss",
		Email: "ann@example.com", FirstName: "Ann", LastName: "Lee"})
	w.clock.Advance(time.Second)
	bot := w.createUser(acme, orgadmin.NewUser{Username: "bot", IsServiceAccount: true, Description: "ci"})
	w.clock.Advance(1500 * time.Millisecond)
	plain := w.createUser(acme, orgadmin.NewUser{Username: "plain"})
	adm, err := w.svc.GetUser(t.Context(), acme, "admin")
	require.NoError(t, err)

	_, r := listUsers(t, w, admin, "")
	want := map[string]any{
		"users": []any{
			map[string]any{"id": adm.ID, "username": "admin", "is_service_account": false, "roles": []any{"Admin"}, "created_ts": "2026-06-19T12:34:56.789Z"},
			map[string]any{"id": ann.ID, "username": "Ann", "is_service_account": false, "roles": []any{"Admin"}, "created_ts": "2026-06-19T12:34:57.789Z",
				"description": "boss", "email": "ann@example.com", "first_name": "Ann", "last_name": "Lee"},
			map[string]any{"id": bot.ID, "username": "bot", "is_service_account": true, "roles": []any{"Member"}, "created_ts": "2026-06-19T12:34:58.789Z", "description": "ci"},
			map[string]any{"id": plain.ID, "username": "plain", "is_service_account": false, "roles": []any{"Member"}, "created_ts": "2026-06-19T12:35:00.289Z"},
		},
		"total_count":     4,
		"next_page_token": nil,
	}
	require.JSONEq(t, jsonString(t, want), string(r.body))
	for _, u := range []orgadmin.User{adm, ann, bot, plain} {
		requireUUID(t, u.ID)
	}
	// A service account created over HTTP is listed as such.
	requireOK(t, w.do("POST", "/v1/users", bearer(admin), map[string]any{"username": "zz", "description": "made over http"}))
	p, _ := listUsers(t, w, admin, "offset=4")
	require.Len(t, p.Users, 1)
	u := p.Users[0]
	requireUUID(t, u["id"])
	delete(u, "id")
	assert.Equal(t, map[string]any{"username": "zz", "is_service_account": true, "roles": []any{"Member"},
		"created_ts": "2026-06-19T12:35:00.289Z", "description": "made over http"}, u)
}

// DESIGN §5: limit 1-1000 (default 100), offset 0 or more; anything else is
// a 400.
func TestListUsersLimitAndOffset(t *testing.T) {
	t.Parallel()
	w, admin := usersWorld(t)
	var all []string
	all = append(all, "admin")
	for i := range 149 {
		n := fmt.Sprintf("u%03d", i)
		w.createUser(acme, orgadmin.NewUser{Username: n})
		all = append(all, n)
	}
	p, _ := listUsers(t, w, admin, "")
	assert.Equal(t, all[:100], usernames(p), "default limit 100")
	assert.Equal(t, 150, p.TotalCount)
	assert.NotNil(t, p.NextPageToken)

	p, _ = listUsers(t, w, admin, "limit=1")
	assert.Equal(t, all[:1], usernames(p))
	assert.NotNil(t, p.NextPageToken)

	p, r := listUsers(t, w, admin, "limit=1000")
	assert.Equal(t, all, usernames(p))
	assert.Contains(t, string(r.body), `"next_page_token":null`)

	p, _ = listUsers(t, w, admin, "limit=10&offset=145")
	assert.Equal(t, all[145:], usernames(p))
	assert.Equal(t, 150, p.TotalCount)
	assert.Nil(t, p.NextPageToken)

	p, _ = listUsers(t, w, admin, "limit=10&offset=0")
	assert.Equal(t, all[:10], usernames(p))

	p, _ = listUsers(t, w, admin, "offset=1000")
	assert.Empty(t, p.Users)
	assert.Equal(t, 150, p.TotalCount)
	assert.Nil(t, p.NextPageToken)

	for _, tc := range []struct{ query, path, code string }{
		{"limit=0", "limit", "too_small"},
		{"limit=1001", "limit", "too_big"},
		{"limit=-1", "limit", "too_small"},
		{"limit=abc", "limit", "invalid_type"},
		{"limit=1.5", "limit", "invalid_type"},
		{"limit=", "limit", "invalid_type"},
		{"limit=99999999999999999999", "limit", "too_big"},
		{"offset=-1", "offset", "too_small"},
		{"offset=abc", "offset", "invalid_type"},
		{"is_service_account=yes", "is_service_account", "invalid_type"},
		{"is_service_account=1", "is_service_account", "invalid_type"},
		{"is_service_account=", "is_service_account", "invalid_type"},
		// Given twice: which value counts would be a guess.
		{"limit=1&limit=0", "limit", "invalid_type"},
		{"limit=5&limit=5", "limit", "invalid_type"},
		{"offset=1&offset=2", "offset", "invalid_type"},
		{"is_service_account=true&is_service_account=false", "is_service_account", "invalid_type"},
		{"page_token=dWFsaWNl&page_token=dWJvYg", "page_token", "invalid_type"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			w := w.with(t)
			is := requireIssue(t, w.do("GET", "/v1/users?"+tc.query, bearer(admin), nil), tc.path)
			assert.Equal(t, tc.code, is.Code)
		})
	}
	env := requireError(t, w.do("GET", "/v1/users?limit=0&offset=-1", bearer(admin), nil), 400)
	assert.ElementsMatch(t, []string{`["limit"]`, `["offset"]`}, env.paths())
}

// DESIGN §5: is_service_account filters, and total_count counts matches.
func TestListUsersServiceAccountFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "Bot2"}))
	p, _ := listUsers(t, f.world, f.admin, "is_service_account=true")
	assert.Equal(t, []string{"Bot2", "robot"}, usernames(p))
	assert.Equal(t, 2, p.TotalCount)
	for _, u := range p.Users {
		assert.Equal(t, true, u["is_service_account"])
	}
	p, _ = listUsers(t, f.world, f.admin, "is_service_account=false")
	assert.Equal(t, []string{"admin", "bob", "carol", "dave"}, usernames(p))
	assert.Equal(t, 4, p.TotalCount)
	p, _ = listUsers(t, f.world, f.admin, "is_service_account=false&limit=1&offset=1")
	assert.Equal(t, []string{"bob"}, usernames(p))
	assert.Equal(t, 4, p.TotalCount)
	assert.NotNil(t, p.NextPageToken)
	p, _ = listUsers(t, f.world, f.admin, "")
	assert.Equal(t, []string{"admin", "bob", "Bot2", "carol", "dave", "robot"}, usernames(p))
	assert.Equal(t, 6, p.TotalCount)
	// The org of the caller only; a view_all_members Member sees the same.
	p2, _ := listUsers(t, f.world, f.carol, "")
	assert.Equal(t, p, p2)
	p, _ = listUsers(t, f.world, f.boss, "")
	assert.Equal(t, []string{"boss", "stranger"}, usernames(p))
}

// DESIGN §5: walking next_page_token visits each user exactly once, in
// order; next_page_token is null on the last page.
func TestListUsersPageTokenWalk(t *testing.T) {
	t.Parallel()
	w, admin := usersWorld(t)
	want := []string{"admin"}
	for i := range 250 {
		n := fmt.Sprintf("user%03d", i)
		if i%3 == 0 {
			n = strings.ToUpper(n)
		}
		w.createUser(acme, orgadmin.NewUser{Username: n, IsServiceAccount: i%2 == 0})
		want = append(want, n)
	}
	slices.SortFunc(want, func(a, b string) int { return strings.Compare(orgadmin.FoldUsername(a), orgadmin.FoldUsername(b)) })

	for _, limit := range []int{1, 7, 100, 251, 1000} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			w := w.with(t)
			var seen []string
			query := fmt.Sprintf("limit=%d", limit)
			pages := 0
			for {
				p, r := listUsers(t, w, admin, query)
				pages++
				require.LessOrEqual(t, len(p.Users), limit)
				assert.Equal(t, 251, p.TotalCount)
				seen = append(seen, usernames(p)...)
				if p.NextPageToken == nil {
					assert.Contains(t, string(r.body), `"next_page_token":null`)
					break
				}
				require.NotEmpty(t, *p.NextPageToken)
				require.Less(t, pages, 300, "the walk ends")
				query = fmt.Sprintf("limit=%d&page_token=%s", limit, url.QueryEscape(*p.NextPageToken))
			}
			assert.Equal(t, want, seen)
			assert.Equal(t, (251+limit-1)/limit, pages)
		})
	}
	t.Run("filtered", func(t *testing.T) {
		w := w.with(t)
		var seen []string
		query := "limit=9&is_service_account=true"
		for {
			p, _ := listUsers(t, w, admin, query)
			assert.Equal(t, 125, p.TotalCount)
			seen = append(seen, usernames(p)...)
			if p.NextPageToken == nil {
				break
			}
			query = "limit=9&is_service_account=true&page_token=" + url.QueryEscape(*p.NextPageToken)
		}
		assert.Len(t, seen, 125)
		for _, n := range seen {
			u, err := w.svc.GetUser(t.Context(), acme, n)
			require.NoError(t, err)
			assert.True(t, u.IsServiceAccount)
		}
	})
}

// SPEC endpoint 5: page_token takes precedence over offset; DESIGN §5: a
// malformed page_token is a 400.
func TestListUsersPageTokenPrecedenceAndMalformed(t *testing.T) {
	t.Parallel()
	w, admin := usersWorld(t)
	for i := range 20 {
		w.createUser(acme, orgadmin.NewUser{Username: fmt.Sprintf("u%02d", i)})
	}
	first, _ := listUsers(t, w, admin, "limit=5")
	require.NotNil(t, first.NextPageToken)
	tok := url.QueryEscape(*first.NextPageToken)
	byToken, _ := listUsers(t, w, admin, "limit=5&page_token="+tok)
	byOffset, _ := listUsers(t, w, admin, "limit=5&offset=5")
	both, _ := listUsers(t, w, admin, "limit=5&offset=15&page_token="+tok)
	bothFirst, _ := listUsers(t, w, admin, "offset=15&page_token="+tok+"&limit=5")
	assert.Equal(t, []string{"u04", "u05", "u06", "u07", "u08"}, usernames(byToken))
	assert.Equal(t, usernames(byOffset), usernames(byToken))
	assert.Equal(t, byToken, both)
	assert.Equal(t, byToken, bothFirst)
	// An empty page_token, as clients send for the first page, is absent.
	emptyToken, _ := listUsers(t, w, admin, "limit=5&offset=5&page_token=")
	assert.Equal(t, usernames(byOffset), usernames(emptyToken))

	// Cursors no user's name can be: "a\x00", "bob\x00" (a NUL, which a
	// store's keys may use as a separator), "1abc", "a b".
	for _, bad := range []string{"!!!", "Zm9v", "dQ", "%00", "x", strings.Repeat("A", 3000), "dWEA", "dWJvYgA", "dTFhYmM", "dWEgYg"} {
		t.Run(bad[:min(len(bad), 10)], func(t *testing.T) {
			w := w.with(t)
			is := requireIssue(t, w.do("GET", "/v1/users?page_token="+url.QueryEscape(bad), bearer(admin), nil), "page_token")
			assert.NotEmpty(t, is.Message)
			requireIssue(t, w.do("GET", "/v1/users?offset=1&page_token="+url.QueryEscape(bad), bearer(admin), nil), "page_token")
		})
	}
}

// ---------------------------------------------------------------------------
// Delete user.

// DESIGN §5: deleting a user removes it and all its data; the username can
// be created again and the old credentials stay dead.
func TestDeleteUserCascades(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ctx := t.Context()
	requireOK(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "giga"},
		map[string]any{"instance_size": "giga", "flock_size": 8})))
	minted := requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "x"}))["token"].(string)
	session := requireOK(t, f.do("POST", "/v1/dives/"+acmeDiveID+"/embed-session", bearer(f.admin), map[string]any{"username": "robot"}))["session"].(string)
	_, err := f.svc.ResolveEmbedSession(ctx, session)
	require.NoError(t, err)
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "robot", "rw"))
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "bob", "rw"))
	requireJSON(t, f.do("GET", "/v1/active_accounts", bearer(f.admin), nil),
		`{"accounts":[{"username":"bob","ducklings":[{"id":"rw","type":"read_write","status":"active"}]},{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"active"}]}]}`)

	requireJSON(t, f.do("DELETE", userPath("Robot"), bearer(f.admin), nil), `{"username":"robot"}`)

	for _, tok := range []string{f.robot, minted} {
		requireError(t, f.do("GET", userPath("robot", "tokens"), bearer(tok), nil), 401)
	}
	requireError(t, instancesOf(f, "robot"), 404)
	requireError(t, f.do("GET", userPath("robot", "tokens"), bearer(f.admin), nil), 404)
	requireError(t, f.do("DELETE", userPath("robot"), bearer(f.admin), nil), 404)
	requireJSON(t, f.do("GET", "/v1/active_accounts", bearer(f.admin), nil),
		`{"accounts":[{"username":"bob","ducklings":[{"id":"rw","type":"read_write","status":"active"}]}]}`)
	_, err = f.svc.ResolveEmbedSession(ctx, session)
	require.ErrorIs(t, err, orgadmin.ErrNotFound)
	p, _ := listUsers(t, f.world, f.admin, "")
	assert.Equal(t, []string{"admin", "bob", "carol", "dave"}, usernames(p))

	// The username is free again; nothing of the old user comes back.
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "ROBOT"}), `{"username":"ROBOT"}`)
	for _, tok := range []string{f.robot, minted} {
		requireError(t, f.do("GET", userPath("robot", "tokens"), bearer(tok), nil), 401)
	}
	assert.Empty(t, listTokens(t, f.world, f.admin, "robot"))
	requireJSON(t, instancesOf(f, "robot"), `{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`)
	requireJSON(t, f.do("GET", "/v1/active_accounts", bearer(f.admin), nil),
		`{"accounts":[{"username":"bob","ducklings":[{"id":"rw","type":"read_write","status":"active"}]}]}`)
	_, err = f.svc.ResolveEmbedSession(ctx, session)
	require.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// DESIGN §2: an Admin may delete a human user too, and the deleted user's
// own token stops working.
func TestDeleteHumanUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireJSON(t, f.do("DELETE", userPath("BOB"), bearer(f.admin), nil), `{"username":"bob"}`)
	requireError(t, f.do("GET", userPath("bob", "instances"), bearer(f.bob), nil), 401)
	assert.False(t, f.userExists(acme, "bob"))
}

// ---------------------------------------------------------------------------
// Active accounts.

func activeAccounts(f *fixture) response {
	return f.do("GET", "/v1/active_accounts", bearer(f.admin), nil)
}

// DESIGN §8: active is active; idle at t is cooldown until t + the
// effective cooldown of its side, then not running.
func TestActiveAccountsStatusAndCooldown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ctx := t.Context()
	requireJSON(t, activeAccounts(f), `{"accounts":[]}`)
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "robot", "rw"))
	require.NoError(t, f.svc.MarkDucklingIdle(ctx, acme, "robot", "rs.0"))
	both := `{"accounts":[{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"active"},{"id":"rs.0","type":"read_scaling","status":"cooldown"}]}]}`
	requireJSON(t, activeAccounts(f), both)

	f.clock.Advance(59*time.Second + 999*time.Millisecond)
	requireJSON(t, activeAccounts(f), both)
	f.clock.Advance(time.Millisecond) // standard: 60 s
	requireJSON(t, activeAccounts(f), `{"accounts":[{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"active"}]}]}`)

	// Going idle starts the cooldown of the read-write side.
	require.NoError(t, f.svc.MarkDucklingIdle(ctx, acme, "robot", "rw"))
	requireJSON(t, activeAccounts(f), `{"accounts":[{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"}]}]}`)
	f.clock.Advance(time.Minute)
	requireJSON(t, activeAccounts(f), `{"accounts":[]}`)
	// Other orgs see nothing of it.
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "robot", "rw"))
	requireJSON(t, f.do("GET", "/v1/active_accounts", bearer(f.boss), nil), `{"accounts":[]}`)
}

// DESIGN §8: the cooldown is the effective one of the Duckling's side
// (set, or the size's default; pulse 1 second).
func TestActiveAccountsEffectiveCooldownPerSide(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ctx := t.Context()
	requireOK(t, putInstances(f, "robot", config(
		map[string]any{"instance_size": "giga"},
		map[string]any{"instance_size": "mega", "flock_size": 2, "cooldown_seconds": 90})))
	requireOK(t, putInstances(f, "dave", config(
		map[string]any{"instance_size": "pulse"},
		map[string]any{"instance_size": "mega", "flock_size": 1})))
	for _, d := range []struct{ user, id string }{{"robot", "rw"}, {"robot", "rs.1"}, {"dave", "rw"}, {"dave", "rs.0"}} {
		require.NoError(t, f.svc.MarkDucklingIdle(ctx, acme, d.user, d.id))
	}
	requireJSON(t, activeAccounts(f), `{"accounts":[
		{"username":"dave","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"},{"id":"rs.0","type":"read_scaling","status":"cooldown"}]},
		{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"},{"id":"rs.1","type":"read_scaling","status":"cooldown"}]}]}`)
	f.clock.Advance(time.Second) // pulse: 1 s
	requireJSON(t, activeAccounts(f), `{"accounts":[
		{"username":"dave","ducklings":[{"id":"rs.0","type":"read_scaling","status":"cooldown"}]},
		{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"},{"id":"rs.1","type":"read_scaling","status":"cooldown"}]}]}`)
	f.clock.Advance(89 * time.Second) // robot rs: 90 s as set
	requireJSON(t, activeAccounts(f), `{"accounts":[
		{"username":"dave","ducklings":[{"id":"rs.0","type":"read_scaling","status":"cooldown"}]},
		{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"}]}]}`)
	f.clock.Advance(210 * time.Second) // dave rs: mega 300 s
	requireJSON(t, activeAccounts(f), `{"accounts":[{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"}]}]}`)
	f.clock.Advance(299*time.Second + 999*time.Millisecond)
	requireJSON(t, activeAccounts(f), `{"accounts":[{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"}]}]}`)
	f.clock.Advance(time.Millisecond) // robot rw: giga 600 s
	requireJSON(t, activeAccounts(f), `{"accounts":[]}`)
}

// DESIGN §8: an active mark not renewed within the lease (10 minutes)
// counts as idle from its last renewal.
func TestActiveAccountsLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ctx := t.Context()
	requireOK(t, putInstances(f, "bob", config(
		map[string]any{"instance_size": "standard", "cooldown_seconds": 86400},
		map[string]any{"instance_size": "standard", "flock_size": 1})))
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "robot", "rw"))
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "bob", "rw"))
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "dave", "rw"))
	f.clock.Advance(5 * time.Minute)
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "dave", "rw")) // renewed
	f.clock.Advance(5*time.Minute - time.Millisecond)
	requireJSON(t, activeAccounts(f), `{"accounts":[
		{"username":"bob","ducklings":[{"id":"rw","type":"read_write","status":"active"}]},
		{"username":"dave","ducklings":[{"id":"rw","type":"read_write","status":"active"}]},
		{"username":"robot","ducklings":[{"id":"rw","type":"read_write","status":"active"}]}]}`)
	f.clock.Advance(time.Millisecond) // 10 minutes since robot's and bob's marks
	// robot: idle since 10 minutes, past its 60 s cooldown: gone. bob: idle
	// since 10 minutes, within its one-day cooldown. dave: renewed.
	requireJSON(t, activeAccounts(f), `{"accounts":[
		{"username":"bob","ducklings":[{"id":"rw","type":"read_write","status":"cooldown"}]},
		{"username":"dave","ducklings":[{"id":"rw","type":"read_write","status":"active"}]}]}`)
	f.clock.Advance(24*time.Hour - 10*time.Minute) // bob: a day after his last mark
	requireJSON(t, activeAccounts(f), `{"accounts":[]}`)
}

// DESIGN §8: rs.N runs only for N < flock_size; accounts are ordered by
// folded username; ducklings rw first, then rs.N by N numerically.
func TestActiveAccountsOrderingAndFlockBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ctx := t.Context()
	for _, n := range []string{"Zeta", "alpha", "Émile", "Beta"} {
		requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": n}))
	}
	requireOK(t, putInstances(f, "alpha", config(
		map[string]any{"instance_size": "standard"},
		map[string]any{"instance_size": "standard", "flock_size": 16})))
	for _, id := range []string{"rs.10", "rs.2", "rs.15", "rs.16", "rw", "rs.0", "rs.1"} {
		require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "alpha", id))
	}
	for _, n := range []string{"Zeta", "Émile", "Beta"} {
		require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, n, "rs.3"))
		require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, n, "rs.4")) // flock_size 4: not running
	}
	require.NoError(t, f.svc.MarkDucklingActive(ctx, acme, "robot", "rs.4")) // only a replica beyond the flock
	active := func(id, typ string) string {
		return fmt.Sprintf(`{"id":%q,"type":%q,"status":"active"}`, id, typ)
	}
	rs := func(n int) string { return active(fmt.Sprintf("rs.%d", n), "read_scaling") }
	want := `{"accounts":[
		{"username":"alpha","ducklings":[` + active("rw", "read_write") + `,` + rs(0) + `,` + rs(1) + `,` + rs(2) + `,` + rs(10) + `,` + rs(15) + `]},
		{"username":"Beta","ducklings":[` + rs(3) + `]},
		{"username":"Zeta","ducklings":[` + rs(3) + `]},
		{"username":"Émile","ducklings":[` + rs(3) + `]}]}`
	requireJSON(t, activeAccounts(f), want)

	// Shrinking the flock stops the replicas beyond it.
	requireOK(t, putInstances(f, "alpha", config(
		map[string]any{"instance_size": "standard"},
		map[string]any{"instance_size": "standard", "flock_size": 2})))
	requireOK(t, putInstances(f, "Beta", config(
		map[string]any{"instance_size": "standard"},
		map[string]any{"instance_size": "standard", "flock_size": 0})))
	want = `{"accounts":[
		{"username":"alpha","ducklings":[` + active("rw", "read_write") + `,` + rs(0) + `,` + rs(1) + `]},
		{"username":"Zeta","ducklings":[` + rs(3) + `]},
		{"username":"Émile","ducklings":[` + rs(3) + `]}]}`
	requireJSON(t, activeAccounts(f), want)
}

// ---------------------------------------------------------------------------
// Embed sessions.

func embedPath(diveID string) string { return "/v1/dives/" + diveID + "/embed-session" }

func (f *fixture) embed(diveID string, body any) response {
	return f.do("POST", embedPath(diveID), bearer(f.admin), body)
}

// embedSession creates a session and resolves it through the Go API.
func (f *fixture) embedSession(tb testing.TB, body any) orgadmin.EmbedSession {
	tb.Helper()
	r := f.embed(acmeDiveID, body)
	obj := requireOK(tb, r)
	require.Equal(tb, []string{"session"}, keys(obj))
	value, ok := obj["session"].(string)
	require.True(tb, ok && value != "", "session is a non-empty string: %s", r.body)
	s, err := f.svc.ResolveEmbedSession(tb.Context(), value)
	require.NoError(tb, err)
	return s
}

// DESIGN §9: the Dive must exist in the caller's org; dive_id is a uuid.
func TestEmbedSessionDive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	body := map[string]any{"username": "robot"}
	for _, bad := range []string{"not-a-uuid", "3f1c2a9e8b7d4c6e9f0a1b2c3d4e5f60", "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f6", "{" + acmeDiveID + "}"} {
		requireIssue(t, f.embed(url.PathEscape(bad), body), "dive_id")
	}
	env := requireError(t, f.embed("not-a-uuid", map[string]any{"username": "", "version": 0}), 400)
	assert.ElementsMatch(t, []string{`["dive_id"]`, `["username"]`, `["version"]`}, env.paths(), "every problem is listed")
	unknown := f.embed(missingID, body)
	requireError(t, unknown, 404)
	other := f.embed(globexDiveID, body)
	requireError(t, other, 404)
	assert.Equal(t, string(unknown.body), string(other.body))
	// The owner org can.
	requireOK(t, f.do("POST", embedPath(globexDiveID), bearer(f.boss), map[string]any{"username": "stranger"}))
	// Upper-case uuids name the same Dive.
	s := f.embedSession(t, body)
	assert.Equal(t, acmeDiveID, s.DiveID)
	requireOK(t, f.embed(strings.ToUpper(acmeDiveID), body))
}

// DESIGN §9: version ≥ 1 and at most the latest (404 beyond it).
func TestEmbedSessionVersion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, v := range []string{"0", "-1", "2.5", `"3"`, "true"} {
		requireIssue(t, f.embed(acmeDiveID, `{"username":"robot","version":`+v+`}`), "version")
	}
	requireError(t, f.embed(acmeDiveID, `{"username":"robot","version":4}`), 404)
	requireError(t, f.embed(acmeDiveID, `{"username":"robot","version":1e9}`), 404)
	assert.Equal(t, 3, f.embedSession(t, `{"username":"robot","version":3}`).Version)
	assert.Equal(t, 3, f.embedSession(t, `{"username":"robot","version":3.0}`).Version)
	assert.Equal(t, 1, f.embedSession(t, `{"username":"robot","version":1}`).Version)
	assert.Equal(t, 3, f.embedSession(t, `{"username":"robot"}`).Version, "latest when not pinned")
	assert.Equal(t, 3, f.embedSession(t, `{"username":"robot","version":null}`).Version, "null is absent")
}

// DESIGN §9: username must name a service account of the org.
func TestEmbedSessionUsername(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	missing := f.embed(acmeDiveID, map[string]any{"username": "nobody"})
	requireError(t, missing, 404)
	other := f.embed(acmeDiveID, map[string]any{"username": "stranger"})
	requireError(t, other, 404)
	assert.Equal(t, string(missing.body), string(other.body))
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "dave"}), "username")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "admin"}), "username")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": ""}), "username")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": strings.Repeat("a", 256)}), "username")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": strings.Repeat("é", 256)}), "username")
	requireError(t, f.embed(acmeDiveID, map[string]any{"username": strings.Repeat("é", 255)}), 404)
	requireIssue(t, f.embed(acmeDiveID, map[string]any{}), "username")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": nil}), "username")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": 1}), "username")
	s := f.embedSession(t, map[string]any{"username": "ROBOT"})
	assert.Equal(t, "robot", s.Username, "usernames fold; the stored spelling is used")
	assert.Equal(t, acme, s.Org)
}

// DESIGN §9: session_name and session_hint need at least 1 character;
// equal (org, username, session name) give equal affinity keys; the hint
// is used only without a name.
func TestEmbedSessionAffinity(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "robot", "session_name": ""}), "session_name")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "robot", "session_hint": ""}), "session_hint")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "robot", "session_name": "a", "session_hint": ""}), "session_hint")
	requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "robot2"}))

	key := func(body map[string]any) string { return f.embedSession(t, body).AffinityKey }
	a := key(map[string]any{"username": "robot", "session_name": "tab-1"})
	require.NotEmpty(t, a)
	assert.Equal(t, a, key(map[string]any{"username": "robot", "session_name": "tab-1"}))
	assert.Equal(t, a, key(map[string]any{"username": "Robot", "session_name": "tab-1"}), "usernames fold")
	assert.Equal(t, a, key(map[string]any{"username": "robot", "session_hint": "tab-1"}), "hint used without a name")
	assert.Equal(t, a, key(map[string]any{"username": "robot", "session_name": "tab-1", "session_hint": "other"}), "hint ignored with a name")
	assert.NotEqual(t, a, key(map[string]any{"username": "robot", "session_name": "tab-2"}))
	assert.NotEqual(t, a, key(map[string]any{"username": "robot", "session_name": "tab-2", "session_hint": "tab-1"}))
	assert.NotEqual(t, a, key(map[string]any{"username": "robot2", "session_name": "tab-1"}))
	assert.NotEqual(t, a, key(map[string]any{"username": "robot"}), "no name: no sharing")
	assert.NotEqual(t, key(map[string]any{"username": "robot"}), key(map[string]any{"username": "robot"}))
}

// DESIGN §9: required_resources items need url (≥ 1 char), alias
// optional; the request's replace the Dive's.
func TestEmbedSessionRequiredResources(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, tc := range []struct {
		body string
		path []any
	}{
		{`{"username":"robot","required_resources":[{"alias":"x"}]}`, []any{"required_resources", 0, "url"}},
		{`{"username":"robot","required_resources":[{"url":""}]}`, []any{"required_resources", 0, "url"}},
		{`{"username":"robot","required_resources":[{"url":null}]}`, []any{"required_resources", 0, "url"}},
		{`{"username":"robot","required_resources":[{"url":"md:a"},{"url":1}]}`, []any{"required_resources", 1, "url"}},
		{`{"username":"robot","required_resources":[{"url":"md:a","alias":2}]}`, []any{"required_resources", 0, "alias"}},
		{`{"username":"robot","required_resources":[{"url":"md:a"},"md:b"]}`, []any{"required_resources", 1}},
		{`{"username":"robot","required_resources":{"url":"md:a"}}`, []any{"required_resources"}},
		{`{"username":"robot","required_resources":"md:a"}`, []any{"required_resources"}},
	} {
		requireIssue(t, f.embed(acmeDiveID, tc.body), tc.path...)
	}
	env := requireError(t, f.embed(acmeDiveID, `{"username":"robot","required_resources":[{},{"url":"ok"},{"url":""}]}`), 400)
	assert.ElementsMatch(t, []string{`["required_resources",0,"url"]`, `["required_resources",2,"url"]`}, env.paths())

	s := f.embedSession(t, map[string]any{"username": "robot"})
	assert.Equal(t, []orgadmin.Resource{{URL: "md:sales", Alias: "s"}}, s.RequiredResources, "the Dive's own")
	s = f.embedSession(t, map[string]any{"username": "robot", "required_resources": nil})
	assert.Equal(t, []orgadmin.Resource{{URL: "md:sales", Alias: "s"}}, s.RequiredResources, "null is absent")
	s = f.embedSession(t, map[string]any{"username": "robot", "required_resources": []any{
		map[string]any{"url": "md:other"}, map[string]any{"url": "s3://b/x.parquet", "alias": "x"}}})
	assert.Equal(t, []orgadmin.Resource{{URL: "md:other"}, {URL: "s3://b/x.parquet", Alias: "x"}}, s.RequiredResources)
	s = f.embedSession(t, map[string]any{"username": "robot", "required_resources": []any{}})
	assert.Empty(t, s.RequiredResources, "an empty list replaces the Dive's")
}

// resourcesOfSize returns required_resources whose compact JSON is exactly n
// bytes.
func resourcesOfSize(tb testing.TB, n int) []map[string]string {
	tb.Helper()
	const k = 9 // items of {"url":"…"} (10 bytes + url), 8 commas, []
	total := n - 2 - (k - 1) - k*10
	items := make([]map[string]string, k)
	for i := range items {
		l := total / k
		if i < total%k {
			l++
		}
		items[i] = map[string]string{"url": strings.Repeat("u", l)}
	}
	require.Len(tb, jsonString(tb, items), n)
	return items
}

// DESIGN §9: required_resources is at most 8192 bytes of JSON in all.
func TestEmbedSessionRequiredResourcesSize(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "robot", "required_resources": resourcesOfSize(t, 8193)}), "required_resources")
	requireIssue(t, f.embed(acmeDiveID, map[string]any{"username": "robot", "required_resources": resourcesOfSize(t, 9000)}), "required_resources")
	for _, n := range []int{8191, 8192} {
		s := f.embedSession(t, map[string]any{"username": "robot", "required_resources": resourcesOfSize(t, n)})
		assert.Len(t, s.RequiredResources, 9, "%d bytes", n)
	}
}

// DESIGN §3 and §9: a body of up to 1 MiB is answered quickly, and in few
// bytes. A body at that limit made of required_resources items that each
// lack their url once took hours to answer, with or without a credential
// (each issue was looked for among those found before it), and then got
// an answer of 30 MB, an issue an item, that the Go client refuses to
// read (client.MaxResponseBytes): more items than can fit in 8192 bytes
// of JSON are one issue, and their items are not looked at.
func TestManyItemsInOneBodyAreOneIssue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	const head, tail = `{"username":"robot","required_resources":[`, `]}`
	n := (httpserver.DefaultMaxBodyBytes - len(head) - len(tail) + 1) / 3 // items "{}," but the last
	body := head + strings.Repeat("{},", n-1) + "{}" + tail
	require.LessOrEqual(t, len(body), httpserver.DefaultMaxBodyBytes)
	post := func(auth string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+embedPath(acmeDiveID), strings.NewReader(body))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := testHTTP.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}

	status, got := post("")
	require.Equal(t, http.StatusUnauthorized, status, "response: %.200s", got)
	require.Equal(t, `{"message":"Invalid Credentials","code":"UNAUTHORIZED"}`+"\n", got)

	tooMany := `{"message":"Bad Request","code":"BAD_REQUEST","issues":[{"message":"Array must contain at most 682 element(s)","path":["required_resources"],"code":"too_big"}]}` + "\n"
	status, got = post(bearer(f.admin))
	require.Equal(t, http.StatusBadRequest, status, "response: %.200s", got)
	require.Equal(t, tooMany, got)

	// At the bound: the most items that fit are taken, one more is refused
	// for its length alone, its items' own problems unlisted.
	items := func(n int, item string) string {
		return `{"username":"robot","required_resources":[` + strings.Repeat(item+",", n-1) + item + `]}`
	}
	require.Equal(t, 682, orgadmin.MaxResources)
	s := f.embedSession(t, items(orgadmin.MaxResources, `{"url":"x"}`))
	assert.Len(t, s.RequiredResources, orgadmin.MaxResources)
	r := f.embed(acmeDiveID, items(orgadmin.MaxResources+1, `{"url":"x"}`))
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, tooMany, string(r.body))
	r = f.embed(acmeDiveID, items(orgadmin.MaxResources+1, `{"url":1,"alias":[]}`))
	assert.Equal(t, tooMany, string(r.body))
	r = f.embed(acmeDiveID, items(orgadmin.MaxResources, `{"url":1}`))
	assert.Len(t, requireError(t, r, http.StatusBadRequest).Issues, orgadmin.MaxResources, "every item of a list that may be long enough is looked at")
}

// DESIGN §9: the 8192 bytes are of JSON as a client writes it, where
// "&", "<" and ">" take a byte each. (They were counted as encoding/json
// escapes them for HTML, six bytes each: URLs with query strings counted
// several times their size.)
func TestEmbedSessionRequiredResourcesSizeOfURLsWithQueries(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	const frame = `[{"url":""}]`
	urlOf := func(n int) string { // n bytes of a URL with a query
		u := "https://example.com/db?" + strings.Repeat("a=<b>&", n/6+1)
		return u[:n]
	}
	u := urlOf(orgadmin.MaxResourcesJSON - len(frame))
	s := f.embedSession(t, `{"username":"robot","required_resources":[{"url":"`+u+`"}]}`)
	assert.Equal(t, []orgadmin.Resource{{URL: u}}, s.RequiredResources)
	u = urlOf(2000)
	s = f.embedSession(t, `{"username":"robot","required_resources":[{"url":"`+u+`"},{"url":"`+u+`","alias":"a&b"}]}`)
	assert.Equal(t, []orgadmin.Resource{{URL: u}, {URL: u, Alias: "a&b"}}, s.RequiredResources)
	u = urlOf(orgadmin.MaxResourcesJSON - len(frame) + 1)
	is := requireIssue(t, f.embed(acmeDiveID, `{"username":"robot","required_resources":[{"url":"`+u+`"}]}`), "required_resources")
	assert.Equal(t, "too_big", is.Code)
}

// DESIGN §9: initial_state is a JSON object of at most 64 KiB, handed to
// the renderer as is.
func TestEmbedSessionInitialState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, bad := range []string{`[1]`, `"x"`, `5`, `true`, `[]`} {
		is := requireIssue(t, f.embed(acmeDiveID, `{"username":"robot","initial_state":`+bad+`}`), "initial_state")
		assert.Equal(t, "invalid_type", is.Code)
	}
	state := func(n int) string { // {"k":"…"} of n bytes
		return `{"k":"` + strings.Repeat("x", n-8) + `"}`
	}
	require.Len(t, state(65536), 65536)
	s := f.embedSession(t, `{"username":"robot","initial_state":`+state(65536)+`}`)
	assert.Equal(t, state(65536), string(s.InitialState))
	// Whitespace does not count: the state is measured compact.
	s = f.embedSession(t, `{"username":"robot","initial_state": {  "k" :  "`+strings.Repeat("x", 65528)+`" } }`)
	assert.Equal(t, state(65536), string(s.InitialState))
	is := requireIssue(t, f.embed(acmeDiveID, `{"username":"robot","initial_state":`+state(65537)+`}`), "initial_state")
	assert.Equal(t, "too_big", is.Code)

	s = f.embedSession(t, `{"username":"robot","initial_state":{"filters":{"region":"EU"},"page":2,"tags":["a","b"]}}`)
	assert.JSONEq(t, `{"filters":{"region":"EU"},"page":2,"tags":["a","b"]}`, string(s.InitialState))
	s = f.embedSession(t, `{"username":"robot","initial_state":{}}`)
	assert.JSONEq(t, `{}`, string(s.InitialState))
	s = f.embedSession(t, `{"username":"robot"}`)
	assert.Nil(t, s.InitialState)
}

// A service account holds at most Config.MaxEmbedSessionsPerUser live
// embed sessions: one more is a 400 with one issue at no path; expired
// sessions do not count, nor those of other accounts.
func TestEmbedSessionLimitPerUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{MaxEmbedSessionsPerUser: 2, EmbedSessionTTL: time.Hour})
	first := f.embedSession(t, `{"username":"robot"}`)
	f.clock.Advance(time.Minute)
	f.embedSession(t, `{"username":"robot","session_name":"lobby"}`)

	r := f.embed(acmeDiveID, `{"username":"robot","initial_state":{"k":"v"}}`)
	require.Equal(t, http.StatusBadRequest, r.status, "response: %s", r)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.JSONEq(t, `{"message":"Bad Request","code":"BAD_REQUEST","issues":[`+
		`{"message":"The service account holds the maximum number of embed sessions","path":[],"code":"too_big"}]}`, string(r.body))

	// Another service account has places of its own.
	requireJSON(t, f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "kiosk"}), `{"username":"kiosk"}`)
	f.embedSession(t, `{"username":"kiosk"}`)

	// The first session expires: its place is free, once.
	f.clock.Advance(time.Hour - time.Minute - time.Millisecond)
	requireError(t, f.embed(acmeDiveID, `{"username":"robot"}`), 400)
	f.clock.Advance(time.Millisecond)
	s := f.embedSession(t, `{"username":"ROBOT"}`)
	assert.Equal(t, first.ExpiresAt, s.CreatedAt, "created as the first expired")
	requireError(t, f.embed(acmeDiveID, `{"username":"robot"}`), 400)
}

// DESIGN §9: the answer is {"session"}; the Go API resolves it to the Dive,
// the pinned or latest version, the service account, the effective
// resources, the initial state; a session is not an API credential.
func TestEmbedSessionResolves(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	r := f.embed(acmeDiveID, map[string]any{
		"username": "robot", "version": 2, "session_name": "s",
		"required_resources": []any{map[string]any{"url": "md:x", "alias": "x"}},
		"initial_state":      map[string]any{"a": 1},
		"unknown_field":      true,
	})
	obj := requireOK(t, r)
	assert.Equal(t, []string{"session"}, keys(obj))
	value := obj["session"].(string)
	s, err := f.svc.ResolveEmbedSession(t.Context(), value)
	require.NoError(t, err)
	assert.Equal(t, acme, s.Org)
	assert.Equal(t, acmeDiveID, s.DiveID)
	assert.Equal(t, 2, s.Version)
	assert.Equal(t, "robot", s.Username)
	assert.Equal(t, []orgadmin.Resource{{URL: "md:x", Alias: "x"}}, s.RequiredResources)
	assert.JSONEq(t, `{"a":1}`, string(s.InitialState))
	assert.Equal(t, f.clock.Now().Truncate(time.Millisecond), s.CreatedAt.UTC())
	assert.Equal(t, 24*time.Hour, s.ExpiresAt.Sub(s.CreatedAt), "a session lives 24 hours")

	// A session value is not an API credential.
	for _, p := range []string{"/v1/active_accounts", userPath("robot", "instances"), userPath("robot", "tokens")} {
		requireError(t, f.do("GET", p, bearer(value), nil), 401)
	}
	// Unknown values do not resolve; sessions end after 24 hours.
	_, err = f.svc.ResolveEmbedSession(t.Context(), value+"x")
	require.ErrorIs(t, err, orgadmin.ErrNotFound)
	f.clock.Advance(24*time.Hour - time.Millisecond)
	_, err = f.svc.ResolveEmbedSession(t.Context(), value)
	require.NoError(t, err)
	f.clock.Advance(time.Millisecond)
	_, err = f.svc.ResolveEmbedSession(t.Context(), value)
	require.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// DESIGN §9 bounds a resource url and session_name only from below (and all
// resources together to 8192 bytes).
// A url is bounded only by the 8192 bytes of all resources; session names
// by orgadmin.MaxSessionName.
func TestEmbedSessionStringsAreNotBoundedBeyondTheSpec(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	t.Run("url of 2000 characters", func(t *testing.T) {
		f := f.with(t)
		url2000 := "md:" + strings.Repeat("u", 1997)
		s := f.embedSession(t, map[string]any{"username": "robot", "required_resources": []any{map[string]any{"url": url2000}}})
		assert.Equal(t, []orgadmin.Resource{{URL: url2000}}, s.RequiredResources)
	})
	t.Run("session_name of 2000 characters", func(t *testing.T) {
		f := f.with(t)
		name := strings.Repeat("n", 2000)
		a := f.embedSession(t, map[string]any{"username": "robot", "session_name": name})
		b := f.embedSession(t, map[string]any{"username": "robot", "session_hint": name})
		assert.Equal(t, a.AffinityKey, b.AffinityKey)
	})
	t.Run("session names of MaxSessionName and one more", func(t *testing.T) {
		f := f.with(t)
		for _, key := range []string{"session_name", "session_hint"} {
			f.embedSession(t, map[string]any{"username": "robot", key: strings.Repeat("é", orgadmin.MaxSessionName)})
			r := f.embed(acmeDiveID, map[string]any{"username": "robot", key: strings.Repeat("é", orgadmin.MaxSessionName+1)})
			requireError(t, r, 400)
			requireIssue(t, r, key)
		}
	})
}

// ---------------------------------------------------------------------------
// Bodies.

// DESIGN §3: bodies are JSON objects in valid UTF-8 of at most 1 MiB
// (400 otherwise, never 500); unknown fields are ignored; a field of the
// wrong type is a 400 issue at its path.
func TestRequestBodies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	ops := []struct {
		name, method, path string
		valid              string // a valid body, ending in "}"
	}{
		{"set instance config", "PUT", userPath("robot", "instances"), `{"config":{"read_write":{"instance_size":"standard"},"read_scaling":{"instance_size":"standard","flock_size":4}}}`},
		{"create service account", "POST", "/v1/users", `{"username":"bigbody"}`},
		{"create token", "POST", userPath("robot", "tokens"), `{"name":"x"}`},
		{"create embed session", "POST", embedPath(acmeDiveID), `{"username":"robot"}`},
	}
	pad := func(valid string, size int) string {
		return valid + strings.Repeat(" ", size-len(valid))
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			f := f.with(t)
			for _, bad := range []struct{ what, body string }{
				{"not JSON", `{"username":`},
				{"not JSON either", `hello`},
				{"trailing garbage", op.valid + `x`},
				{"two objects", op.valid + op.valid},
				{"JSON array", `[` + op.valid + `]`},
				{"JSON string", `"x"`},
				{"JSON number", `1`},
				{"JSON null", `null`},
				{"empty", ``},
				{"only whitespace", " \n\t "},
				{"invalid UTF-8", "{\"username\":\"\xff\xfe\",\"name\":\"\xc3\"}"},
				{"over 1 MiB", pad(op.valid, 1<<20+1)},
				{"far over 1 MiB", pad(op.valid, 3<<20)},
			} {
				t.Run(bad.what, func(t *testing.T) {
					f := f.with(t)
					env := requireError(t, f.do(op.method, op.path, bearer(f.admin), bad.body), 400)
					// The body as a whole is the one issue: none of its
					// fields is then reported missing.
					require.Len(t, env.Issues, 1, "issues: %+v", env.Issues)
					assert.Empty(t, env.Issues[0].Path)
				})
			}
			t.Run("exactly 1 MiB", func(t *testing.T) {
				f := f.with(t)
				requireOK(t, f.do(op.method, op.path, bearer(f.admin), pad(op.valid, 1<<20)))
			})
			t.Run("unknown fields are ignored", func(t *testing.T) {
				f := f.with(t)
				if op.name == "create service account" {
					requireOK(t, f.do("DELETE", userPath("bigbody"), bearer(f.admin), nil))
				}
				body := op.valid[:len(op.valid)-1] + `,"unknown":{"x":[1,2]},"role":"Admin","is_service_account":false}`
				requireOK(t, f.do(op.method, op.path, bearer(f.admin), body))
			})
		})
	}
	u, err := f.svc.GetUser(t.Context(), acme, "bigbody")
	require.NoError(t, err)
	assert.Equal(t, orgadmin.RoleMember, u.Role, "an unknown role field grants nothing")
	assert.True(t, u.IsServiceAccount)

	t.Run("wrong types", func(t *testing.T) {
		f := f.with(t)
		for _, tc := range []struct {
			method, path, body string
			at                 []any
		}{
			{"POST", "/v1/users", `{"username":5}`, []any{"username"}},
			{"POST", "/v1/users", `{"username":["a"]}`, []any{"username"}},
			{"POST", "/v1/users", `{"username":"ok1","description":5}`, []any{"description"}},
			{"POST", userPath("robot", "tokens"), `{"name":"x","description":true}`, []any{"description"}},
			{"POST", userPath("robot", "tokens"), `{"name":"x","token_type":1}`, []any{"token_type"}},
			{"PUT", userPath("robot", "instances"), `{"config":{"read_write":"standard","read_scaling":{"instance_size":"standard","flock_size":4}}}`, []any{"config", "read_write"}},
			{"PUT", userPath("robot", "instances"), `{"config":{"read_write":{"instance_size":5},"read_scaling":{"instance_size":"standard","flock_size":4}}}`, []any{"config", "read_write", "instance_size"}},
			{"PUT", userPath("robot", "instances"), `{"config":{"read_write":{"instance_size":"standard"},"read_scaling":{"instance_size":"standard","flock_size":"4"}}}`, []any{"config", "read_scaling", "flock_size"}},
			{"POST", embedPath(acmeDiveID), `{"username":"robot","session_name":1}`, []any{"session_name"}},
			{"POST", embedPath(acmeDiveID), `{"username":"robot","session_hint":{}}`, []any{"session_hint"}},
		} {
			is := requireIssue(t, f.do(tc.method, tc.path, bearer(f.admin), tc.body), tc.at...)
			assert.Equal(t, "invalid_type", is.Code, "%s", tc.body)
		}
		assert.False(t, f.userExists(acme, "ok1"))
	})
	// A key given twice is refused, at every depth that is read, rather
	// than the last one winning; in a field that is ignored it is ignored.
	t.Run("duplicate keys", func(t *testing.T) {
		f := f.with(t)
		const rs = `"read_scaling":{"instance_size":"standard","flock_size":4}`
		// Twenty members more, between the two.
		var many strings.Builder
		for i := range 20 {
			fmt.Fprintf(&many, `"x%d":%d,`, i, i)
		}
		for _, tc := range []struct {
			method, path, body string
			at                 []any
		}{
			{"POST", "/v1/users", `{"username":"dupa","username":"dupb"}`, []any{"username"}},
			{"POST", "/v1/users", `{"username":"dupa","description":"x","description":"y"}`, []any{"description"}},
			{"POST", "/v1/users", `{"username":"dupa","\u0075sername":"dupb"}`, []any{"username"}},
			{"POST", "/v1/users", `{"username":"dupa","description":"x",` + many.String() + `"description":"y","description":"z"}`, []any{"description"}},
			{"POST", "/v1/users", `{"username":"dupa",` + many.String() + `"username":"dupb"}`, []any{"username"}},
			{"POST", userPath("robot", "tokens"), `{"name":"x","ttl":60,"ttl":0}`, []any{"ttl"}},
			{"PUT", userPath("robot", "instances"), `{"config":{"read_write":{"instance_size":"standard"},"read_write":{"instance_size":"jumbo"},` + rs + `}}`, []any{"config", "read_write"}},
			{"PUT", userPath("robot", "instances"), `{"config":{"read_write":{"instance_size":"standard","instance_size":"jumbo"},` + rs + `}}`, []any{"config", "read_write", "instance_size"}},
			{"PUT", userPath("robot", "instances"), `{"config":{"read_write":{"instance_size":"jumbo"},` + rs + `},"config":{}}`, []any{"config"}},
			{"POST", embedPath(acmeDiveID), `{"username":"robot","required_resources":[{"url":"md:a","url":"md:b"}]}`, []any{"required_resources", 0, "url"}},
		} {
			env := requireError(t, f.do(tc.method, tc.path, bearer(f.admin), tc.body), 400)
			require.Len(t, env.Issues, 1, "%s: %+v", tc.body, env.Issues)
			is := env.issueAt(t, tc.at...)
			assert.Equal(t, "duplicate_key", is.Code, "%s", tc.body)
			assert.Equal(t, fmt.Sprintf("Duplicate key %q", tc.at[len(tc.at)-1]), is.Message, "%s", tc.body)
		}
		assert.False(t, f.userExists(acme, "dupa"))
		assert.False(t, f.userExists(acme, "dupb"))
		r := requireOK(t, f.do("GET", userPath("robot", "instances"), bearer(f.admin), nil))
		assert.Equal(t, "standard", r["read_write"].(map[string]any)["instance_size"], "no configuration was set")
		requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), `{"username":"dupc","unknown":{"a":1,"a":2}}`))
		requireOK(t, f.do("POST", "/v1/users", bearer(f.admin), `{"username":"dupd","unknown":1,"unknown":2}`))
		requireOK(t, f.do("PUT", userPath("robot", "instances"), bearer(f.admin), `{"config":{"read_write":{"instance_size":"standard","x":1,"x":2},`+rs+`,"y":1,"y":2}}`))
	})
	// Keys no operation reads, each given twice, fill a body of 1 MiB: the
	// answer lists what is wrong with what the operation reads, and no
	// more. (An issue a key once made the answer to 1 MiB of them 4 MB,
	// to any caller holding a token.)
	t.Run("duplicate keys that are not read", func(t *testing.T) {
		f := f.with(t)
		var body strings.Builder
		body.WriteString(`{"ttl":1`)
		for i := 0; body.Len() < httpserver.DefaultMaxBodyBytes-64; i++ {
			fmt.Fprintf(&body, `,"k%d":1,"k%d":1`, i, i)
		}
		body.WriteString(`}`)
		r := f.do("POST", userPath("robot", "tokens"), bearer(f.admin), body.String())
		require.Equal(t, http.StatusBadRequest, r.status)
		assert.JSONEq(t, `{"message":"Bad Request","code":"BAD_REQUEST","issues":[
			{"message":"Required","path":["name"],"code":"invalid_type"},
			{"message":"Number must be greater than or equal to 300","path":["ttl"],"code":"too_small"}]}`, string(r.body))
	})
	t.Run("type and rule problems are listed together", func(t *testing.T) {
		f := f.with(t)
		env := requireError(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), `{"name":"","ttl":"x","token_type":"nope"}`), 400)
		assert.ElementsMatch(t, []string{`["name"]`, `["ttl"]`, `["token_type"]`}, env.paths())
	})
}

// A body declared over the limit is not asked for: a client that sends
// "Expect: 100-continue" gets the answer, not "100 Continue", and it is
// the answer a body read in full would get (401 before 400, DESIGN §2).
func TestBodyDeclaredTooBigIsNotAskedFor(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	for _, tc := range []struct {
		auth   string
		status string
		body   string
	}{
		{"", "401 Unauthorized", `"code":"UNAUTHORIZED"`},
		{"Authorization: Bearer " + f.admin + "\r\n", "400 Bad Request", `"message":"Body must be at most 1048576 bytes","path":[],"code":"too_big"`},
	} {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = fmt.Fprintf(conn, "POST /v1/users HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", tc.auth, 2<<20)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, tc.status, resp.Status, "no 100 Continue first")
		assert.Contains(t, string(body), tc.body)
	}
}

// ---------------------------------------------------------------------------
// Routing.

// DESIGN §3: a path matching no route is a plain-text 404; a known path
// with a wrong method is a 405 with an Allow header.
func TestRouting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, p := range []string{"/v1/nope", "/v2/users", "/", "/v1", "/v1/users/robot/instances/extra", "/v1/users/robot/tokens/a/b", "/v1/dives/" + acmeDiveID} {
		for _, auth := range []string{"", bearer(f.admin)} {
			r := f.do("GET", p, auth, nil)
			assert.Equal(t, http.StatusNotFound, r.status, "GET %s", p)
			assert.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "text/plain"), "GET %s: %s", p, r.header.Get("Content-Type"))
			assert.False(t, json.Valid(r.body) && bytes.HasPrefix(bytes.TrimSpace(r.body), []byte("{")), "not a JSON body: %s", r.body)
		}
	}
	// Unclean paths are no route either: a 404, never a redirect to
	// their clean form, and nothing done.
	for _, tc := range []struct{ method, path string }{
		{"GET", "//v1/users"},
		{"GET", "/v1/./users"},
		{"GET", "/v1/users/../users"},
		{"GET", "/v1//users"},
		{"GET", "/v1/users/"},
		{"GET", "/v1/users/robot/tokens/."},
		{"DELETE", "//v1/users/robot"},
		{"DELETE", "/v1/users/./robot"},
		{"DELETE", "/v1/users/x/../robot"},
		{"POST", "/v1/./users"},
	} {
		r := f.do(tc.method, tc.path, bearer(f.admin), `{"username":"unclean"}`)
		assert.Equal(t, http.StatusNotFound, r.status, "%s %s", tc.method, tc.path)
		assert.Equal(t, "404 page not found\n", string(r.body), "%s %s", tc.method, tc.path)
		assert.Empty(t, r.header.Get("Location"), "%s %s", tc.method, tc.path)
	}
	assert.False(t, f.userExists(acme, "unclean"))
	// An escaped slash is part of its segment, as the ServeMux routes it:
	// the route answers, in JSON.
	r := f.do("GET", "/v1/users/%2Fb/instances", bearer(f.admin), nil)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"), "%d %s", r.status, r.body)
	for _, tc := range []struct {
		method, path string
		allow        []string
	}{
		{"PATCH", "/v1/users", []string{"GET", "POST"}},
		{"DELETE", "/v1/users", []string{"GET", "POST"}},
		{"PUT", "/v1/active_accounts", []string{"GET"}},
		{"POST", userPath("robot", "instances"), []string{"GET", "PUT"}},
		{"GET", userPath("robot"), []string{"DELETE"}},
		{"PUT", userPath("robot", "tokens"), []string{"GET", "POST"}},
		{"GET", userPath("robot", "tokens", missingID), []string{"DELETE"}},
		{"GET", embedPath(acmeDiveID), []string{"POST"}},
	} {
		r := f.do(tc.method, tc.path, bearer(f.admin), nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.status, "%s %s", tc.method, tc.path)
		allow := strings.Split(strings.ReplaceAll(r.header.Get("Allow"), " ", ""), ",")
		for _, m := range tc.allow {
			assert.Contains(t, allow, m, "%s %s: Allow %q", tc.method, tc.path, r.header.Get("Allow"))
		}
		for _, m := range allow {
			assert.Contains(t, append(tc.allow, "HEAD"), m, "%s %s: Allow %q", tc.method, tc.path, r.header.Get("Allow"))
		}
	}
	assert.True(t, f.userExists(acme, "robot"))
}

// The health check answers GET and HEAD; any other method is a 405 with
// an Allow header, as for every known path (DESIGN §3).
func TestHealthMethods(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	srv := httptest.NewServer(httpserver.Health(w.svc))
	t.Cleanup(srv.Close)
	r := doRequest(t, srv.URL, "GET", "/healthz", "", nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"status":"ok"}`, string(r.body))
	r = doRequest(t, srv.URL, "HEAD", "/healthz", "", nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Empty(t, r.body)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO"} {
		r := doRequest(t, srv.URL, m, "/healthz", "", nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.status, m)
		assert.Equal(t, "GET, HEAD", r.header.Get("Allow"), m)
	}
}

// ---------------------------------------------------------------------------
// Feedback.

func newFeedbackServer(t *testing.T, clock *fakeClock, svc *orgadmin.Service) *httptest.Server {
	srv := httptest.NewServer(httpserver.NewFeedback(svc, httpserver.FeedbackConfig{PerMinute: 2, Now: clock.Now, Logger: discardLogger()}))
	t.Cleanup(srv.Close)
	return srv
}

func feedback(t *testing.T, srv *httptest.Server, q url.Values) response {
	t.Helper()
	return doRequest(t, srv.URL, "GET", "/docs/api/feedback/agent?"+q.Encode(), "", nil)
}

// SPEC endpoint 11 and DESIGN §10: page_path and text required, text at
// most 2000 characters; 200 {"feedback_id": uuid}; no bearer needed.
func TestFeedbackParameters(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	text2000 := strings.Repeat("é", 2000)
	for _, tc := range []struct {
		what string
		q    url.Values
		bad  []any
	}{
		{"page_path missing", url.Values{"text": {"hi"}}, []any{"page_path"}},
		{"text missing", url.Values{"page_path": {"/docs/x"}}, []any{"text"}},
		{"text empty", url.Values{"page_path": {"/docs/x"}, "text": {""}}, []any{"text"}},
		{"page_path empty", url.Values{"page_path": {""}, "text": {"hi"}}, []any{"page_path"}},
		{"text 2001", url.Values{"page_path": {"/docs/x"}, "text": {text2000 + "x"}}, []any{"text"}},
		{"text 2000", url.Values{"page_path": {"/docs/x"}, "text": {text2000}}, nil},
		{"all fields", url.Values{"page_path": {"/docs/x"}, "text": {"good"}, "page_title": {"X"}, "source": {"cli"}}, nil},
		{"page_path at its limit", url.Values{"page_path": {strings.Repeat("p", orgadmin.MaxFeedbackPagePath)}, "text": {"hi"}}, nil},
		{"page_path over its limit", url.Values{"page_path": {strings.Repeat("p", orgadmin.MaxFeedbackPagePath+1)}, "text": {"hi"}}, []any{"page_path"}},
		{"page_title at its limit", url.Values{"page_path": {"/x"}, "text": {"hi"}, "page_title": {strings.Repeat("t", orgadmin.MaxFeedbackPageTitle)}}, nil},
		{"page_title over its limit", url.Values{"page_path": {"/x"}, "text": {"hi"}, "page_title": {strings.Repeat("t", orgadmin.MaxFeedbackPageTitle+1)}}, []any{"page_title"}},
		{"source at its limit", url.Values{"page_path": {"/x"}, "text": {"hi"}, "source": {strings.Repeat("s", orgadmin.MaxFeedbackSource)}}, nil},
		{"source over its limit", url.Values{"page_path": {"/x"}, "text": {"hi"}, "source": {strings.Repeat("s", orgadmin.MaxFeedbackSource+1)}}, []any{"source"}},
		{"text twice", url.Values{"page_path": {"/x"}, "text": {"hi", "there"}}, []any{"text"}},
		{"source twice", url.Values{"page_path": {"/x"}, "text": {"hi"}, "source": {"a", "a"}}, []any{"source"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			w := w.with(t)
			srv := newFeedbackServer(t, w.clock, w.svc) // a fresh rate limit
			r := feedback(t, srv, tc.q)
			if tc.bad != nil {
				requireIssue(t, r, tc.bad...)
				return
			}
			obj := requireOK(t, r)
			assert.Equal(t, []string{"feedback_id"}, keys(obj))
			requireUUID(t, obj["feedback_id"])
		})
	}
	srv := newFeedbackServer(t, w.clock, w.svc)
	env := requireError(t, feedback(t, srv, url.Values{}), 400)
	assert.ElementsMatch(t, []string{`["page_path"]`, `["text"]`}, env.paths())
	r := doRequest(t, srv.URL, "GET", "/docs/api/feedback/agent?page_path=%zz&text=x", "", nil)
	requireError(t, r, 400)
}

// DESIGN §10: 429 with Retry-After past the per-client rate.
func TestFeedbackRateLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	srv := newFeedbackServer(t, w.clock, w.svc)
	q := url.Values{"page_path": {"/docs/x"}, "text": {"hi"}}
	id1 := requireOK(t, feedback(t, srv, q))["feedback_id"]
	id2 := requireOK(t, feedback(t, srv, q))["feedback_id"]
	assert.NotEqual(t, id1, id2)

	r := feedback(t, srv, q)
	require.Equal(t, http.StatusTooManyRequests, r.status, "response: %s", r)
	require.JSONEq(t, `{"message":"Too Many Requests","code":"TOO_MANY_REQUESTS"}`, string(r.body))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", r.header.Get("Retry-After"))
	assert.Equal(t, 30, retry, "2 a minute: one more every 30 s")

	w.clock.Advance(29 * time.Second)
	requireError(t, feedback(t, srv, q), 429)
	w.clock.Advance(time.Second)
	requireOK(t, feedback(t, srv, q))
	requireError(t, feedback(t, srv, q), 429)
	w.clock.Advance(time.Minute)
	requireOK(t, feedback(t, srv, q))
	requireOK(t, feedback(t, srv, q))
	requireError(t, feedback(t, srv, q), 429)
}

// retryAfter asserts a 429 and returns its Retry-After in seconds.
func retryAfter(tb testing.TB, r response) int {
	tb.Helper()
	requireError(tb, r, http.StatusTooManyRequests)
	s, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(tb, err, "Retry-After: %q", r.header.Get("Retry-After"))
	return s
}

// DESIGN §10: the rate is per client, 10 a minute by default, refilled
// evenly (one every 6 s), never beyond 10; Retry-After is the wait in
// whole seconds, rounded up; a request refused for the rate spends
// nothing, so asking again at once is told the same wait.
func TestFeedbackRatePerClient(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	srv := httptest.NewServer(httpserver.NewFeedback(w.svc, httpserver.FeedbackConfig{
		Now: w.clock.Now, Logger: discardLogger(),
		ClientKey: func(r *http.Request) string { return r.URL.Query().Get("source") },
	}))
	t.Cleanup(srv.Close)
	from := func(client string) response {
		t.Helper()
		return feedback(t, srv, url.Values{"page_path": {"/docs/x"}, "text": {"hi"}, "source": {client}})
	}
	for range 10 {
		requireOK(t, from("a"))
	}
	assert.Equal(t, 6, retryAfter(t, from("a")))
	assert.Equal(t, 6, retryAfter(t, from("a")), "a refusal spends nothing")
	for range 10 {
		requireOK(t, from("b"))
	}
	assert.Equal(t, 6, retryAfter(t, from("b")), "b has a budget of its own")

	w.clock.Advance(4500 * time.Millisecond)
	assert.Equal(t, 2, retryAfter(t, from("a")), "1.5 s, rounded up")
	w.clock.Advance(time.Second)
	assert.Equal(t, 1, retryAfter(t, from("a")), "0.5 s, rounded up")
	w.clock.Advance(500 * time.Millisecond)
	requireOK(t, from("a"))
	assert.Equal(t, 6, retryAfter(t, from("a")))

	w.clock.Advance(time.Hour)
	for range 10 {
		requireOK(t, from("a"))
	}
	assert.Equal(t, 6, retryAfter(t, from("a")), "an hour's wait refills 10, no more")
}

// Without a ClientKey, a client is its IPv4 address, or the /64 network
// of its IPv6 address: one host customarily holds a whole /64, and would
// otherwise submit at will, from address after address, and push every
// other client out of the handler's memory.
func TestFeedbackClientIsAnIPv4AddressOrAnIPv6Network(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	h := httpserver.NewFeedback(w.svc, httpserver.FeedbackConfig{Now: w.clock.Now, Logger: discardLogger()})
	from := func(remote string) int {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "/docs/api/feedback/agent?page_path=%2Fdocs&text=hi", nil)
		r.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	for i := range 10 {
		require.Equal(t, http.StatusOK, from(fmt.Sprintf("[2001:db8:1:2::%x]:%d", i+1, 40000+i)), "submission %d", i)
	}
	assert.Equal(t, http.StatusTooManyRequests, from("[2001:db8:1:2:ffff:ffff:ffff:ffff]:1"), "the same /64")
	assert.Equal(t, http.StatusTooManyRequests, from("[2001:db8:1:2::1%eth0]:1"), "the same /64, with a zone")
	assert.Equal(t, http.StatusOK, from("[2001:db8:1:3::1]:1"), "another /64")

	for i := range 10 {
		require.Equal(t, http.StatusOK, from(fmt.Sprintf("192.0.2.1:%d", 40000+i)), "submission %d", i)
	}
	assert.Equal(t, http.StatusTooManyRequests, from("[::ffff:192.0.2.1]:1"), "an IPv4-mapped address is its IPv4 address")
	assert.Equal(t, http.StatusOK, from("192.0.2.2:1"), "another IPv4 address")
}

// A request refused as malformed does not count against the rate: it
// gives back its token whole, whatever is left of the budget.
func TestFeedbackBadRequestsDoNotCount(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	srv := newFeedbackServer(t, w.clock, w.svc) // 2 a minute
	bad := url.Values{"text": {"no page"}}
	for range 5 {
		requireError(t, feedback(t, srv, bad), 400)
	}
	q := url.Values{"page_path": {"/docs/x"}, "text": {"hi"}}
	requireOK(t, feedback(t, srv, q))
	requireOK(t, feedback(t, srv, q))
	requireError(t, feedback(t, srv, q), 429)

	// After 45 s, one and a half submissions are due.
	w.clock.Advance(45 * time.Second)
	for range 5 {
		requireError(t, feedback(t, srv, bad), 400)
	}
	requireOK(t, feedback(t, srv, q))
	assert.Equal(t, 15, retryAfter(t, feedback(t, srv, q)), "half a submission is left")
}

// feedbackCounter is a store that counts the feedback stored through it.
type feedbackCounter struct {
	storage.Store
	added atomic.Int64
}

func (s *feedbackCounter) AddFeedback(ctx context.Context, f storage.Feedback) error {
	s.added.Add(1)
	return s.Store.AddFeedback(ctx, f)
}

// A HEAD has no side effects: the feedback endpoint, which submits on GET,
// answers any other method, HEAD included, 405 with Allow: GET; it stores
// nothing and spends none of the client's rate.
func TestFeedbackHeadSubmitsNothing(t *testing.T) {
	t.Parallel()
	store := &feedbackCounter{Store: memstore.New()}
	w := newWorldWith(t, orgadmin.Config{}, worldOptions{store: store})
	srv := newFeedbackServer(t, w.clock, w.svc) // 2 a minute
	q := url.Values{"page_path": {"/docs/x"}, "text": {"hi"}}
	for _, method := range []string{"HEAD", "HEAD", "HEAD", "HEAD", "HEAD", "POST", "PUT", "DELETE"} {
		r := doRequest(t, srv.URL, method, "/docs/api/feedback/agent?"+q.Encode(), "", nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.status, "%s: %s", method, r)
		assert.Equal(t, "GET", r.header.Get("Allow"), method)
	}
	assert.Zero(t, store.added.Load(), "feedback stored by a request other than GET")

	// The client still has its whole budget.
	requireOK(t, feedback(t, srv, q))
	requireOK(t, feedback(t, srv, q))
	requireError(t, feedback(t, srv, q), 429)
	assert.Equal(t, int64(2), store.added.Load())
}

// ---------------------------------------------------------------------------
// Logging and internal errors.

// DESIGN §12 and httpserver: one structured line per request, never a
// token value.
func TestRequestLogHasOneLineAndNoToken(t *testing.T) {
	t.Parallel()
	for _, to := range []string{"Logger", "RequestLog"} {
		t.Run(to, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, orgadmin.Config{})
			var buf, other syncBuffer
			cfg := httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
			if to == "RequestLog" {
				cfg = httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&other, nil)), RequestLog: &buf}
			}
			srv := httptest.NewServer(httpserver.New(f.svc, cfg))
			t.Cleanup(srv.Close)

			r := doRequest(t, srv.URL, "POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "logged"})
			minted := requireOK(t, r)["token"].(string)
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			require.Len(t, lines, 1, "log: %s", buf.String())
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(lines[0]), &line))
			assert.Equal(t, "POST", line["method"])
			assert.Equal(t, "/v1/users/robot/tokens", line["path"])
			assert.EqualValues(t, 200, line["status"])
			assert.Equal(t, r.header.Get("X-Request-Id"), line["request_id"])
			assert.NotContains(t, buf.String(), f.admin)
			assert.NotContains(t, buf.String(), minted)

			// Refused credentials and query strings are not logged either.
			buf.Reset()
			requireError(t, doRequest(t, srv.URL, "GET", "/v1/users?page_token="+url.QueryEscape(minted), bearer(minted+"x"), nil), 401)
			requireOK(t, doRequest(t, srv.URL, "GET", userPath("robot", "tokens"), bearer(minted), nil))
			lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
			require.Len(t, lines, 2, "log: %s", buf.String())
			assert.NotContains(t, buf.String(), minted)
			assert.Empty(t, other.String(), "the Logger, when RequestLog takes the request lines")
		})
	}
}

// syncBuffer is a log destination safe for the server's goroutines.
type syncBuffer = testdb.SyncBuffer

// failingStore is a memory store whose activity listing fails.
type failingStore struct {
	*memstore.Store
}

func (failingStore) ListActivity(context.Context, string) ([]storage.Activity, error) {
	return nil, errors.New("disk on fire at /var/lib/secret.db")
}

// panickingStore panics where failingStore fails.
type panickingStore struct {
	*memstore.Store
}

func (panickingStore) ListActivity(context.Context, string) ([]storage.Activity, error) {
	panic("disk on fire at /var/lib/secret.db")
}

// DESIGN §3: a 500 never leaks internals; the cause (an error, or a
// panic) is logged with the request id: the Handler's own, or that of a
// LogRequests around it.
func TestInternalErrorDoesNotLeak(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wrapped bool
		store   storage.Store
	}{
		{false, failingStore{memstore.New()}},
		{true, failingStore{memstore.New()}},
		{false, panickingStore{memstore.New()}},
		{true, panickingStore{memstore.New()}},
	} {
		wrapped := tc.wrapped
		clock := newFakeClock()
		svc := orgadmin.New(tc.store, orgadmin.Config{Now: clock.Now})
		token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: acme, Username: "admin"})
		require.NoError(t, err)
		var buf syncBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, nil))
		var h http.Handler = httpserver.New(svc, httpserver.Config{Logger: logger})
		if wrapped {
			h = httpserver.LogRequests(logger, h)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)

		r := doRequest(t, srv.URL, "GET", "/v1/active_accounts", bearer(token), nil)
		requireError(t, r, 500)
		assert.JSONEq(t, `{"message":"Internal Error","code":"INTERNAL_SERVER_ERROR"}`, string(r.body))
		assert.NotContains(t, string(r.body), "secret")
		log := buf.String()
		assert.NotContains(t, log, token)
		// The cause is on its own line, with the id of the request line and
		// of the answer's only X-Request-Id.
		require.Len(t, r.header.Values("X-Request-Id"), 1)
		id := r.header.Get("X-Request-Id")
		require.Len(t, id, 16)
		var msgs []string
		for l := range strings.Lines(log) {
			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &line), l)
			msgs = append(msgs, line["msg"].(string))
			assert.Equal(t, id, line["request_id"], l)
			if line["msg"] == "internal error" {
				assert.Contains(t, line["error"], "disk on fire")
			}
		}
		assert.Equal(t, []string{"internal error", "request"}, msgs, "wrapped: %v, %T", wrapped, tc.store)
	}
}

// A panic inside a handler answers the 500 envelope and is logged, never a
// dropped connection.
func TestPanicAnswersInternalError(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h := httpserver.LogRequests(logger, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	srv := httptest.NewServer(h)
	defer srv.Close()
	r := doRequest(t, srv.URL, "GET", "/v1/users", "", nil)
	requireError(t, r, 500)
	assert.JSONEq(t, `{"message":"Internal Error","code":"INTERNAL_SERVER_ERROR"}`, string(r.body))
	assert.Contains(t, logs.String(), "panic: boom")
	assert.Contains(t, logs.String(), `"status":500`)
}

// encoding/json turns a lone surrogate escape into U+FFFD without a word;
// the API refuses it instead, while a real U+FFFD, literal or escaped, is
// an ordinary character.
func TestLoneSurrogateEscapesAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, name := range []string{`\ud800`, `a\udfffb`, `\ud800\u0041`} {
		r := f.do("POST", userPath("admin", "tokens"), bearer(f.admin), `{"name":"`+name+`"}`)
		requireError(t, r, 400)
		requireIssue(t, r, "name")
	}
	for _, name := range []string{`\ufffd`, "\uFFFD", `\ud83d\ude00`} {
		r := f.do("POST", userPath("admin", "tokens"), bearer(f.admin), `{"name":"`+name+`"}`)
		requireOK(t, r)
	}
}

// stallingStore is a memory store whose activity listing and ping wait
// for their caller's context to end, as a networked store's would for a
// client that hung up.
type stallingStore struct {
	*memstore.Store
	entered chan struct{}
}

func (s stallingStore) Ping(ctx context.Context) error {
	close(s.entered)
	<-ctx.Done()
	return fmt.Errorf("ping: %w", ctx.Err())
}

func (s stallingStore) ListActivity(ctx context.Context, _ string) ([]storage.Activity, error) {
	close(s.entered)
	<-ctx.Done()
	return nil, fmt.Errorf("list activity: %w", ctx.Err())
}

// hangUpDuring sends GET url (with the Authorization header auth, unless
// it is empty) and hangs up once the request reaches the store.
func (s stallingStore) hangUpDuring(t *testing.T, url, auth string) {
	t.Helper()
	ctx, hangUp := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	done := make(chan error, 1)
	go func() {
		res, err := testHTTP.Do(req)
		if err == nil {
			res.Body.Close()
		}
		done <- err
	}()
	<-s.entered
	hangUp()
	require.ErrorIs(t, <-done, context.Canceled)
}

// A client that hangs up is no server failure: its request is logged at
// INFO with status 499, as nginx logs it, and no internal error is.
func TestClientHangUpIsNoInternalError(t *testing.T) {
	t.Parallel()
	store := stallingStore{memstore.New(), make(chan struct{})}
	svc := orgadmin.New(store, orgadmin.Config{})
	token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: acme, Username: "admin"})
	require.NoError(t, err)
	var buf syncBuffer
	srv := httptest.NewServer(httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}))
	t.Cleanup(srv.Close)

	store.hangUpDuring(t, srv.URL+"/v1/active_accounts", bearer(token))
	var line map[string]any
	require.Eventually(t, func() bool { return buf.String() != "" }, 10*time.Second, 5*time.Millisecond)
	log := buf.String()
	require.Equal(t, 1, strings.Count(log, "\n"), "one line, the request's: %s", log)
	require.NoError(t, json.Unmarshal([]byte(log), &line))
	assert.Equal(t, "request", line["msg"])
	assert.Equal(t, "INFO", line["level"])
	assert.EqualValues(t, httpserver.StatusClientClosedRequest, line["status"])
	assert.NotContains(t, log, token)
}

// A health check whose client hangs up is a 499 too, not the 503 of a
// store that does not answer.
func TestHealthClientHangUp(t *testing.T) {
	t.Parallel()
	store := stallingStore{memstore.New(), make(chan struct{})}
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	srv := httptest.NewServer(httpserver.LogRequests(log, httpserver.Health(orgadmin.New(store, orgadmin.Config{}))))
	t.Cleanup(srv.Close)
	store.hangUpDuring(t, srv.URL+"/healthz", "")
	require.Eventually(t, func() bool { return buf.String() != "" }, 10*time.Second, 5*time.Millisecond)
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(buf.String()), &line))
	assert.EqualValues(t, httpserver.StatusClientClosedRequest, line["status"])
}

// A query string that does not parse is a 400 with one issue of its own,
// "Malformed query string" at the path [], on every route that reads
// one; no parameter of it is read.
func TestMalformedQueryStringOnEveryQueryRoute(t *testing.T) {
	t.Parallel()
	w, admin := usersWorld(t)
	for _, path := range []string{"/v1/users?limit=5&x=%zz", "/ext/audit/events?limit=5&x=%zz"} {
		env := requireError(t, doRequest(t, w.srv.URL, "GET", path, "Bearer "+admin, nil), 400)
		require.Len(t, env.Issues, 1, path)
		assert.Equal(t, "Malformed query string", env.Issues[0].Message, path)
		assert.Equal(t, []string{"[]"}, env.paths(), path)
	}
	srv := newFeedbackServer(t, w.clock, w.svc)
	env := requireError(t, doRequest(t, srv.URL, "GET", "/docs/api/feedback/agent?page_path=%zz&text=x", "", nil), 400)
	require.Len(t, env.Issues, 1)
	assert.Equal(t, "Malformed query string", env.Issues[0].Message)
}
