package orgadmin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

const (
	diveSales = "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f"
	diveOps   = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
)

// diveEnv is an env with a service account "Bot" and the Dive diveSales at
// version 3.
func diveEnv(t testing.TB, cfg orgadmin.Config) *env {
	t.Helper()
	e := newEnv(t, cfg)
	e.serviceAccount(t, "Bot")
	require.NoError(t, e.svc.RegisterDive(context.Background(), testOrg, orgadmin.Dive{
		ID: diveSales, Title: "Sales", Version: 3,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}, {URL: "md:ref"}},
	}))
	return e
}

func (e *env) session(t testing.TB, dive string, in orgadmin.CreateEmbedSessionInput) (string, orgadmin.EmbedSession) {
	t.Helper()
	ctx := context.Background()
	v, err := e.svc.CreateEmbedSession(ctx, e.admin, dive, in)
	require.NoError(t, err)
	s, err := e.svc.ResolveEmbedSession(ctx, v)
	require.NoError(t, err)
	return v, s
}

func TestEmbedSession_ResolvesEveryField(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	v, s := e.session(t, strings.ToUpper(diveSales), orgadmin.CreateEmbedSessionInput{
		Username:     "bot",
		SessionName:  orgadmin.Some("dash"),
		InitialState: json.RawMessage(`{ "region" : "emea", "n": [1, 2] }`),
		Version:      orgadmin.Some(2),
	})
	assert.True(t, orgadmin.ValidSecretChecksum(v), "a minted secret with a checksum")
	assert.NotEmpty(t, s.AffinityKey)
	assert.Equal(t, orgadmin.EmbedSession{
		Org:               testOrg,
		DiveID:            diveSales,
		Version:           2,
		Username:          "Bot",
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}, {URL: "md:ref"}},
		InitialState:      json.RawMessage(`{"region":"emea","n":[1,2]}`),
		AffinityKey:       s.AffinityKey,
		CreatedAt:         t0,
		ExpiresAt:         t0.Add(24 * time.Hour),
	}, s)

	// Without a version: the latest; the request's resources replace the
	// Dive's; no initial state.
	_, s = e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{
		Username:          "BOT",
		RequiredResources: []orgadmin.Resource{{URL: "md:other", Alias: "o"}},
	})
	assert.Equal(t, 3, s.Version)
	assert.Equal(t, []orgadmin.Resource{{URL: "md:other", Alias: "o"}}, s.RequiredResources)
	assert.Nil(t, s.InitialState)
	assert.Equal(t, "Bot", s.Username)
}

func TestEmbedSession_ValuesAreDistinctAndNotCredentials(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	a, _ := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	b, _ := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	assert.NotEqual(t, a, b)
	_, err := e.svc.Authenticate(ctx, a)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestEmbedSession_ExpiresAfter24Hours(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	v, _ := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	e.clk.Advance(24*time.Hour - time.Millisecond)
	_, err := e.svc.ResolveEmbedSession(ctx, v)
	require.NoError(t, err)
	e.clk.Advance(time.Millisecond)
	_, err = e.svc.ResolveEmbedSession(ctx, v)
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestEmbedSession_CustomTTL(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{EmbedSessionTTL: time.Hour})
	ctx := context.Background()
	v, s := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	assert.Equal(t, t0.Add(time.Hour), s.ExpiresAt)
	e.clk.Advance(time.Hour - time.Millisecond)
	_, err := e.svc.ResolveEmbedSession(ctx, v)
	require.NoError(t, err)
	e.clk.Advance(time.Millisecond)
	_, err = e.svc.ResolveEmbedSession(ctx, v)
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestEmbedSession_UnknownValueIsNotFound(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	v, _ := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	for _, bad := range []string{"", "oas_nope", v[:len(v)-1], v + "x", strings.Repeat("s", 4096), e.adminToken} {
		_, err := e.svc.ResolveEmbedSession(ctx, bad)
		requireCode(t, err, orgadmin.ErrNotFound)
	}
}

func TestEmbedSession_DeletingUserEndsIt(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	v, _ := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", SessionName: orgadmin.Some("x")})
	_, err := e.svc.DeleteUser(ctx, e.admin, "bot")
	require.NoError(t, err)
	_, err = e.svc.ResolveEmbedSession(ctx, v)
	requireCode(t, err, orgadmin.ErrNotFound)

	// A new user of the same name does not inherit it.
	e.serviceAccount(t, "Bot")
	_, err = e.svc.ResolveEmbedSession(ctx, v)
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestEmbedSession_AffinityKey(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "other")
	require.NoError(t, e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: diveOps, Title: "Ops"}))
	key := func(dive, user string, name, hint orgadmin.Optional[string]) string {
		t.Helper()
		_, s := e.session(t, dive, orgadmin.CreateEmbedSessionInput{Username: user, SessionName: name, SessionHint: hint})
		return s.AffinityKey
	}
	p, none := orgadmin.Some[string], orgadmin.Optional[string]{}

	k := key(diveSales, "bot", p("s1"), none)
	assert.Equal(t, k, key(diveSales, "bot", p("s1"), none), "equal (org, username, session name)")
	assert.Equal(t, k, key(diveOps, "BOT", p("s1"), none), "the Dive and the username's case do not matter")
	assert.NotEqual(t, k, key(diveSales, "bot", p("s2"), none), "different session name")
	assert.NotEqual(t, k, key(diveSales, "bot", p("S1"), none), "session names are compared exactly")
	assert.NotEqual(t, k, key(diveSales, "other", p("s1"), none), "different username")

	assert.Equal(t, k, key(diveSales, "bot", none, p("s1")), "session_hint stands in for session_name")
	assert.Equal(t, k, key(diveSales, "bot", p("s1"), p("ignored")), "session_hint is ignored when session_name is set")
	assert.NotEqual(t, k, key(diveSales, "bot", p("s2"), p("s1")), "session_hint is ignored when session_name is set")

	a, b := key(diveSales, "bot", none, none), key(diveSales, "bot", none, none)
	assert.NotEqual(t, a, b, "two sessions without a name share nothing")
	assert.NotEqual(t, k, a)

	// The same username and session name in another org: another key.
	otherTok, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "globex", Username: "root"})
	require.NoError(t, err)
	root, err := e.svc.Authenticate(ctx, otherTok)
	require.NoError(t, err)
	_, err = e.svc.CreateServiceAccount(ctx, root, orgadmin.CreateServiceAccountInput{Username: "bot"})
	require.NoError(t, err)
	require.NoError(t, e.svc.RegisterDive(ctx, "globex", orgadmin.Dive{ID: diveSales}))
	v, err := e.svc.CreateEmbedSession(ctx, root, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", SessionName: p("s1")})
	require.NoError(t, err)
	s, err := e.svc.ResolveEmbedSession(ctx, v)
	require.NoError(t, err)
	assert.Equal(t, "globex", s.Org)
	assert.Equal(t, 1, s.Version, "a Dive registered without a version is at version 1")
	assert.NotEqual(t, k, s.AffinityKey)
}

func TestEmbedSession_Refusals(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	carol, _ := e.login(t, "carol")
	create := func(c orgadmin.Caller, dive string, in orgadmin.CreateEmbedSessionInput) error {
		_, err := e.svc.CreateEmbedSession(ctx, c, dive, in)
		return err
	}
	ok := orgadmin.CreateEmbedSessionInput{Username: "bot"}

	requireCode(t, create(carol, diveSales, ok), orgadmin.ErrForbidden)
	requireCode(t, create(e.admin, diveOps, ok), orgadmin.ErrNotFound)
	requireCode(t, create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "nobody"}), orgadmin.ErrNotFound)
	requireCode(t, create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", Version: orgadmin.Some(4)}), orgadmin.ErrNotFound)
	require.NoError(t, create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", Version: orgadmin.Some(3)}))
	require.NoError(t, create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", Version: orgadmin.Some(1)}))

	err := create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "carol"})
	assert.Equal(t, [][]any{{"username"}}, issuePaths(t, err), "only service accounts")

	err = create(e.admin, "not-a-uuid", orgadmin.CreateEmbedSessionInput{Username: ""})
	assert.Equal(t, [][]any{{"dive_id"}, {"username"}}, issuePaths(t, err))

	err = create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{
		Username:          "bot",
		SessionName:       orgadmin.Some(""),
		SessionHint:       orgadmin.Some(""),
		RequiredResources: []orgadmin.Resource{{URL: ""}},
		InitialState:      json.RawMessage(`[1]`),
		Version:           orgadmin.Some(0),
	})
	assert.Equal(t, [][]any{
		{"session_name"}, {"session_hint"}, {"required_resources", 0, "url"}, {"initial_state"}, {"version"},
	}, issuePaths(t, err), "every problem at once")

	big := json.RawMessage(`{"k":"` + strings.Repeat("x", 64<<10) + `"}`)
	err = create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: big})
	assert.Equal(t, [][]any{{"initial_state"}}, issuePaths(t, err))
	// What two parsers could read apart: a key given twice at any
	// depth, escaped or not, and a lone surrogate escape.
	for raw, want := range map[string][]any{
		`{"a":1,"a":2}`:                       {"initial_state", "a"},
		`{"x":[0,{"k":1,"\u006b":2}]}`:        {"initial_state", "x", 1, "k"},
		`{"k":"\ud800"}`:                      {"initial_state"},
		`{"\udfff":1}`:                        {"initial_state"},
		`{"a":{"a":1},"b":[{"a":1},{"a":1}]}`: nil,
		`{"k":"\ud83d\ude00"}`:                nil,
		// Not UTF-8, which a body cannot be either: a bad byte in a
		// value or a key, one beside an escape (which would be stored
		// as U+FFFD), and a surrogate written raw.
		"{\"a\":\"\xff\"}":         {"initial_state"},
		"{\"\xff\":1}":             {"initial_state"},
		"{\"a\":\"x\xff\\n\"}":     {"initial_state"},
		"{\"a\":\"\xed\xa0\x80\"}": {"initial_state"},
	} {
		err = create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: json.RawMessage(raw)})
		if want == nil {
			assert.NoError(t, err, raw)
			continue
		}
		assert.Equal(t, [][]any{want}, issuePaths(t, err), raw)
	}
	many := make([]orgadmin.Resource, 0, 100)
	for range 100 {
		many = append(many, orgadmin.Resource{URL: strings.Repeat("u", 100)})
	}
	err = create(e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: many})
	assert.Equal(t, [][]any{{"required_resources"}}, issuePaths(t, err), "over 8192 bytes of JSON")
}

func TestEmbedSession_InitialStateAtMost64KiB(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	state := func(n int) json.RawMessage { // n bytes of compact JSON, with spaces around
		return json.RawMessage(` { "k" : "` + strings.Repeat("x", n-len(`{"k":""}`)) + `" } `)
	}
	_, s := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: state(64 << 10)})
	assert.Len(t, s.InitialState, 64<<10, "measured compact")
	_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: state(64<<10 + 1)})
	assert.Equal(t, [][]any{{"initial_state"}}, issuePaths(t, err))
	for _, notObject := range []string{`[]`, `"s"`, `1`, `null`, `{`, ``} {
		_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: json.RawMessage(notObject)})
		assert.Equalf(t, [][]any{{"initial_state"}}, issuePaths(t, err), "%q", notObject)
	}
}

// One value of initial_state has one size, whichever escapes its writer
// chose (Python's json.dumps escapes every non-ASCII character): it is
// measured, and kept, with the fewest escapes.
func TestEmbedSession_InitialStateMeasuredWithFewestEscapes(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	// 64 KiB with "é" (two bytes) as itself; three times that with it
	// written "\u00e9".
	n := (64<<10 - len(`{"k":""}`)) / 2
	fits := `{"k":"` + strings.Repeat("é", n) + `"}`
	require.Len(t, fits, 64<<10)
	escaped := `{"k":"` + strings.Repeat(`\u00e9`, n) + `"}`
	_, s := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: json.RawMessage(escaped)})
	assert.Equal(t, fits, string(s.InitialState), "kept with the fewest escapes")
	_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot",
		InitialState: json.RawMessage(`{"k":"` + strings.Repeat(`\u00e9`, n) + `x"}`)})
	assert.Equal(t, [][]any{{"initial_state"}}, issuePaths(t, err), "one byte over, escaped")

	// What must stay escaped stays so; numbers and the order of members
	// are kept as written.
	_, s = e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot",
		InitialState: json.RawMessage(`{"z":"\"\\\n\u0001\u2028\/\u0041<&>","a":1.50E+2,"m":["\u00e9",{"\u006b":true}]}`)})
	assert.Equal(t, `{"z":"\"\\\n\u0001\u2028/A<&>","a":1.50E+2,"m":["é",{"k":true}]}`, string(s.InitialState))

	// U+2028 and U+2029, which encoding/json always escapes, count
	// escaped whether they come raw or escaped: six bytes each.
	n = (64<<10 - len(`{"k":""}`)) / 6
	for _, sep := range []string{"\u2028", `\u2028`, "\u2029", `\u2029`} {
		_, s = e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", InitialState: json.RawMessage(`{"k":"` + strings.Repeat(sep, n) + `"}`)})
		assert.Len(t, s.InitialState, len(`{"k":""}`)+6*n, "%q", sep)
		_, err = e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot",
			InitialState: json.RawMessage(`{"k":"` + strings.Repeat(sep, n+1) + `"}`)})
		assert.Equal(t, [][]any{{"initial_state"}}, issuePaths(t, err), "%q, one over", sep)
	}
}

// resourcesOfJSONSize returns resources whose compact JSON array is exactly n
// bytes long, with no url longer than 1000 characters.
func resourcesOfJSONSize(t testing.TB, n int) []orgadmin.Resource {
	t.Helper()
	const items = 9
	// [ {"url":"..."} , ... ]: 2 brackets, items-1 commas, 10 bytes per item.
	total := n - 2 - (items - 1) - 10*items
	rs := make([]orgadmin.Resource, items)
	for i := range rs {
		l := total / items
		if i < total%items {
			l++
		}
		rs[i] = orgadmin.Resource{URL: strings.Repeat("u", l)}
	}
	b, err := json.Marshal(func() []map[string]string {
		out := make([]map[string]string, len(rs))
		for i, r := range rs {
			out[i] = map[string]string{"url": r.URL}
		}
		return out
	}())
	require.NoError(t, err)
	require.Len(t, b, n)
	return rs
}

func TestEmbedSession_RequiredResourcesAtMost8192BytesOfJSON(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: resourcesOfJSONSize(t, 8193)})
	assert.Equal(t, [][]any{{"required_resources"}}, issuePaths(t, err))
	_, err = e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: resourcesOfJSONSize(t, 8191)})
	require.NoError(t, err)
}

func TestEmbedSession_RequiredResourcesOfExactly8192Bytes(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	_, err := e.svc.CreateEmbedSession(context.Background(), e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: resourcesOfJSONSize(t, 8192)})
	require.NoError(t, err, "8192 bytes of JSON is at most 8192")
}

// A list of required resources longer than any that fits in 8192 bytes
// of JSON is one issue, whatever its items: the answer to a request stays
// small however many items it holds.
func TestEmbedSession_MoreResourcesThanFitAreOneIssue(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: make([]orgadmin.Resource, 100_000)})
	assert.Equal(t, [][]any{{"required_resources"}}, issuePaths(t, err))
	many := make([]orgadmin.Resource, orgadmin.MaxResources)
	for i := range many {
		many[i].URL = "x"
	}
	_, err = e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: many})
	require.NoError(t, err, "MaxResources items fit")
	_, err = e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", RequiredResources: append(many, orgadmin.Resource{URL: "x"})})
	assert.Equal(t, [][]any{{"required_resources"}}, issuePaths(t, err))
	err = e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: "7d3c8f2e-0a4b-4c5d-8e6f-1a2b3c4d5e6f", RequiredResources: make([]orgadmin.Resource, 100_000)})
	assert.Equal(t, [][]any{{"required_resources"}}, issuePaths(t, err))
}

// A service account holds at most Config.MaxEmbedSessionsPerUser live
// embed sessions: one more is a BAD_REQUEST with one issue at no path, and
// stores nothing; an expired session frees its place; the limit is per
// service account.
func TestEmbedSession_LimitPerUser(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{MaxEmbedSessionsPerUser: 2, EmbedSessionTTL: time.Hour})
	e.serviceAccount(t, "kiosk")
	ctx := context.Background()
	first, _ := e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	e.clk.Advance(time.Minute)
	e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot", SessionName: orgadmin.Some("lobby")})
	before := len(allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{}))

	_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	got := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, []orgadmin.Issue{{Message: "The service account holds the maximum number of embed sessions", Path: orgadmin.Path{}, Code: orgadmin.IssueTooBig}}, got.Issues)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{}), before, "no event of a refused session")
	e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "kiosk"})

	// The first expires an hour after its creation, and frees one place.
	e.clk.Advance(time.Hour - time.Minute)
	_, err = e.svc.ResolveEmbedSession(ctx, first)
	requireCode(t, err, orgadmin.ErrNotFound)
	e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	_, err = e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	requireCode(t, err, orgadmin.ErrBadRequest)
}

// Without MaxEmbedSessionsPerUser, a service account holds at most 10 000
// live embed sessions.
func TestEmbedSession_DefaultLimitIs10000(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{MaxAuditEventsPerOrg: -1})
	ctx := context.Background()
	for i := range orgadmin.DefaultMaxEmbedSessionsPerUser {
		_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
		require.NoError(t, err, "session %d", i)
	}
	_, err := e.svc.CreateEmbedSession(ctx, e.admin, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, 10_000, orgadmin.DefaultMaxEmbedSessionsPerUser)
}

// A negative MaxEmbedSessionsPerUser means no limit.
func TestEmbedSession_NegativeLimitMeansNone(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{MaxEmbedSessionsPerUser: -1})
	for range 50 {
		e.session(t, diveSales, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	}
}

// Registering a Dive exactly as it is stored changes nothing and records
// nothing; any difference (its resources' order included) is a change.
func TestRegisterDiveUnchangedRecordsNothing(t *testing.T) {
	e := diveEnv(t, orgadmin.Config{})
	ctx := context.Background()
	registered := func() int {
		return len(allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Action: orgadmin.ActionDiveRegister, TargetID: diveSales}))
	}
	same := orgadmin.Dive{ID: strings.ToUpper(diveSales), Title: "Sales", Version: 3,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}, {URL: "md:ref"}}}
	require.NoError(t, e.svc.RegisterDive(ctx, testOrg, same))
	assert.Equal(t, 1, registered())

	for _, d := range []orgadmin.Dive{
		{ID: diveSales, Title: "Sales", Version: 3, RequiredResources: []orgadmin.Resource{{URL: "md:ref"}, {URL: "md:sales", Alias: "s"}}},
		{ID: diveSales, Title: "Sales", Version: 4, RequiredResources: same.RequiredResources},
		{ID: diveSales, Title: "Sales 2", Version: 4, RequiredResources: same.RequiredResources},
		{ID: diveSales, Title: "Sales 2", Version: 4},
	} {
		n := registered()
		require.NoError(t, e.svc.RegisterDive(ctx, testOrg, d))
		assert.Equal(t, n+1, registered(), "%+v", d)
		got, err := e.store.GetDive(ctx, testOrg, diveSales)
		require.NoError(t, err)
		assert.Equal(t, d.Title, got.Title)
		assert.Len(t, got.RequiredResources, len(d.RequiredResources))
	}
	require.ErrorIs(t, e.svc.RegisterDive(ctx, "no-such-org", same), orgadmin.ErrNotFound)
}
