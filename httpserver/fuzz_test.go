package httpserver_test

// Fuzz targets of the /v1 Handler (and of the feedback endpoint). Each
// input runs against a pristine copy of the standard fixture (see fixture)
// on the memory store, served in-process, and every answer must keep the
// invariants of checkAnswer: no panic, no 5xx, every error the JSON
// envelope of DESIGN §3 with the code matching the status, the exchange
// as the OpenAPI document describes it (checkExchange), and nothing stored
// by a refused request. scripts/fuzz.sh runs each target for a few
// seconds; testdata/fuzz holds their curated seed corpora, which a plain go
// test replays with the f.Add seeds.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// fuzzWorld is the standard fixture served in-process, on a store that
// counts its writes. Ids and minted secrets come from a fixed seed, so that
// every world has the same token ids and a corpus entry can name one.
type fuzzWorld struct {
	store *servicetest.Counter
	svc   *orgadmin.Service
	h     http.Handler
	// tokens holds a read_write token value of each user that has one.
	tokens map[string]string
	// tokenIDs holds the id of that token.
	tokenIDs map[string]string
	// readScaling is a read_scaling token of robot; expired one of bob's
	// that expired.
	readScaling, expired string
	// writes counts the store's writes once the fixture was built.
	writes int64
}

// fuzzUsers are the users of the standard fixture, by org.
var fuzzUsers = map[string][]string{
	acme:   {"admin", "bob", "carol", "dave", "robot"},
	globex: {"boss", "stranger"},
}

// fuzzOrgOf names the org of each fixture user.
func fuzzOrgOf(username string) string {
	for org, users := range fuzzUsers {
		if slices.Contains(users, username) {
			return org
		}
	}
	return ""
}

func newFuzzWorld(tb testing.TB) *fuzzWorld {
	tb.Helper()
	clock := newFakeClock()
	store := servicetest.NewCounter(memstore.New())
	svc := orgadmin.New(store, orgadmin.Config{Now: clock.Now, Rand: rand.NewChaCha8([32]byte{'f', 'u', 'z', 'z'})})
	w := &fuzzWorld{store: store, svc: svc, tokens: map[string]string{}, tokenIDs: map[string]string{}}
	ctx := tb.Context()
	for _, org := range []string{acme, globex} {
		require.NoError(tb, svc.CreateOrg(ctx, org))
	}
	for _, nu := range []struct {
		org string
		orgadmin.NewUser
	}{
		{acme, orgadmin.NewUser{Username: "admin", Role: orgadmin.RoleAdmin}},
		{acme, orgadmin.NewUser{Username: "bob", Role: orgadmin.RoleMember}},
		{acme, orgadmin.NewUser{Username: "carol", Role: orgadmin.RoleMember, Privileges: []string{orgadmin.PrivilegeViewAllMembers}}},
		{acme, orgadmin.NewUser{Username: "dave", Role: orgadmin.RoleMember}},
		{acme, orgadmin.NewUser{Username: "robot", Role: orgadmin.RoleMember, IsServiceAccount: true}},
		{globex, orgadmin.NewUser{Username: "boss", Role: orgadmin.RoleAdmin}},
		{globex, orgadmin.NewUser{Username: "stranger", Role: orgadmin.RoleMember, IsServiceAccount: true}},
	} {
		_, err := svc.CreateUser(ctx, nu.org, nu.NewUser)
		require.NoError(tb, err)
	}
	seed := func(org, username, value string, in orgadmin.CreateTokenInput) orgadmin.Token {
		in.Name = "seeded"
		tok, err := svc.SeedToken(ctx, org, username, orgadmin.SeedTokenInput{CreateTokenInput: in, Value: value})
		require.NoError(tb, err)
		return tok
	}
	for _, u := range []string{"admin", "bob", "carol", "robot", "boss", "stranger"} {
		value := "fuzz-token-of-" + u
		w.tokens[u], w.tokenIDs[u] = value, seed(fuzzOrgOf(u), u, value, orgadmin.CreateTokenInput{}).ID
	}
	w.readScaling = "fuzz-read-scaling-robot"
	seed(acme, "robot", w.readScaling, orgadmin.CreateTokenInput{Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
	w.expired = "fuzz-expired-token-bob"
	seed(acme, "bob", w.expired, orgadmin.CreateTokenInput{TTL: orgadmin.Some(orgadmin.MinTokenTTL)})
	clock.Advance(orgadmin.MinTokenTTL)
	require.NoError(tb, svc.RegisterDive(ctx, acme, orgadmin.Dive{
		ID: acmeDiveID, Title: "Sales", Version: 3,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}},
	}))
	require.NoError(tb, svc.RegisterDive(ctx, globex, orgadmin.Dive{ID: globexDiveID, Title: "Secret", Version: 1}))
	w.h = httpserver.New(svc, httpserver.Config{Logger: discardLogger()})
	w.writes = store.Writes()
	return w
}

// spareWorld is the world of an earlier input that wrote nothing, and so
// is still the pristine fixture (serve asserts that a refused request
// changes nothing). Inputs run one at a time in each process.
var spareWorld *fuzzWorld

// pristineWorld returns the standard fixture for one input: spareWorld
// when no write has touched it, else a new one, which is four times as
// costly as the request itself.
func pristineWorld(tb testing.TB) *fuzzWorld {
	tb.Helper()
	if spareWorld == nil || spareWorld.store.Writes() != spareWorld.writes {
		spareWorld = newFuzzWorld(tb)
	}
	return spareWorld
}

// snapshot reads the observable state of the store: both orgs, their
// users with instance configurations, every token, Duckling activity and
// the fixture's Dives.
func (w *fuzzWorld) snapshot(tb testing.TB) servicetest.State {
	tb.Helper()
	s, err := servicetest.Snapshot(tb.Context(), w.store, []string{acme, globex}, []string{acmeDiveID, globexDiveID})
	require.NoError(tb, err)
	return s
}

// answer is a response of the Handler, with its body decoded: obj for a
// 200, env for a JSON error. routed is false for the mux's own plain
// answers (a redirect to the cleaned path, 404, 405).
type answer struct {
	response
	obj    map[string]any
	env    envelope
	routed bool
}

// serve sends req to the world's Handler in-process and asserts the
// invariants every answer keeps (checkAnswer).
func (w *fuzzWorld) serve(t *testing.T, req *http.Request, body []byte) answer {
	t.Helper()
	before, writes := w.snapshot(t), w.store.Writes()
	rec := httptest.NewRecorder()
	w.h.ServeHTTP(rec, req)
	res := response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
	a := checkAnswer(t, res)
	if a.status != http.StatusOK {
		require.Equal(t, writes, w.store.Writes(), "a refused request wrote to the store: %s", res)
		require.Equal(t, before, w.snapshot(t), "a refused request changed the store: %s", res)
	}
	if a.routed {
		checkExchange(t, forValidation(req), body, res)
	}
	return a
}

// forValidation returns req, or a copy of it whose integer query values
// are respelled the way the validator can read them, with the meaning the
// server gives them: the validator reads "08" in base 0 (a malformed octal
// number, where the server reads 8) and refuses integers beyond int64
// (which the document does not bound, and the server clamps: an offset
// past any end is an empty page).
func forValidation(req *http.Request) *http.Request {
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return req
	}
	changed := false
	for _, key := range []string{"limit", "offset"} {
		for i, v := range q[key] {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				continue
			}
			if canon := strconv.FormatInt(n, 10); canon != v {
				q[key][i], changed = canon, true
			}
		}
	}
	if !changed {
		return req
	}
	c := req.Clone(req.Context())
	c.URL.RawQuery = q.Encode()
	return c
}

// checkAnswer asserts what holds for every answer: no 5xx; a success is a
// 200 JSON object; an error is the JSON envelope of DESIGN §3 (the code and
// message of its status, issues each with a message; on a 400 at least one
// issue, each with a path and a code; elsewhere at most one), except the
// mux's own plain answers for paths that are no route.
func checkAnswer(t *testing.T, res response) answer {
	t.Helper()
	a := answer{response: res, routed: true}
	require.Less(t, res.status, 500, "server error: %s", res)
	if !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
		require.Contains(t, []int{http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect,
			http.StatusNotFound, http.StatusMethodNotAllowed}, res.status,
			"a non-JSON answer: %s", res)
		a.routed = false
		return a
	}
	if res.status == http.StatusOK {
		a.obj = requireOK(t, res)
		return a
	}
	a.env = requireError(t, res, res.status)
	var raw struct {
		Issues []map[string]json.RawMessage `json:"issues"`
	}
	require.NoError(t, json.Unmarshal(res.body, &raw))
	if res.status != http.StatusBadRequest {
		require.LessOrEqual(t, len(raw.Issues), 1, "only a 400 lists several issues: %s", res)
		return a
	}
	for _, is := range raw.Issues {
		var path []any
		require.NoError(t, json.Unmarshal(is["path"], &path), "every issue of a 400 has a path array: %s", res)
		require.NotNil(t, path, "every issue of a 400 has a path array: %s", res)
		var code string
		require.NoError(t, json.Unmarshal(is["code"], &code), "every issue of a 400 has a code: %s", res)
		require.NotEmpty(t, code, "every issue of a 400 has a code: %s", res)
	}
	return a
}

// newFuzzRequest builds a request for target (a path, already escaped,
// with its query), with body sent as is when not nil.
func newFuzzRequest(t testing.TB, method, target, auth string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://orgadmin.test"+target, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.RemoteAddr = "192.0.2.1:1234"
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return req
}

// ---------------------------------------------------------------------------
// Request bodies, one target per operation that takes one.

// requireNoLoneSurrogates asserts, of a body that was accepted, that none
// of the string fields at paths (keys, then keys within them; "*" is every
// item of an array) escapes a lone UTF-16 surrogate, such as "\ud800":
// encoding/json would have turned it into U+FFFD, storing something else
// than was sent, so the server must refuse it.
func requireNoLoneSurrogates(t *testing.T, body []byte, paths ...[]string) {
	t.Helper()
	for _, path := range paths {
		for _, raw := range rawAt(json.RawMessage(body), path) {
			require.False(t, loneSurrogate(raw), "accepted a lone surrogate escape at %v: %s", path, raw)
		}
	}
}

// rawAt returns the raw values at path within raw (the last of duplicate
// keys, as the server reads them).
func rawAt(raw json.RawMessage, path []string) []json.RawMessage {
	if len(path) == 0 {
		return []json.RawMessage{raw}
	}
	var items []json.RawMessage
	if path[0] == "*" {
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
	} else {
		var o map[string]json.RawMessage
		if json.Unmarshal(raw, &o) != nil || o[path[0]] == nil {
			return nil
		}
		items = []json.RawMessage{o[path[0]]}
	}
	var out []json.RawMessage
	for _, it := range items {
		out = append(out, rawAt(it, path[1:])...)
	}
	return out
}

// loneSurrogate reports whether raw, a JSON value, is a string that
// escapes a UTF-16 surrogate without its other half.
func loneSurrogate(raw json.RawMessage) bool {
	if len(raw) == 0 || raw[0] != '"' {
		return false
	}
	var units []uint16 // the \u escapes of one run, in order
	flush := func() bool {
		for j := 0; j < len(units); j++ {
			if !utf16.IsSurrogate(rune(units[j])) {
				continue
			}
			if j+1 < len(units) && utf16.DecodeRune(rune(units[j]), rune(units[j+1])) != utf8.RuneError {
				j++
				continue
			}
			return true
		}
		units = units[:0]
		return false
	}
	for i := 1; i < len(raw)-1; i++ {
		if raw[i] != '\\' {
			if flush() {
				return true
			}
			continue
		}
		i++
		if raw[i] != 'u' {
			if flush() {
				return true
			}
			continue
		}
		n, _ := strconv.ParseUint(string(raw[i+1:i+5]), 16, 16)
		units = append(units, uint16(n))
		i += 4
	}
	return flush()
}

// bodySeeds are bodies every body target starts from: malformed JSON of
// every kind, wrong types, huge numbers, deep nesting, invalid UTF-8, lone
// surrogates and duplicate keys. Each target adds its own valid bodies.
var bodySeeds = []string{
	``, ` `, `{`, `}`, `{"a":}`, `{"a" 1}`, `{,}`, `{"a":1,}`, `[]`, `[{}]`, `null`, `true`, `0`, `"{}"`, `{}`,
	`{} {}`, `{}x`, `{"a":1}{"a":2}`, "\xef\xbb\xbf{}", "{\"a\":\"\xff\"}", "\xff\xfe{}", "{\"a\":\"\x00\"}",
	`{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, `{"a":"\ud83d\ude00"}`, `{"a":"\\ud800"}`, `{"a":"\\ufffd"}`,
	`{"a":"\u0000"}`, `{"a":NaN}`, `{"a":Infinity}`, `{"a":-}`, `{"a":01}`, `{"a":0x10}`, `{'a':1}`, `{a:1}`,
	`{"a":1e999999}`, `{"a":-1e999999}`, `{"a":1e-999999}`, `{"a":123456789012345678901234567890}`,
	"{\"a\":1}\x00", `{"__proto__":{}}`, strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100),
	strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
}

// fieldSeeds are values each body target tries in each of its fields.
var fieldSeeds = []string{
	`null`, `true`, `1`, `-1`, `0`, `1.5`, `4.0`, `1e3`, `-0`, `1e999`, `9223372036854775808`, `2147483648`,
	`""`, `"x"`, `[]`, `{}`, `[1]`, `"\ud800"`, `"\ufffd"`, `"\\ufffd"`, `"\ud83d\ude00"`, "\"\xff\"",
	`"` + strings.Repeat("é", 256) + `"`,
}

func addBodySeeds(f *testing.F, valid []string, fields []string) {
	for _, b := range bodySeeds {
		f.Add([]byte(b))
	}
	for _, b := range valid {
		f.Add([]byte(b))
		// The same valid body with a duplicate key of another value.
		f.Add([]byte(strings.Replace(b, "{", `{"`+fields[0]+`": 7, `, 1)))
	}
	// Every field once of each JSON type, and each odd value in some
	// field: a small corpus, so that a short run gets past replaying it.
	for _, k := range fields {
		for _, v := range []string{`null`, `true`, `1`, `"x"`, `[]`, `{}`} {
			f.Add([]byte(`{"` + k + `":` + v + `}`))
		}
	}
	for i, v := range fieldSeeds {
		f.Add([]byte(`{"` + fields[i%len(fields)] + `":` + v + `}`))
	}
}

// FuzzCreateServiceAccount: POST /v1/users as an Admin.
func FuzzCreateServiceAccount(f *testing.F) {
	addBodySeeds(f, []string{
		`{"username":"reporter"}`,
		`{"username":"Zoë_2","description":"nightly"}`,
		`{"username":"名前","description":""}`,
		`{"username":"` + strings.Repeat("é", 255) + `"}`,
		`{"username":"` + strings.Repeat("é", 256) + `"}`,
		`{"username":"ROBOT"}`,
		`{"username":"reporter","description":"` + strings.Repeat("d", 1000) + `"}`,
		`{"username":"reporter","description":"` + strings.Repeat("d", 1001) + `"}`,
		`{"username":"reporter","role":"Admin","is_service_account":false}`,
	}, []string{"username", "description"})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "POST", "/v1/users", bearer(w.tokens["admin"]), body)
		a := w.serve(t, req, body)
		if a.status != http.StatusOK {
			return
		}
		requireNoLoneSurrogates(t, body, []string{"username"}, []string{"description"})
		name, _ := a.obj["username"].(string)
		require.True(t, orgadmin.ValidUsername(name), "created an invalid username %q", name)
		u, err := w.svc.GetUser(t.Context(), acme, name)
		require.NoError(t, err)
		require.Equal(t, name, u.Username, "the spelling given is stored")
		require.True(t, u.IsServiceAccount)
		require.Equal(t, orgadmin.RoleMember, u.Role)
		require.LessOrEqual(t, utf8.RuneCountInString(u.Description), orgadmin.MaxDescriptionLen)
		require.True(t, utf8.ValidString(u.Description))
	})
}

// FuzzSetInstanceConfig: PUT /v1/users/robot/instances as an Admin.
func FuzzSetInstanceConfig(f *testing.F) {
	addBodySeeds(f, []string{
		`{"config":{"read_write":{"instance_size":"jumbo"},"read_scaling":{"instance_size":"standard","flock_size":2}}}`,
		`{"config":{"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"giga","flock_size":64,"cooldown_seconds":86400}}}`,
		`{"config":{"read_write":{"instance_size":"mega","cooldown_seconds":60},"read_scaling":{"instance_size":"pulse","flock_size":0}}}`,
		`{"config":{"read_write":{"instance_size":"pulse","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":65}}}`,
		`{"config":{"read_write":{"instance_size":"standard","cooldown_seconds":59.0},"read_scaling":{"instance_size":"standard","flock_size":2.5}}}`,
		`{"config":{"read_write":{"instance_size":"standard"},"read_scaling":{"instance_size":"standard","flock_size":4.0,"cooldown_seconds":1e999}}}`,
		`{"config":{"read_write":{"instance_size":"Standard"},"read_scaling":{"instance_size":"standard","flock_size":-0}}}`,
		`{"config":{"read_write":{},"read_scaling":{}}}`,
		`{"config":{"read_write":null,"read_scaling":[]}}`,
		`{"config":{"read_write":{"instance_size":"standard"}}}`,
		`{"config":"standard"}`,
	}, []string{"config"})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "PUT", "/v1/users/robot/instances", bearer(w.tokens["admin"]), body)
		a := w.serve(t, req, body)
		if a.status != http.StatusOK {
			return
		}
		get := w.serve(t, newFuzzRequest(t, "GET", "/v1/users/robot/instances", bearer(w.tokens["admin"]), nil), nil)
		require.Equal(t, http.StatusOK, get.status, "response: %s", get.response)
		require.Equal(t, a.obj, get.obj, "PUT answers the configuration GET then shows")
		// DESIGN §7: the effective cooldown shows on every side but a pulse
		// one, and flock_size on the read-scaling side only, 0 to 64.
		for _, side := range []string{"read_write", "read_scaling"} {
			o, _ := a.obj[side].(map[string]any)
			_, cooldown := o["cooldown_seconds"]
			require.Equal(t, o["instance_size"] != "pulse", cooldown, "%s: %s", side, a.response)
			flock, ok := o["flock_size"].(float64)
			require.Equal(t, side == "read_scaling", ok, "%s: %s", side, a.response)
			require.True(t, !ok || (flock >= 0 && flock <= orgadmin.MaxFlockSize && flock == float64(int(flock))), "%s", a.response)
		}
	})
}

// FuzzCreateToken: POST /v1/users/robot/tokens as an Admin.
func FuzzCreateToken(f *testing.F) {
	addBodySeeds(f, []string{
		`{"name":"ci"}`,
		`{"name":"ci","ttl":300,"description":"x","token_type":"read_scaling"}`,
		`{"name":"ci","ttl":31536000.0,"token_type":"read_write"}`,
		`{"name":"ci","ttl":299}`,
		`{"name":"ci","ttl":31536001}`,
		`{"name":"ci","ttl":300.5}`,
		`{"name":"ci","ttl":"300"}`,
		`{"name":"ci","token_type":"admin"}`,
		`{"name":"` + strings.Repeat("n", 255) + `"}`,
		`{"name":"` + strings.Repeat("ñ", 256) + `"}`,
		`{"name":"ci","description":"` + strings.Repeat("d", 1001) + `"}`,
		`{"name":"","ttl":10,"token_type":"admin"}`,
	}, []string{"name", "ttl", "description", "token_type"})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "POST", "/v1/users/robot/tokens", bearer(w.tokens["admin"]), body)
		a := w.serve(t, req, body)
		if a.status != http.StatusOK {
			return
		}
		requireNoLoneSurrogates(t, body, []string{"name"}, []string{"description"}, []string{"token_type"})
		value, _ := a.obj["token"].(string)
		c, err := w.svc.Authenticate(t.Context(), value)
		require.NoError(t, err, "the minted token authenticates")
		require.Equal(t, "robot", c.Username())
		name, _ := a.obj["name"].(string)
		require.True(t, utf8.ValidString(name))
		require.GreaterOrEqual(t, utf8.RuneCountInString(name), 1)
		require.LessOrEqual(t, utf8.RuneCountInString(name), orgadmin.MaxTokenNameLen)
		require.Contains(t, []any{"read_write", "read_scaling"}, a.obj["token_type"])
		require.Equal(t, a.obj["token_type"] == "read_scaling", a.obj["read_only"], "response: %s", a.response)
		// A ttl, the last one given, sets expire_at that many seconds on.
		var in map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &in))
		created, err := time.Parse(time.RFC3339, a.obj["created_ts"].(string))
		require.NoError(t, err)
		expire, hasExpiry := a.obj["expire_at"].(string)
		if ttl, ok := in["ttl"]; !ok || string(ttl) == "null" {
			require.False(t, hasExpiry, "no ttl, no expiry: %s", a.response)
			return
		}
		var ttl float64
		require.NoError(t, json.Unmarshal(in["ttl"], &ttl))
		at, err := time.Parse(time.RFC3339, expire)
		require.NoError(t, err, "response: %s", a.response)
		require.Equal(t, time.Duration(ttl)*time.Second, at.Sub(created), "response: %s", a.response)
	})
}

// FuzzCreateEmbedSession: POST /v1/dives/{acme's Dive}/embed-session as an
// Admin.
func FuzzCreateEmbedSession(f *testing.F) {
	addBodySeeds(f, []string{
		`{"username":"robot"}`,
		`{"username":"ROBOT","session_name":"lobby","session_hint":"x","version":3}`,
		`{"username":"robot","version":4}`,
		`{"username":"robot","version":0}`,
		`{"username":"robot","version":1.0}`,
		`{"username":"bob"}`,
		`{"username":"stranger"}`,
		`{"username":"nobody"}`,
		`{"username":"robot","session_name":""}`,
		`{"username":"robot","required_resources":[{"url":"md:x","alias":"y"},{"url":""},7,null,{"url":1}]}`,
		`{"username":"robot","required_resources":[]}`,
		`{"username":"robot","required_resources":[{"url":"` + strings.Repeat("u", 9000) + `"}]}`,
		`{"username":"robot","initial_state":{"a":[1,{"b":null}]}}`,
		`{"username":"robot","initial_state":[]}`,
		`{"username":"robot","initial_state":"{}"}`,
		`{"username":"robot","initial_state":{"a":"` + strings.Repeat("s", 70000) + `"}}`,
		`{"username":"robot","initial_state":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`,
	}, []string{"username", "session_name", "session_hint", "required_resources", "initial_state", "version"})
	f.Fuzz(func(t *testing.T, body []byte) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "POST", "/v1/dives/"+acmeDiveID+"/embed-session", bearer(w.tokens["admin"]), body)
		a := w.serve(t, req, body)
		if a.status != http.StatusOK {
			return
		}
		requireNoLoneSurrogates(t, body, []string{"username"}, []string{"session_name"}, []string{"session_hint"},
			[]string{"required_resources", "*", "url"}, []string{"required_resources", "*", "alias"})
		value, _ := a.obj["session"].(string)
		s, err := w.svc.ResolveEmbedSession(t.Context(), value)
		require.NoError(t, err, "the minted session resolves")
		require.Equal(t, acme, s.Org)
		require.Equal(t, "robot", s.Username, "only robot is a service account of acme")
		require.Equal(t, acmeDiveID, s.DiveID)
		require.Positive(t, s.Version)
		require.LessOrEqual(t, s.Version, 3)
	})
}

// ---------------------------------------------------------------------------
// Path parameters.

// pathOps are the operations with path parameters; the body, where one is
// needed, is valid, so that only the path decides.
var pathOps = []struct {
	method, pattern string
	body            func(username string) []byte
}{
	{"GET", "/v1/users/{username}/instances", nil},
	{"PUT", "/v1/users/{username}/instances", func(string) []byte {
		return []byte(`{"config":{"read_write":{"instance_size":"jumbo"},"read_scaling":{"instance_size":"standard","flock_size":2}}}`)
	}},
	{"DELETE", "/v1/users/{username}", nil},
	{"POST", "/v1/users/{username}/tokens", func(string) []byte { return []byte(`{"name":"fuzz"}`) }},
	{"GET", "/v1/users/{username}/tokens", nil},
	{"DELETE", "/v1/users/{username}/tokens/{token_id}", nil},
	// The body names the same user as the username parameter would.
	{"POST", "/v1/dives/{dive_id}/embed-session", func(username string) []byte {
		b, _ := json.Marshal(map[string]string{"username": username})
		return b
	}},
}

// pathCallers are the callers FuzzPathParams acts as.
var pathCallers = []string{"admin", "bob", "robot", "boss"}

// FuzzPathParams: every operation with a path parameter, with arbitrary
// username, token_id and dive_id, as callers of both orgs. Besides the
// invariants of every answer, a success must concern an object of the
// caller's own org.
func FuzzPathParams(f *testing.F) {
	w := newFuzzWorld(f)
	names := []string{
		"robot", "ROBOT", "Robot", "bob", "admin", "dave", "stranger", "boss", "nobody",
		"", ".", "..", "a/b", "a%2Fb", "%", "?", "#", "a b", "a\x00", "\xff", "\xc3", "é", "名前", "ǅ", "ß", "ſ", "K",
		strings.Repeat("a", 255), strings.Repeat("a", 256), strings.Repeat("é", 255), strings.Repeat("é", 256),
		"0robot", "_robot", "robot_1", "robot٣",
	}
	tokenIDs := []string{"", "x", "..", missingID, strings.Repeat("f", 1000), "\xff"}
	for _, id := range w.tokenIDs {
		tokenIDs = append(tokenIDs, id, strings.ToUpper(id))
	}
	dives := []string{acmeDiveID, strings.ToUpper(acmeDiveID), globexDiveID, missingID, "", "..", "not-a-uuid",
		"{" + acmeDiveID + "}", "urn:uuid:" + acmeDiveID, strings.ReplaceAll(acmeDiveID, "-", ""), acmeDiveID + "0"}
	// Every operation as every caller on a real user, then each odd name
	// once, on operations and callers in turn: a small corpus, so that
	// a short run gets past replaying it.
	for op := range pathOps {
		for who := range pathCallers {
			f.Add(uint8(op), uint8(who), "robot", w.tokenIDs["robot"], acmeDiveID)
		}
	}
	for i, name := range names {
		f.Add(uint8(i%len(pathOps)), uint8(i%len(pathCallers)), name, tokenIDs[i%len(tokenIDs)], dives[i%len(dives)])
	}
	for i, id := range tokenIDs {
		f.Add(uint8(5), uint8(i%2), []string{"robot", "bob", "boss"}[i%3], id, "")
	}
	for i, d := range dives {
		f.Add(uint8(6), uint8(i%2*3), "robot", "", d)
	}
	// A token id in upper case is the same UUID.
	f.Add(uint8(5), uint8(0), "robot", strings.ToUpper(w.tokenIDs["robot"]), "")
	f.Fuzz(func(t *testing.T, op, who uint8, username, tokenID, diveID string) {
		w := pristineWorld(t)
		o := pathOps[int(op)%len(pathOps)]
		caller := pathCallers[int(who)%len(pathCallers)]
		org := fuzzOrgOf(caller)
		target := strings.NewReplacer(
			"{username}", url.PathEscape(username),
			"{token_id}", url.PathEscape(tokenID),
			"{dive_id}", url.PathEscape(diveID),
		).Replace(o.pattern)
		var body []byte
		if o.body != nil {
			body = o.body(username)
		}
		userBefore, userErr := w.svc.GetUser(t.Context(), org, username)
		tokensBefore, err := w.store.ListTokens(t.Context(), org, userBefore.ID, time.Time{})
		require.NoError(t, err)
		a := w.serve(t, newFuzzRequest(t, o.method, target, bearer(w.tokens[caller]), body), body)

		params := []string{username}
		if strings.Contains(o.pattern, "{token_id}") {
			params = append(params, tokenID)
		}
		if strings.Contains(o.pattern, "{dive_id}") {
			params = []string{diveID}
		}
		if !a.routed {
			// Only an empty segment, one that path cleaning changes, or
			// "%2F" (which net/http's ServeMux takes for a trailing slash)
			// leaves the route.
			require.True(t, slices.ContainsFunc(params, func(p string) bool { return p == "" || p == "." || p == ".." || p == "/" }),
				"%s %s answered by the mux: %s", o.method, target, a.response)
			return
		}
		if a.status != http.StatusOK {
			return
		}
		// A success concerns a user (and a Dive) of the caller's org.
		require.NoError(t, userErr, "%s %s succeeded for %q, no user of %s: %s", o.method, target, username, org, a.response)
		switch {
		case o.method == "DELETE" && o.pattern == "/v1/users/{username}":
			require.Equal(t, userBefore.Username, a.obj["username"])
			_, err := w.svc.GetUser(t.Context(), org, username)
			require.ErrorIs(t, err, orgadmin.ErrNotFound, "a deleted user is gone")
		case strings.Contains(o.pattern, "{token_id}"):
			// A UUID is the same in either case.
			require.True(t, slices.ContainsFunc(tokensBefore, func(tk storage.Token) bool { return strings.EqualFold(tk.ID, tokenID) }),
				"deleted %q, no token of %s", tokenID, userBefore.Username)
		case strings.Contains(o.pattern, "{dive_id}"):
			id, err := uuid.Parse(diveID)
			require.NoError(t, err)
			require.Equal(t, map[string]string{acme: acmeDiveID, globex: globexDiveID}[org], id.String())
			s, err := w.svc.ResolveEmbedSession(t.Context(), a.obj["session"].(string))
			require.NoError(t, err)
			require.Equal(t, userBefore.Username, s.Username)
		}
	})
}

// ---------------------------------------------------------------------------
// Query strings of GET /v1/users, and page tokens.

// acmeFolded are the folded usernames of acme in listing order, and which
// of them are service accounts.
var (
	acmeFolded   = []string{"admin", "bob", "carol", "dave", "robot"}
	acmeServices = map[string]bool{"robot": true}
)

// requireUserPage asserts a 200 of GET /v1/users as an acme caller: users
// of acme only, in order, a contiguous run of the listing filtered as
// filter says (nil: all), at most limit of them, and returns their folded
// usernames and where the run starts.
func requireUserPage(t *testing.T, a answer, filter *bool, limit int) (page []string, start int) {
	t.Helper()
	var want []string
	for _, u := range acmeFolded {
		if filter == nil || *filter == acmeServices[u] {
			want = append(want, u)
		}
	}
	var body struct {
		Users []struct {
			Username string `json:"username"`
		} `json:"users"`
		TotalCount    *int    `json:"total_count"`
		NextPageToken *string `json:"next_page_token"`
	}
	require.NoError(t, json.Unmarshal(a.body, &body))
	require.NotNil(t, body.TotalCount)
	require.Equal(t, len(want), *body.TotalCount, "total_count counts the users that match: %s", a.response)
	for _, u := range body.Users {
		page = append(page, orgadmin.FoldUsername(u.Username))
	}
	require.LessOrEqual(t, len(page), limit, "response: %s", a.response)
	if len(page) == 0 {
		require.Nil(t, body.NextPageToken, "an empty page is the last: %s", a.response)
		return page, len(want)
	}
	start = slices.Index(want, page[0])
	require.GreaterOrEqual(t, start, 0, "a user outside the listing: %s", a.response)
	require.Less(t, start+len(page)-1, len(want), "response: %s", a.response)
	require.Equal(t, want[start:start+len(page)], page, "a page is a run of the listing: %s", a.response)
	more := start+len(page) < len(want)
	require.Equal(t, more, body.NextPageToken != nil, "next_page_token is null exactly on the last page: %s", a.response)
	return page, start
}

// FuzzListUsersQuery: GET /v1/users with an arbitrary query string, as an
// Admin.
func FuzzListUsersQuery(f *testing.F) {
	for _, q := range []string{
		"", "limit=2", "limit=1&offset=3", "limit=0", "limit=1000", "limit=1001", "limit=-1", "limit=1.0", "limit=1e3",
		"limit=+1", "limit= 1", "limit=0x10", "limit=9223372036854775808", "limit=-9223372036854775809",
		"limit=1&limit=x", "limit=", "limit", "offset=5", "offset=6", "offset=-1", "offset=2147483648",
		"offset=9223372036854775807", "is_service_account=true", "is_service_account=false", "is_service_account=TRUE",
		"is_service_account=1", "is_service_account=", "is_service_account=true&limit=1&offset=1",
		"page_token=", "page_token=dWJvYg", "page_token=dWJvYg&offset=1&limit=1", "page_token=%ZZ", "%", "a=%zz",
		"limit=2;offset=1", "&&&", "=", "==", "limit=%31", "limit=%00", "limit=%ff", "x=" + strings.Repeat("y", 5000),
		"limit=1&offset=1&page_token=dWNhcm9s&is_service_account=false&unknown=1",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "GET", "/v1/users", bearer(w.tokens["admin"]), nil)
		req.URL.RawQuery = rawQuery
		a := w.serve(t, req, nil)
		if a.status != http.StatusOK {
			require.Equal(t, http.StatusBadRequest, a.status, "an Admin may list: %s", a.response)
			return
		}
		q, err := url.ParseQuery(rawQuery)
		require.NoError(t, err, "a malformed query string was accepted")
		limit := 100
		if q.Has("limit") {
			limit, err = strconv.Atoi(q.Get("limit"))
			require.NoError(t, err)
			require.True(t, limit >= 1 && limit <= 1000, "limit %d accepted", limit)
		}
		var filter *bool
		if q.Has("is_service_account") {
			v := q.Get("is_service_account")
			require.Contains(t, []string{"true", "false"}, v)
			b := v == "true"
			filter = &b
		}
		_, start := requireUserPage(t, a, filter, limit)
		if q.Get("page_token") == "" && q.Has("offset") {
			// Beyond int64 is past any end too.
			off, err := strconv.ParseInt(q.Get("offset"), 10, 64)
			require.True(t, err == nil || errors.Is(err, strconv.ErrRange), "offset %q accepted", q.Get("offset"))
			require.GreaterOrEqual(t, off, int64(0))
			n := 5
			if filter != nil && *filter {
				n = 1
			} else if filter != nil {
				n = 4
			}
			require.Equal(t, int(min(off, int64(n))), start, "the page starts at offset: %s", a.response)
		}
	})
}

// pageToken forges a page token the way the server makes them (a byte
// for the listing's filter, kind 'u' for none, 's' for service accounts,
// 'h' for humans, and the folded username the page resumes after, in
// unpadded base64url), so that the corpus holds valid tokens to mutate.
func pageToken(kind byte, after string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, after...))
}

// FuzzPageToken: GET /v1/users?limit=2&page_token=..., as an Admin, with
// forged and mutated page tokens. A token is either refused with one issue
// at page_token, or resumes the listing of the caller's org somewhere;
// when it has the server's current form, exactly after the username it
// carries.
func FuzzPageToken(f *testing.F) {
	w := newFuzzWorld(f)
	// The tokens the server itself hands out.
	next := ""
	for {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/users?limit=1&page_token="+url.QueryEscape(next), nil)
		req.Header.Set("Authorization", bearer(w.tokens["admin"]))
		w.h.ServeHTTP(rec, req)
		var body struct {
			Next *string `json:"next_page_token"`
		}
		require.NoError(f, json.Unmarshal(rec.Body.Bytes(), &body))
		if body.Next == nil {
			break
		}
		next = *body.Next
		f.Add(next)
		f.Add(next + "A")
		f.Add(next[:len(next)-1])
		f.Add(strings.ToUpper(next))
	}
	for _, after := range []string{"", "a", "bob", "bobby", "zzz", "Bob", "BOB", "ß", "ſ", "é", "\xff", "\x00",
		strings.Repeat("a", 255), strings.Repeat("a", 256), strings.Repeat("é", 256), "boss", "stranger"} {
		for _, kind := range []byte("ush") {
			f.Add(pageToken(kind, after))
		}
	}
	for _, tok := range []string{
		"", "u", "dQ", "dQ==", "dWJvYg==", "dWJvYh", "dWJvYw", "dmJvYg", "dWJvYg=", "dWJv Yg", "dWJv+g", "dWJv/g",
		"dWJvYg\n", "%", "\x00", strings.Repeat("A", 2048), strings.Repeat("A", 2049), strings.Repeat("dWJv", 700),
		base64.StdEncoding.EncodeToString([]byte("ubob")), base64.URLEncoding.EncodeToString([]byte("u\xff\xfe")),
	} {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "GET", "/v1/users?limit=2&page_token="+url.QueryEscape(tok), bearer(w.tokens["admin"]), nil)
		a := w.serve(t, req, nil)
		if a.status != http.StatusOK {
			require.Equal(t, http.StatusBadRequest, a.status, "response: %s", a.response)
			require.Equal(t, []string{pathKey("page_token")}, a.env.paths(), "response: %s", a.response)
			return
		}
		// Today's forms: a byte for the listing's filter ('u' none, 's'
		// service accounts, 'h' humans), then the username it resumes after.
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		var filter *bool
		if err == nil && len(raw) > 0 && (raw[0] == 's' || raw[0] == 'h') {
			sa := raw[0] == 's'
			filter = &sa
		}
		page, start := requireUserPage(t, a, filter, 2)
		if tok == "" {
			require.Equal(t, 0, start, "no token: the first page")
			return
		}
		if err != nil || len(raw) < 2 || !strings.ContainsRune("ush", rune(raw[0])) {
			return // another form than today's; the run check above still holds
		}
		after := string(raw[1:])
		var want []string
		for _, u := range acmeFolded {
			if u > after && len(want) < 2 && (filter == nil || *filter == acmeServices[u]) {
				want = append(want, u)
			}
		}
		require.Equal(t, want, page, "the page resumes after %q: %s", after, a.response)
	})
}

// ---------------------------------------------------------------------------
// Bearer headers.

// FuzzBearerHeader: GET /v1/users with an arbitrary Authorization header
// (sent twice when twice is set). The answer is exactly what the token
// the header carries deserves: 200 for a live token whose user may list,
// 403 for one who may not or a read_scaling token, 401 otherwise.
func FuzzBearerHeader(f *testing.F) {
	w := newFuzzWorld(f)
	for _, tok := range []string{w.tokens["admin"], w.tokens["bob"], w.readScaling, w.expired, "unknown-token-value"} {
		for _, h := range []string{
			"Bearer " + tok, "bearer " + tok, "BEARER " + tok, "bEaReR " + tok, "Bearer  " + tok, "Bearer " + tok + " ",
			"Bearer " + tok + "  ", "Bearer\t" + tok, "Bearer " + tok + "\t", "Bearer\u00a0" + tok, "Bearer:" + tok, "Bearer=" + tok,
			"Bearer " + tok + " x", "Bearer " + tok + "\x00", "Bearer " + tok + "\r\n", "Basic " + tok, "Token " + tok, tok,
			" Bearer " + tok, "Bearer " + strings.ToUpper(tok), "Bearer \"" + tok + "\"", "Bearer " + tok + "," + tok,
		} {
			f.Add(h, false)
		}
		f.Add("Bearer "+tok, true)
	}
	for _, h := range []string{"", "Bearer", "Bearer ", "Bearer  ", "Bearer \t", "Bearerx", "B", "\xff",
		"Bearer \xff\xfe", "Bearer " + strings.Repeat("t", 512), "Bearer " + strings.Repeat("t", 513),
		"Bearer " + strings.Repeat("t", 100000), "Bearer oat_" + strings.Repeat("0", 49), "Bearer oas_" + strings.Repeat("0", 49)} {
		f.Add(h, false)
	}
	status := map[string]int{} // token value → what GET /v1/users answers it
	for u, tok := range w.tokens {
		status[tok] = http.StatusForbidden
		if u == "admin" || u == "carol" || u == "boss" {
			status[tok] = http.StatusOK
		}
	}
	status[w.readScaling] = http.StatusForbidden
	f.Fuzz(func(t *testing.T, header string, twice bool) {
		w := pristineWorld(t)
		req := newFuzzRequest(t, "GET", "/v1/users", "", nil)
		req.Header["Authorization"] = []string{header}
		if twice {
			req.Header.Add("Authorization", header)
		}
		a := w.serve(t, req, nil)
		want := http.StatusUnauthorized
		if tok, ok := bearerModel(header); ok && !twice && status[tok] != 0 {
			want = status[tok]
		}
		require.Equal(t, want, a.status, "Authorization %q (twice: %v): %s", header, twice, a.response)
		if want == http.StatusUnauthorized {
			require.Equal(t, `Bearer realm="orgadmin"`, a.header.Get("WWW-Authenticate"))
		}
	})
}

// bearerModel is DESIGN §2 and RFC 7235 on the Authorization header: the
// scheme "Bearer" in any case, one space, then the token, which may have
// spaces around it but none (nor a tab) inside.
func bearerModel(header string) (string, bool) {
	scheme, rest, found := strings.Cut(header, " ")
	tok := strings.Trim(rest, " ")
	return tok, found && strings.EqualFold(scheme, "bearer") && tok != "" && !strings.ContainsAny(tok, " \t")
}

// ---------------------------------------------------------------------------
// The feedback endpoint (served beside the Handler, without credentials).

// FuzzFeedbackQuery: GET /docs/api/feedback/agent with an arbitrary query
// string. A submission is stored exactly when the answer is 200, and only
// within the limits of SPEC.
func FuzzFeedbackQuery(f *testing.F) {
	for _, q := range []string{
		"", "page_path=%2Fdocs&text=great", "page_path=%2Fdocs&text=great&page_title=T&source=cli",
		"page_path=&text=x", "page_path=p", "text=x", "page_path=p&text=" + strings.Repeat("x", 2000),
		"page_path=p&text=" + strings.Repeat("x", 2001), "page_path=p&text=" + strings.Repeat("%C3%A9", 2000),
		"page_path=p&text=%FF", "page_path=%ZZ&text=x", "page_path=p&text=x%00y", "page_path=p&page_path=q&text=x",
		"page_path=p&text=x;y", "page_path=p+q&text=a+b", "page_path=p&text=%ED%A0%80",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		w := pristineWorld(t)
		h := httpserver.NewFeedback(w.svc, httpserver.FeedbackConfig{Logger: discardLogger()})
		req := newFuzzRequest(t, "GET", httpserver.FeedbackPath, "", nil)
		req.URL.RawQuery = rawQuery
		writes := w.store.Writes()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		a := checkAnswer(t, response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()})
		require.True(t, a.routed, "response: %s", a.response)
		if a.status != http.StatusOK {
			require.Equal(t, http.StatusBadRequest, a.status, "one request is within any rate: %s", a.response)
			require.Equal(t, writes, w.store.Writes(), "a refused submission was stored")
			return
		}
		require.Equal(t, writes+1, w.store.Writes(), "a submission is stored once")
		requireUUID(t, a.obj["feedback_id"])
		q, err := url.ParseQuery(rawQuery)
		require.NoError(t, err)
		for key, lo := range map[string]int{"page_path": 1, "text": 1, "page_title": 0, "source": 0} {
			v := q.Get(key)
			require.True(t, utf8.ValidString(v), "%s: %q", key, v)
			require.GreaterOrEqual(t, utf8.RuneCountInString(v), lo, "%s: %q", key, v)
		}
		require.LessOrEqual(t, utf8.RuneCountInString(q.Get("text")), orgadmin.MaxFeedbackText)
	})
}
