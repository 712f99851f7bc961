// Package storagetest is the conformance suite every storage.Store adapter
// runs: the guarantees written in the comments of package storage have named
// subtests here, but for those no test can watch from outside (that an
// event is written in the same atomic step as its change, say), so an
// adapter's own test is a few lines:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(testing.TB) storage.Store { return memstore.New() })
//	}
//
// Every time the suite writes is UTC and truncated to the millisecond, and
// must read back Equal; nothing the suite checks depends on the wall clock.
package storagetest

import (
	"crypto/sha256"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// subtest is one named check; it gets a fresh store.
type subtest struct {
	name string
	fn   func(t *testing.T, s storage.Store)
}

// group is a named list of subtests.
type group struct {
	name  string
	tests []subtest
}

// KnownDefect names a subtest of Run ("Group/Name") that a store is
// known to fail, and why; Run reports it skipped, with that reason.
type KnownDefect struct {
	Test, Why string
}

// Run runs the conformance suite against the stores newStore makes; each
// named subtest gets a fresh store. A subtest that a KnownDefect among
// opts names is skipped, with its reason; ModelOps sizes the Model group;
// Groups runs only some groups.
func Run(t *testing.T, newStore func(t testing.TB) storage.Store, opts ...Option) {
	var c runConfig
	for _, o := range opts {
		o.apply(&c)
	}
	groups := []group{
		{"Orgs", orgTests},
		{"Users", userTests},
		{"DeleteUser", deleteUserTests},
		{"ListUsers", listUsersTests},
		{"Tokens", tokenTests},
		{"ListTokens", listTokensTests},
		{"DeleteToken", deleteTokenTests},
		{"ReadAccess", accessTests},
		{"Revoked", revokedTests},
		{"Ducklings", ducklingTests},
		{"Dives", diveTests},
		{"EmbedSessions", embedSessionTests},
		{"Feedback", feedbackTests},
		{"SeedMarks", seedMarkTests},
		{"Ping", pingTests},
		{"Events", eventTests},
		{"Concurrency", concurrencyTests},
		{"Model", modelTests(t, c)},
	}
	for _, name := range c.groups {
		if !slices.ContainsFunc(groups, func(g group) bool { return g.name == name }) {
			t.Fatalf("storagetest.Groups: no group %q", name)
		}
	}
	for _, g := range groups {
		if c.groups != nil && !slices.Contains(c.groups, g.name) {
			continue
		}
		t.Run(g.name, func(t *testing.T) {
			for _, st := range g.tests {
				t.Run(st.name, func(t *testing.T) {
					for _, k := range c.known {
						if k.Test == g.name+"/"+st.name {
							t.Skip("known defect: " + k.Why)
						}
					}
					// A store that panics fails this subtest, not the
					// run: the later subtests still report.
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("panic: %v\n%s", r, debug.Stack())
						}
					}()
					s := newStore(t)
					require.NotNil(t, s, "newStore returned nil")
					st.fn(t, s)
				})
			}
		})
	}
}

// t0 is the instant most records of the suite are created at: UTC, with
// milliseconds, so that a store that drops sub-second precision is caught.
var t0 = time.Date(2026, 6, 19, 12, 34, 56, 789000000, time.UTC)

// past is an instant before any plausible wall clock the suite runs under,
// so a store that wrongly reads its own clock to check expiry is caught.
var past = time.Date(2001, 2, 3, 4, 5, 6, 7000000, time.UTC)

// at returns t0 moved by d, which must be a whole number of milliseconds.
func at(d time.Duration) time.Time { return t0.Add(d) }

// digest returns the SHA-256 digest of s.
func digest(s string) storage.Digest { return sha256.Sum256([]byte(s)) }

// ptr returns a pointer to b.
func ptr(b bool) *bool { return &b }

// configA and configB are two instance configurations that differ in every
// field, so a mix of the two is recognisable.
var (
	configA = storage.InstanceConfig{
		ReadWrite:   storage.InstanceSide{Size: "standard", FlockSize: 0, CooldownSeconds: 300},
		ReadScaling: storage.InstanceSide{Size: "pulse", FlockSize: 2, CooldownSeconds: 60},
	}
	configB = storage.InstanceConfig{
		ReadWrite:   storage.InstanceSide{Size: "jumbo", FlockSize: 1, CooldownSeconds: 900},
		ReadScaling: storage.InstanceSide{Size: "mega", FlockSize: 16, CooldownSeconds: 0},
	}
)

// newOrg creates an organization with a fresh id and returns it.
func newOrg(t testing.TB, s storage.Store) storage.Org {
	t.Helper()
	o := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(t.Context(), o, nil))
	return o
}

// newUser builds (without storing) a user of org named name, with every
// field set.
func newUser(org, name string, sa bool) storage.User {
	u := storage.User{
		ID:               uuid.NewString(),
		Org:              org,
		Username:         name,
		FoldedUsername:   strings.ToLower(name),
		Description:      "the user " + name,
		IsServiceAccount: sa,
		Role:             "Member",
		Privileges:       []string{"read", "write"},
		Email:            strings.ToLower(name) + "@example.com",
		FirstName:        "First " + name,
		LastName:         "Last " + name,
		CreatedAt:        t0,
		Instances:        configA,
	}
	if sa {
		u.Email, u.FirstName, u.LastName = "", "", ""
	}
	return u
}

// createUser builds a user with newUser, stores it and returns it.
func createUser(t testing.TB, s storage.Store, org, name string, sa bool) storage.User {
	t.Helper()
	u := newUser(org, name, sa)
	require.NoError(t, s.CreateUser(t.Context(), u, storage.UserLimit{}, nil), "create user %q", name)
	return u
}

// setPrivileges replaces the privileges of the user *u, stored as *u
// holds them, with to, and keeps *u as it is then stored.
func setPrivileges(t testing.TB, s storage.Store, u *storage.User, to ...string) {
	t.Helper()
	require.NoError(t, s.SetPrivileges(t.Context(), u.Org, u.ID, u.Privileges, to, nil), "set the privileges of %q", u.Username)
	u.Privileges = to
}

// deleteUser deletes the user of org named folded, found by name and
// deleted by its id, and returns the record DeleteUser returned.
func deleteUser(t testing.TB, s storage.Store, org, folded string) storage.User {
	t.Helper()
	got, err := s.DeleteUser(t.Context(), org, getUser(t, s, org, folded).ID, nil)
	require.NoError(t, err, "delete user %q", folded)
	return got
}

// newToken builds (without storing) a token of u; its digest is derived
// from its fresh id. A zero expires means the token never expires.
func newToken(u storage.User, created, expires time.Time) storage.Token {
	id := uuid.NewString()
	return storage.Token{
		ID:          id,
		Org:         u.Org,
		UserID:      u.ID,
		Digest:      digest("token " + id),
		Name:        "token of " + u.Username,
		Description: "a token",
		Type:        "read_write",
		CreatedAt:   created,
		ExpiresAt:   expires,
	}
}

// createToken builds a token with newToken and stores it without a quota.
func createToken(t testing.TB, s storage.Store, u storage.User, created, expires time.Time) storage.Token {
	t.Helper()
	tok := newToken(u, created, expires)
	require.NoError(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil))
	return tok
}

// newSession builds (without storing) an embed session of u, with every
// field set.
func newSession(u storage.User, value string) storage.EmbedSession {
	return storage.EmbedSession{
		Digest:   digest("session " + value),
		Org:      u.Org,
		DiveID:   "dive-" + value,
		Version:  3,
		UserID:   u.ID,
		Username: u.Username,
		Resources: []storage.Resource{
			{URL: "md:sales", Alias: "sales"},
			{URL: "md:_share/x/y", Alias: "shared"},
		},
		InitialState: []byte(`{"tab":"overview","n":1}`),
		AffinityKey:  "affinity-" + value,
		CreatedAt:    t0,
		ExpiresAt:    at(time.Hour),
	}
}

// createSession builds a session with newSession and stores it.
func createSession(t testing.TB, s storage.Store, u storage.User, value string) storage.EmbedSession {
	t.Helper()
	es := newSession(u, value)
	require.NoError(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil))
	return es
}

// setDuckling stores a Duckling report of u.
func setDuckling(t testing.TB, s storage.Store, u storage.User, id string, active bool, when time.Time) storage.Duckling {
	t.Helper()
	d := storage.Duckling{Org: u.Org, UserID: u.ID, ID: id, Active: active, At: when}
	require.NoError(t, s.SetDuckling(t.Context(), d))
	return d
}

// The norm functions bring a record to a canonical form for comparison:
// times in UTC (so that Equal instants compare equal whatever their
// location) and empty slices as nil (the contract does not distinguish them).

func normUser(u storage.User) storage.User {
	u.CreatedAt = u.CreatedAt.UTC()
	if len(u.Privileges) == 0 {
		u.Privileges = nil
	}
	return u
}

func normToken(tok storage.Token) storage.Token {
	tok.CreatedAt = tok.CreatedAt.UTC()
	tok.ExpiresAt = tok.ExpiresAt.UTC()
	return tok
}

func normDuckling(d storage.Duckling) storage.Duckling {
	d.At = d.At.UTC()
	return d
}

func normDucklings(ds []storage.Duckling) []storage.Duckling {
	out := make([]storage.Duckling, len(ds))
	for i, d := range ds {
		out[i] = normDuckling(d)
	}
	return out
}

func normDive(d storage.Dive) storage.Dive {
	if len(d.RequiredResources) == 0 {
		d.RequiredResources = nil
	}
	return d
}

func normSession(es storage.EmbedSession) storage.EmbedSession {
	es.CreatedAt = es.CreatedAt.UTC()
	es.ExpiresAt = es.ExpiresAt.UTC()
	if len(es.Resources) == 0 {
		es.Resources = nil
	}
	if len(es.InitialState) == 0 {
		es.InitialState = nil
	}
	return es
}

// assertUser asserts that got is the user want, times compared with Equal.
func assertUser(t testing.TB, want, got storage.User, msgAndArgs ...any) bool {
	t.Helper()
	ok := assertTime(t, "User.CreatedAt", want.CreatedAt, got.CreatedAt)
	return assert.Equal(t, normUser(want), normUser(got), msgAndArgs...) && ok
}

// assertToken asserts that got is the token want, times compared with Equal.
func assertToken(t testing.TB, want, got storage.Token, msgAndArgs ...any) bool {
	t.Helper()
	ok := assertTime(t, "Token.CreatedAt", want.CreatedAt, got.CreatedAt)
	ok = assertTime(t, "Token.ExpiresAt", want.ExpiresAt, got.ExpiresAt) && ok
	return assert.Equal(t, normToken(want), normToken(got), msgAndArgs...) && ok
}

// assertTokens asserts that got are the tokens want, in that order.
func assertTokens(t testing.TB, want, got []storage.Token) bool {
	t.Helper()
	if !assert.Equal(t, tokenIDs(want), tokenIDs(got), "token ids") {
		return false
	}
	ok := true
	for i := range want {
		ok = assertToken(t, want[i], got[i]) && ok
	}
	return ok
}

// assertSession asserts that got is the session want, times compared with
// Equal.
func assertSession(t testing.TB, want, got storage.EmbedSession) bool {
	t.Helper()
	ok := assertTime(t, "EmbedSession.CreatedAt", want.CreatedAt, got.CreatedAt)
	ok = assertTime(t, "EmbedSession.ExpiresAt", want.ExpiresAt, got.ExpiresAt) && ok
	return assert.Equal(t, normSession(want), normSession(got)) && ok
}

// assertTime asserts that got is the instant want (the "time precision"
// check: milliseconds must survive a round trip).
func assertTime(t testing.TB, field string, want, got time.Time) bool {
	t.Helper()
	return assert.Truef(t, want.Equal(got), "%s: want %s, got %s", field,
		want.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
}

func tokenIDs(toks []storage.Token) []string {
	ids := make([]string, len(toks))
	for i, tok := range toks {
		ids[i] = tok.ID
	}
	return ids
}

func foldedNames(us []storage.User) []string {
	names := make([]string, len(us))
	for i, u := range us {
		names[i] = u.FoldedUsername
	}
	return names
}

// requireNoTokens requires that ListTokens finds no token of the user userID
// of org. The contract does not say whether listing the tokens of a user
// that does not exist is an empty list or ErrNotFound, so both are accepted.
func requireNoTokens(t testing.TB, s storage.Store, org, userID string) {
	t.Helper()
	toks, err := s.ListTokens(t.Context(), org, userID, past)
	if err != nil {
		require.ErrorIs(t, err, storage.ErrNotFound)
		return
	}
	require.Len(t, toks, 0, "tokens %v", tokenIDs(toks))
}

// requireTokenGone requires that ReadAccess no longer finds tok.
func requireTokenGone(t testing.TB, s storage.Store, tok storage.Token) {
	t.Helper()
	_, err := credential(t, s, tok.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound, "token %s", tok.ID)
}

// requireTokenFound requires that ReadAccess finds tok, with its user u.
func requireTokenFound(t testing.TB, s storage.Store, tok storage.Token, u storage.User) {
	t.Helper()
	c, err := credential(t, s, tok.Digest)
	require.NoError(t, err, "token %s", tok.ID)
	assertToken(t, tok, c.Token)
	assertUser(t, u, c.User)
}

// credential returns what ReadAccess reads of the digest d without a
// target: the credential.
func credential(t testing.TB, s storage.Store, d storage.Digest) (storage.Credential, error) {
	a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: d})
	return a.Credential, err
}

// getUser requires that GetUser finds the user of org whose folded username
// is folded, and returns it.
func getUser(t testing.TB, s storage.Store, org, folded string) storage.User {
	t.Helper()
	u, err := s.GetUser(t.Context(), org, folded)
	require.NoError(t, err, "get user %q", folded)
	return u
}

// userName returns the i-th of a family of distinct usernames.
func userName(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }

// scribble overwrites every element of s up to its capacity with v, the way
// a caller that mutates or appends to a slice it holds would: a store that
// shares memory with its callers sees the change.
func scribble[E any](s []E, v E) {
	s = s[:cap(s)]
	for i := range s {
		s[i] = v
	}
}
