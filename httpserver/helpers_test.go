package httpserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// testHTTP sends the tests' requests through a transport of its own:
// httptest.Server.Close, which tests running in parallel call, closes
// http.DefaultTransport's idle connections and so can fail a request
// about to reuse one ("CloseIdleConnections called").
var testHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// epoch is where every fake clock starts. It carries nanoseconds so that
// the millisecond truncation of stored times is exercised.
var epoch = time.Date(2026, 6, 19, 12, 34, 56, 789_654_321, time.UTC)

// fakeClock is a clock the tests move by hand.
type fakeClock = fakeclock.Clock

func newFakeClock() *fakeClock { return fakeclock.New(epoch) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// world is a Service on a store, served over a real HTTP transport, with
// a fake clock.
type world struct {
	tb    testing.TB
	clock *fakeClock
	svc   *orgadmin.Service
	srv   *httptest.Server
}

// worldOptions say what a world runs on. The zero value is a fresh memory
// store and a Handler that logs nowhere.
type worldOptions struct {
	store  storage.Store
	logger *slog.Logger
	// requestLog, when set, takes the request lines (Config.RequestLog).
	requestLog io.Writer
}

// tokenSeq numbers seeded token values, so that every value is unique.
var tokenSeq atomic.Int64

// newWorld returns an empty world on a fresh memory store, whose Service
// is configured by cfg (its Now and Rand are replaced by the world's clock
// and crypto/rand).
func newWorld(tb testing.TB, cfg orgadmin.Config) *world {
	return newWorldWith(tb, cfg, worldOptions{})
}

// newWorldWith is newWorld on what opts say.
func newWorldWith(tb testing.TB, cfg orgadmin.Config, opts worldOptions) *world {
	tb.Helper()
	clock := newFakeClock()
	cfg.Now = clock.Now
	cfg.Rand = nil
	if opts.store == nil {
		opts.store = memstore.New()
	}
	if opts.logger == nil {
		opts.logger = discardLogger()
	}
	svc := orgadmin.New(opts.store, cfg)
	srv := httptest.NewServer(httpserver.New(svc, httpserver.Config{Logger: opts.logger, RequestLog: opts.requestLog}))
	tb.Cleanup(srv.Close)
	return &world{tb: tb, clock: clock, svc: svc, srv: srv}
}

// with returns the world reporting to tb, for use inside a subtest.
func (w *world) with(tb testing.TB) *world {
	c := *w
	c.tb = tb
	return &c
}

func (w *world) createOrg(id string) {
	w.tb.Helper()
	require.NoError(w.tb, w.svc.CreateOrg(w.tb.Context(), id))
}

func (w *world) createUser(org string, nu orgadmin.NewUser) orgadmin.User {
	w.tb.Helper()
	u, err := w.svc.CreateUser(w.tb.Context(), org, nu)
	require.NoError(w.tb, err)
	return u
}

// seedToken stores a token with a fresh value for the user and returns the
// value and the token.
func (w *world) seedToken(org, username string, in orgadmin.CreateTokenInput) (string, orgadmin.Token) {
	w.tb.Helper()
	value := fmt.Sprintf("seeded-token-%s-%06d", org, tokenSeq.Add(1))
	if in.Name == "" {
		in.Name = "seeded"
	}
	tok, err := w.svc.SeedToken(w.tb.Context(), org, username, orgadmin.SeedTokenInput{CreateTokenInput: in, Value: value})
	require.NoError(w.tb, err)
	require.Equal(w.tb, value, tok.Value)
	return value, tok
}

// caller authenticates a token value through the Go API.
func (w *world) caller(token string) orgadmin.Caller {
	w.tb.Helper()
	c, err := w.svc.Authenticate(w.tb.Context(), token)
	require.NoError(w.tb, err)
	return c
}

// userExists reports whether org has a user named username.
func (w *world) userExists(org, username string) bool {
	w.tb.Helper()
	_, err := w.svc.GetUser(w.tb.Context(), org, username)
	if err == nil {
		return true
	}
	require.ErrorIs(w.tb, err, orgadmin.ErrNotFound)
	return false
}

// authenticates reports whether a token value is a valid credential.
func (w *world) authenticates(token string) bool {
	w.tb.Helper()
	_, err := w.svc.Authenticate(w.tb.Context(), token)
	if err == nil {
		return true
	}
	require.ErrorIs(w.tb, err, orgadmin.ErrUnauthorized)
	return false
}

// The organizations of the standard fixture.
const (
	acme   = "acme"
	globex = "globex"
)

// Dive ids of the standard fixture.
const (
	acmeDiveID   = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
	globexDiveID = "7d9e0f1a-2b3c-4d5e-8f60-718293a4b5c6"
	missingID    = "00000000-0000-4000-8000-000000000000"
)

// fixture is the standard world:
//
//	acme:   admin (human Admin), bob (human Member), carol (human Member with
//	        member_management.view_all_members), dave (human Member, no
//	        token), robot (service account); Dive acmeDiveID at version 3
//	globex: boss (human Admin), stranger (service account); Dive globexDiveID
//
// The token fields hold read_write token values of the users so named.
type fixture struct {
	*world
	admin, bob, carol, robot, boss, stranger string
}

func newFixture(tb testing.TB, cfg orgadmin.Config) *fixture {
	tb.Helper()
	return newFixtureWith(tb, cfg, worldOptions{})
}

// newFixtureWith is newFixture on what opts say.
func newFixtureWith(tb testing.TB, cfg orgadmin.Config, opts worldOptions) *fixture {
	tb.Helper()
	f := &fixture{world: newWorldWith(tb, cfg, opts)}
	f.createOrg(acme)
	f.createOrg(globex)
	f.createUser(acme, orgadmin.NewUser{Username: "admin", Role: orgadmin.RoleAdmin})
	f.createUser(acme, orgadmin.NewUser{Username: "bob", Role: orgadmin.RoleMember})
	f.createUser(acme, orgadmin.NewUser{Username: "carol", Role: orgadmin.RoleMember})
	require.NoError(tb, f.svc.GrantPrivilege(tb.Context(), acme, "carol", orgadmin.PrivilegeViewAllMembers))
	f.createUser(acme, orgadmin.NewUser{Username: "dave", Role: orgadmin.RoleMember})
	f.createUser(acme, orgadmin.NewUser{Username: "robot", Role: orgadmin.RoleMember, IsServiceAccount: true})
	f.createUser(globex, orgadmin.NewUser{Username: "boss", Role: orgadmin.RoleAdmin})
	f.createUser(globex, orgadmin.NewUser{Username: "stranger", Role: orgadmin.RoleMember, IsServiceAccount: true})
	f.admin, _ = f.seedToken(acme, "admin", orgadmin.CreateTokenInput{})
	f.bob, _ = f.seedToken(acme, "bob", orgadmin.CreateTokenInput{})
	f.carol, _ = f.seedToken(acme, "carol", orgadmin.CreateTokenInput{})
	f.robot, _ = f.seedToken(acme, "robot", orgadmin.CreateTokenInput{})
	f.boss, _ = f.seedToken(globex, "boss", orgadmin.CreateTokenInput{})
	f.stranger, _ = f.seedToken(globex, "stranger", orgadmin.CreateTokenInput{})
	require.NoError(tb, f.svc.RegisterDive(tb.Context(), acme, orgadmin.Dive{
		ID: acmeDiveID, Title: "Sales", Version: 3,
		RequiredResources: []orgadmin.Resource{{URL: "md:sales", Alias: "s"}},
	}))
	require.NoError(tb, f.svc.RegisterDive(tb.Context(), globex, orgadmin.Dive{
		ID: globexDiveID, Title: "Secret", Version: 1,
		RequiredResources: []orgadmin.Resource{{URL: "md:secret"}},
	}))
	return f
}

// with returns the fixture reporting to tb, for use inside a subtest.
func (f *fixture) with(tb testing.TB) *fixture {
	c := *f
	c.world = f.world.with(tb)
	return &c
}

// response is what the server answered.
type response struct {
	status int
	header http.Header
	body   []byte
}

func bearer(token string) string { return "Bearer " + token }

// do sends a request to the world's server, and checks it and the answer
// against the OpenAPI document (checkExchange). auth is the whole
// Authorization header value ("" sends none). body is nil (no body), a
// string or []byte (sent as is), or any other value (sent as its JSON).
func (w *world) do(method, path, auth string, body any) response {
	w.tb.Helper()
	return doRequest(w.tb, w.srv.URL, method, path, auth, body)
}

func doRequest(tb testing.TB, base, method, path, auth string, body any) response {
	tb.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(tb, err)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, base+path, rd)
	require.NoError(tb, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	res, err := testHTTP.Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	resBody, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	r := response{status: res.StatusCode, header: res.Header, body: resBody}
	checkExchange(tb, req, raw, r)
	return r
}

// String describes the response for failure messages.
func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// requireOK asserts a 200 with a JSON object body and returns the object.
func requireOK(tb testing.TB, r response) map[string]any {
	tb.Helper()
	require.Equal(tb, http.StatusOK, r.status, "response: %s", r)
	require.Equal(tb, "application/json", r.header.Get("Content-Type"))
	var obj map[string]any
	require.NoError(tb, json.Unmarshal(r.body, &obj), "body: %s", r.body)
	require.NotNil(tb, obj, "body: %s", r.body)
	return obj
}

// requireJSON asserts a 200 whose body is the JSON want.
func requireJSON(tb testing.TB, r response, want string) {
	tb.Helper()
	requireOK(tb, r)
	require.JSONEq(tb, want, string(r.body))
}

// envelope is the JSON error body.
type envelope struct {
	Message string  `json:"message"`
	Code    string  `json:"code"`
	Issues  []issue `json:"issues"`
}

type issue struct {
	Message string `json:"message"`
	Path    []any  `json:"path"`
	Code    string `json:"code"`
}

// errorTable is SPEC's Errors table (and DESIGN §3 for 429).
var errorTable = map[int]struct{ code, message string }{
	400: {"BAD_REQUEST", "Bad Request"},
	401: {"UNAUTHORIZED", "Invalid Credentials"},
	403: {"FORBIDDEN", "Unauthorized"},
	404: {"NOT_FOUND", "Not Found"},
	429: {"TOO_MANY_REQUESTS", "Too Many Requests"},
	500: {"INTERNAL_SERVER_ERROR", "Internal Error"},
}

// requireError asserts an error response of the given status carrying the
// envelope of SPEC's Errors table, with an issues array on every 400, and
// returns the envelope.
func requireError(tb testing.TB, r response, status int) envelope {
	tb.Helper()
	require.Equal(tb, status, r.status, "response: %s", r)
	require.Equal(tb, "application/json", r.header.Get("Content-Type"), "response: %s", r)
	var keys map[string]json.RawMessage
	require.NoError(tb, json.Unmarshal(r.body, &keys), "body: %s", r.body)
	for k := range keys {
		require.Contains(tb, []string{"message", "code", "issues"}, k, "unexpected key in error body %s", r.body)
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	var env envelope
	require.NoError(tb, dec.Decode(&env), "body: %s", r.body)
	want := errorTable[status]
	require.Equal(tb, want.code, env.Code, "body: %s", r.body)
	require.Equal(tb, want.message, env.Message, "body: %s", r.body)
	if status == http.StatusBadRequest {
		require.Contains(tb, keys, "issues", "a 400 lists its issues: %s", r.body)
		require.NotEmpty(tb, env.Issues, "a 400 lists its issues: %s", r.body)
	}
	if raw, ok := keys["issues"]; ok {
		var items []map[string]any
		require.NoError(tb, json.Unmarshal(raw, &items), "issues is an array of objects: %s", r.body)
		for _, it := range items {
			msg, ok := it["message"].(string)
			require.True(tb, ok && msg != "", "every issue has a message: %s", r.body)
		}
	}
	return env
}

// pathKey is the JSON form of an issue path, for comparing paths.
func pathKey(path ...any) string {
	if path == nil {
		path = []any{}
	}
	b, err := json.Marshal(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// paths returns the path of every issue, in order, as pathKey forms.
func (e envelope) paths() []string {
	out := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		out[i] = pathKey(is.Path...)
	}
	return out
}

// issueAt returns the first issue at path, or fails.
func (e envelope) issueAt(tb testing.TB, path ...any) issue {
	tb.Helper()
	want := pathKey(path...)
	i := slices.Index(e.paths(), want)
	require.GreaterOrEqual(tb, i, 0, "no issue at %s; issues: %+v", want, e.Issues)
	return e.Issues[i]
}

// requireIssue asserts a 400 with an issue at path and returns that issue.
func requireIssue(tb testing.TB, r response, path ...any) issue {
	tb.Helper()
	return requireError(tb, r, http.StatusBadRequest).issueAt(tb, path...)
}

// userPath is /v1/users/{name} followed by rest, with name escaped.
func userPath(name string, rest ...string) string {
	p := "/v1/users/" + url.PathEscape(name)
	for _, s := range rest {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// requireUUID asserts that s is a UUID of version 4 or 7.
func requireUUID(tb testing.TB, s any) string {
	tb.Helper()
	str, ok := s.(string)
	require.True(tb, ok, "uuid is a string: %v", s)
	id, err := uuid.Parse(str)
	require.NoError(tb, err, "uuid: %q", str)
	require.Equal(tb, id.String(), str, "canonical lower-case uuid")
	require.Contains(tb, []uuid.Version{4, 7}, id.Version())
	return str
}

// keys returns the sorted keys of m.
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// jsonString returns the JSON text of v.
func jsonString(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return string(b)
}
