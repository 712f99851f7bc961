package orgadmin_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// sampleSeed is the fixture of DESIGN §12 with its "…" filled in, plus a
// service account "bot" that gives only the required fields and a role-less
// service account "ci_bot" with a non-default configuration.
const sampleSeed = `{"organizations": [{
  "id": "acme",
  "users": [{
    "username": "alice", "role": "Admin", "is_service_account": false,
    "description": "Head of data", "email": "alice@example.com", "first_name": "Alice", "last_name": "Liddell",
    "privileges": ["member_management.view_all_members"],
    "tokens": [{"name": "ci", "value": "a-secret-of-16-to-512-chars",
                "token_type": "read_write", "ttl": 3600, "description": "CI pipeline"}],
    "instances": {"read_write": {"instance_size": "standard"},
                  "read_scaling": {"instance_size": "standard", "flock_size": 4}},
    "ducklings": [{"id": "rw", "status": "active"}, {"id": "rs.0", "status": "cooldown"}]
  }, {
    "username": "bot"
  }, {
    "username": "Ci_Bot", "is_service_account": true,
    "tokens": [{"name": "reader", "value": "reader-token-value-0001", "token_type": "read_scaling"}],
    "instances": {"read_write": {"instance_size": "mega", "cooldown_seconds": 120},
                  "read_scaling": {"instance_size": "pulse", "flock_size": 4.0}}
  }],
  "dives": [{"id": "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f", "title": "Sales", "version": 3,
             "required_resources": [{"url": "md:sales", "alias": "s"}]}]
}]}`

const aliceToken = "a-secret-of-16-to-512-chars"

// loadSeed decodes and applies a JSON seed.
func loadSeed(t testing.TB, svc *orgadmin.Service, js string) {
	t.Helper()
	sd, err := orgadmin.DecodeSeed(strings.NewReader(js))
	require.NoError(t, err)
	require.NoError(t, svc.ApplySeed(context.Background(), sd))
}

// seededEnv is seedEnv with the sample seed loaded, and its Admin alice.
func seededEnv(t testing.TB) (*orgadmin.Service, *memstore.Store, *fakeClock, orgadmin.Caller) {
	t.Helper()
	svc, store, clk := seedEnv(t)
	loadSeed(t, svc, sampleSeed)
	alice, err := svc.Authenticate(context.Background(), aliceToken)
	require.NoError(t, err)
	return svc, store, clk, alice
}

// seedEnv is a Service on an empty store with a fake clock; nothing is
// bootstrapped.
func seedEnv(t testing.TB) (*orgadmin.Service, *memstore.Store, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	store := memstore.New()
	return orgadmin.New(store, orgadmin.Config{Now: clk.Now}), store, clk
}

func TestSeed_SampleFixture(t *testing.T) {
	svc, store, clk := seedEnv(t)
	ctx := context.Background()
	clk.Advance(time.Hour)
	load := t0.Add(time.Hour)
	loadSeed(t, svc, sampleSeed)

	alice, err := svc.Authenticate(ctx, aliceToken)
	require.NoError(t, err, "the seeded token value authenticates")
	assert.Equal(t, "acme", alice.Org())
	assert.Equal(t, "alice", alice.Username())
	assert.Equal(t, orgadmin.RoleAdmin, alice.Role())
	assert.Equal(t, orgadmin.TokenReadWrite, alice.TokenType())

	page, err := svc.ListUsers(ctx, alice, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 3, page.TotalCount)
	require.Len(t, page.Users, 3)
	u := page.Users[0]
	assert.Equal(t, "alice", u.Username)
	assert.Equal(t, orgadmin.RoleAdmin, u.Role)
	assert.False(t, u.IsServiceAccount)
	assert.Equal(t, "Head of data", u.Description)
	assert.Equal(t, "alice@example.com", u.Email)
	assert.Equal(t, "Alice", u.FirstName)
	assert.Equal(t, "Liddell", u.LastName)
	assert.Equal(t, []string{orgadmin.PrivilegeViewAllMembers}, u.Privileges)
	assert.Equal(t, load, u.CreatedAt)
	bot := page.Users[1]
	assert.Equal(t, "bot", bot.Username)
	assert.Equal(t, orgadmin.RoleMember, bot.Role, "role defaults to Member")
	assert.False(t, bot.IsServiceAccount)
	assert.Empty(t, bot.Privileges)
	ci := page.Users[2]
	assert.Equal(t, "Ci_Bot", ci.Username)
	assert.Equal(t, orgadmin.RoleMember, ci.Role)
	assert.True(t, ci.IsServiceAccount)

	// Tokens: the ttl counts from the load.
	toks, err := svc.ListTokens(ctx, alice, "alice")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	assert.Equal(t, "ci", toks[0].Name)
	assert.Equal(t, "CI pipeline", toks[0].Description)
	assert.Equal(t, orgadmin.TokenReadWrite, toks[0].Type)
	assert.Equal(t, load, toks[0].CreatedAt)
	assert.Equal(t, load.Add(3600*time.Second), toks[0].ExpireAt)
	assert.Empty(t, toks[0].Value)
	toks, err = svc.ListTokens(ctx, alice, "ci_bot")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	assert.Equal(t, orgadmin.TokenReadScaling, toks[0].Type)
	assert.True(t, toks[0].ExpireAt.IsZero())
	reader, err := svc.Authenticate(ctx, "reader-token-value-0001")
	require.NoError(t, err)
	assert.Equal(t, orgadmin.TokenReadScaling, reader.TokenType())
	toks, err = svc.ListTokens(ctx, alice, "bot")
	require.NoError(t, err)
	assert.Empty(t, toks)

	// Instances.
	cfg, err := svc.GetInstanceConfig(ctx, alice, "alice")
	require.NoError(t, err)
	assert.Equal(t, defaultConfig(), cfg)
	cfg, err = svc.GetInstanceConfig(ctx, alice, "bot")
	require.NoError(t, err)
	assert.Equal(t, defaultConfig(), cfg)
	cfg, err = svc.GetInstanceConfig(ctx, alice, "ci_bot")
	require.NoError(t, err)
	assert.Equal(t, orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "mega", Cooldown: orgadmin.Some(120 * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: "pulse", FlockSize: 4},
	}, cfg, "flock_size 4.0 is accepted")

	// Ducklings: "cooldown" was marked idle at load.
	active := func() []orgadmin.ActiveAccount {
		t.Helper()
		a, err := svc.GetActiveAccounts(ctx, alice)
		require.NoError(t, err)
		return a
	}
	assert.Equal(t, []orgadmin.ActiveAccount{{Username: "alice", Ducklings: []orgadmin.Duckling{rw("active"), rs(0, "cooldown")}}}, active())
	clk.Advance(60*time.Second - time.Millisecond)
	assert.Equal(t, []orgadmin.ActiveAccount{{Username: "alice", Ducklings: []orgadmin.Duckling{rw("active"), rs(0, "cooldown")}}}, active())
	clk.Advance(time.Millisecond)
	assert.Equal(t, []orgadmin.ActiveAccount{{Username: "alice", Ducklings: []orgadmin.Duckling{rw("active")}}}, active())

	// Dives.
	d, err := store.GetDive(ctx, "acme", "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f")
	require.NoError(t, err)
	assert.Equal(t, storage.Dive{
		ID: "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f", Org: "acme", Title: "Sales", Version: 3,
		RequiredResources: []storage.Resource{{URL: "md:sales", Alias: "s"}},
	}, d)
	v, err := svc.CreateEmbedSession(ctx, alice, "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f", orgadmin.CreateEmbedSessionInput{Username: "ci_bot"})
	require.NoError(t, err)
	s, err := svc.ResolveEmbedSession(ctx, v)
	require.NoError(t, err)
	assert.Equal(t, 3, s.Version)
	assert.Equal(t, []orgadmin.Resource{{URL: "md:sales", Alias: "s"}}, s.RequiredResources)

	// The seeded token expires ttl after the load.
	clk.Advance(3600*time.Second - 60*time.Second)
	_, err = svc.Authenticate(ctx, aliceToken)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

// seedState is everything a caller can observe of the sample seed's org.
type seedState struct {
	Users  orgadmin.UserPage
	Tokens map[string][]orgadmin.Token
	Active []orgadmin.ActiveAccount
	Config map[string]orgadmin.InstanceConfig
	Dive   storage.Dive
}

// seededOnce is what sampleSeed, loaded once on a fresh memory store at
// clk's time, leaves.
func seededOnce(t testing.TB, clk *fakeClock) seedState {
	t.Helper()
	once := memstore.New()
	loadSeed(t, orgadmin.New(once, orgadmin.Config{Now: clk.Now}), sampleSeed)
	return observeSeed(t, orgadmin.New(once, orgadmin.Config{Now: clk.Now}), once)
}

func observeSeed(t testing.TB, svc *orgadmin.Service, store storage.Store) seedState {
	t.Helper()
	ctx := context.Background()
	alice, err := svc.Authenticate(ctx, aliceToken)
	require.NoError(t, err)
	st := seedState{Tokens: map[string][]orgadmin.Token{}, Config: map[string]orgadmin.InstanceConfig{}}
	st.Users, err = svc.ListUsers(ctx, alice, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	for _, u := range st.Users.Users {
		st.Tokens[u.Username], err = svc.ListTokens(ctx, alice, u.Username)
		require.NoError(t, err)
		st.Config[u.Username], err = svc.GetInstanceConfig(ctx, alice, u.Username)
		require.NoError(t, err)
	}
	st.Active, err = svc.GetActiveAccounts(ctx, alice)
	require.NoError(t, err)
	st.Dive, err = store.GetDive(ctx, "acme", "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f")
	require.NoError(t, err)
	return st
}

func TestSeed_ApplyingTwiceChangesNothing(t *testing.T) {
	svc, store, clk := seedEnv(t)
	loadSeed(t, svc, sampleSeed)
	// Long enough for rs.0's cooldown to end and for a token minted anew to
	// show a different created_ts and expire_at.
	clk.Advance(2 * time.Minute)
	before := observeSeed(t, svc, store)
	require.Equal(t, []orgadmin.ActiveAccount{{Username: "alice", Ducklings: []orgadmin.Duckling{rw("active")}}}, before.Active)

	loadSeed(t, svc, sampleSeed)
	after := observeSeed(t, svc, store)
	assert.Equal(t, before, after)

	// Also from a second Service sharing the store (a restart).
	loadSeed(t, orgadmin.New(store, orgadmin.Config{Now: clk.Now}), sampleSeed)
	assert.Equal(t, before, observeSeed(t, svc, store))
}

func TestSeed_BrokenRuleNamesEntryAndWritesNothing(t *testing.T) {
	const okOrg = `{"id": "first", "users": [{"username": "zed", "tokens": [{"name": "t", "value": "zed-token-value-0001"}]}],
	                "dives": [{"id": "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"}]}`
	cases := []struct {
		name string
		org  string // the second organization, "acme", which breaks a rule
		want []string
	}{
		{"bad username", `{"id": "acme", "users": [{"username": "alice"}, {"username": "9lives"}]}`,
			[]string{"users[1]", "9lives"}},
		{"username with a dash", `{"id": "acme", "users": [{"username": "alice"}, {"username": "al-ice"}]}`,
			[]string{"users[1]", "al-ice"}},
		{"token value of 15 chars", `{"id": "acme", "users": [{"username": "alice", "tokens": [
			{"name": "ok", "value": "sixteen-chars-ok"}, {"name": "short", "value": "fifteen-chars-x"}]}]}`,
			[]string{"users[0]", "alice", "tokens[1]", "short"}},
		{"token without name", `{"id": "acme", "users": [{"username": "alice", "tokens": [{"value": "sixteen-chars-ok"}]}]}`,
			[]string{"users[0]", "alice", "tokens[0]"}},
		{"duplicate token value", `{"id": "acme", "users": [{"username": "alice", "tokens": [{"name": "dup", "value": "zed-token-value-0001"}]}]}`,
			[]string{"users[0]", "alice", "tokens[0]", "dup"}},
		{"bad duckling id", `{"id": "acme", "users": [{"username": "alice", "ducklings": [{"id": "rw", "status": "active"}, {"id": "rs.64", "status": "active"}]}]}`,
			[]string{"users[0]", "alice", "ducklings[1]", "rs.64"}},
		{"bad duckling status", `{"id": "acme", "users": [{"username": "alice", "ducklings": [{"id": "rw", "status": "busy"}]}]}`,
			[]string{"users[0]", "alice", "ducklings[0]", "rw"}},
		{"duplicate duckling id", `{"id": "acme", "users": [{"username": "alice", "ducklings": [{"id": "rw", "status": "active"}, {"id": "rw", "status": "cooldown"}]}]}`,
			[]string{"users[0]", "alice", "ducklings[1]", "rw", "duplicate duckling id"}},
		{"duplicate username", `{"id": "acme", "users": [{"username": "alice"}, {"username": "ALICE"}]}`,
			[]string{"users[1]", "ALICE"}},
		{"bad role", `{"id": "acme", "users": [{"username": "alice", "role": "Owner"}]}`,
			[]string{"users[0]", "alice"}},
		{"bad instances", `{"id": "acme", "users": [{"username": "alice", "instances": {"read_write": {"instance_size": "pulse", "cooldown_seconds": 60}, "read_scaling": {"instance_size": "standard", "flock_size": 65}}}]}`,
			[]string{"users[0]", "alice", "cooldown_seconds", "flock_size"}},
		{"flock on read_write", `{"id": "acme", "users": [{"username": "alice", "instances": {"read_write": {"instance_size": "jumbo", "flock_size": 3}, "read_scaling": {"instance_size": "standard", "flock_size": 2}}}]}`,
			[]string{"users[0]", "alice", "instances.read_write.flock_size: unknown key"}},
		{"bad dive uuid", `{"id": "acme", "users": [{"username": "alice"}], "dives": [{"id": "0b0d-not-a-uuid", "title": "Sales"}]}`,
			[]string{"dives[0]", "0b0d-not-a-uuid"}},
		{"dive version 0", `{"id": "acme", "dives": [{"id": "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f", "version": 0}]}`,
			[]string{"dives[0]", "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f"}},
		{"bad org id", `{"id": "ac me"}`, []string{"organizations[1]", "ac me"}},
		{"duplicate org id", `{"id": "first"}`, []string{"organizations[1]", "first"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc, store, _ := seedEnv(t)
			ctx := context.Background()
			sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [` + okOrg + `, ` + c.org + `]}`))
			require.NoError(t, err)
			err = svc.ApplySeed(ctx, sd)
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			for _, org := range []string{"first", "acme"} {
				_, err = store.GetOrg(ctx, org)
				assert.ErrorIsf(t, err, storage.ErrNotFound, "org %s must not exist", org)
			}
			_, err = svc.Authenticate(ctx, "zed-token-value-0001")
			requireCode(t, err, orgadmin.ErrUnauthorized)
		})
	}
}

func TestSeed_FlockSizeMustBeWhole(t *testing.T) {
	seed := func(flock string) string {
		return `{"organizations": [{"id": "acme", "users": [{"username": "alice",
		  "instances": {"read_write": {"instance_size": "standard"},
		                "read_scaling": {"instance_size": "standard", "flock_size": ` + flock + `}}}]}]}`
	}
	for _, ok := range []string{"4.0", "4", "0", "64", "64.0", "4e0"} {
		svc, _, _ := seedEnv(t)
		loadSeed(t, svc, seed(ok))
		u, err := svc.GetUser(context.Background(), "acme", "alice")
		require.NoError(t, err)
		assert.Equal(t, "alice", u.Username)
	}
	for _, bad := range []string{"2.5", "4.000001", `"4"`, "65", "-1", "1e100", "4.0000000000000001", "1e-400"} {
		svc, store, _ := seedEnv(t)
		sd, err := orgadmin.DecodeSeed(strings.NewReader(seed(bad)))
		if err == nil {
			err = svc.ApplySeed(context.Background(), sd)
		}
		assert.Errorf(t, err, "flock_size %s", bad)
		_, err = store.GetOrg(context.Background(), "acme")
		assert.ErrorIs(t, err, storage.ErrNotFound)
	}
}

func TestSeed_FractionalNumberErrorNamesEntry(t *testing.T) {
	sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "alice",
	  "instances": {"read_write": {"instance_size": "standard"},
	                "read_scaling": {"instance_size": "standard", "flock_size": 2.5}}}]}]}`))
	require.NoError(t, err, "decoding accepts any number; validation names the entry")
	err = sd.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `users[0] ("alice")`)
	assert.Contains(t, err.Error(), "flock_size")
}

func TestSeed_ExistingDataIsLeftAsItIs(t *testing.T) {
	svc, store, clk, alice := seededEnv(t)
	ctx := context.Background()
	_, err := svc.SetInstanceConfig(ctx, alice, "ci_bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "giga"},
		ReadScaling: orgadmin.InstanceSide{Size: "giga", FlockSize: 9},
	}})
	require.NoError(t, err)
	clk.Advance(time.Minute)
	before := observeSeed(t, svc, store)
	loadSeed(t, svc, sampleSeed)
	assert.Equal(t, before, observeSeed(t, svc, store), "a restart with the seed does not undo changes")
}

func TestSeed_TokenValueOfAnotherUserWritesNothing(t *testing.T) {
	svc, store, _ := seedEnv(t)
	ctx := context.Background()
	loadSeed(t, svc, sampleSeed)
	sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "globex", "users": [
	  {"username": "bob", "tokens": [{"name": "stolen", "value": "` + aliceToken + `"}]}]}]}`))
	require.NoError(t, err)
	err = svc.ApplySeed(ctx, sd)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bob")
	assert.Contains(t, err.Error(), "stolen")
	_, err = store.GetOrg(ctx, "globex")
	assert.ErrorIs(t, err, storage.ErrNotFound)
}

// TestSeed_TokensForAnotherKindOfUserWriteNothing: an entry whose
// username names an existing user of another role or kind gives it no
// token: a token declared for a Member service account must not be an
// Admin's. Without new tokens, the entry leaves that user as it is.
func TestSeed_TokensForAnotherKindOfUserWriteNothing(t *testing.T) {
	svc, store, _, alice := seededEnv(t)
	ctx := context.Background()
	_, err := svc.CreateServiceAccount(ctx, alice, orgadmin.CreateServiceAccountInput{Username: "reporter"})
	require.NoError(t, err)
	for _, tc := range []struct{ name, entry, want string }{
		{"a Member service account for an Admin user", `{"username": "ALICE", "is_service_account": true,
		  "tokens": [{"name": "low", "value": "low-privilege-token-0001"}]}`,
			`seed: organizations[0] ("acme").users[0] ("ALICE"): the organization's user "alice" is an Admin user, the entry declares a Member service account: its new tokens would be that user's`},
		{"a Member user (the default role) for an Admin user", `{"username": "alice",
		  "tokens": [{"name": "low", "value": "low-privilege-token-0001"}]}`,
			`seed: organizations[0] ("acme").users[0] ("alice"): the organization's user "alice" is an Admin user, the entry declares a Member user: its new tokens would be that user's`},
		{"an Admin user for a Member service account", `{"username": "Reporter", "role": "Admin",
		  "tokens": [{"name": "admin", "value": "would-be-admin-token-01"}]}`,
			`seed: organizations[0] ("acme").users[0] ("Reporter"): the organization's user "reporter" is a Member service account, the entry declares an Admin user: its new tokens would be that user's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := observeSeed(t, svc, store)
			sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [` + tc.entry + `]}]}`))
			require.NoError(t, err)
			err = svc.ApplySeed(ctx, sd)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.Equal(t, before, observeSeed(t, svc, store), "nothing written")
			for _, v := range []string{"low-privilege-token-0001", "would-be-admin-token-01"} {
				_, err := svc.Authenticate(ctx, v)
				assert.Equal(t, orgadmin.CodeUnauthorized, orgadmin.ErrorCode(err), v)
			}
		})
	}
	// The same kind of user gets the entry's new token; another kind with
	// nothing to add is left as it is.
	loadSeed(t, svc, `{"organizations": [{"id": "acme", "users": [
	  {"username": "Reporter", "is_service_account": true, "tokens": [{"name": "ci", "value": "reporter-token-value-01"}]},
	  {"username": "alice", "is_service_account": true}]}]}`)
	a, err := svc.Authenticate(ctx, "reporter-token-value-01")
	require.NoError(t, err)
	assert.Equal(t, "reporter", a.Username())
}

// TestSeed_RevokedValueFromAnotherUserWritesNothing: a value revoked in
// one organization is not handed by a seed to a user of another; in the
// organization whose seed loaded it, it stays revoked whichever entry
// names it; a value revoked from the entry's own user, which no seed
// loaded (SeedToken's, as a cut-short loading's withdrawn creation),
// is loaded again.
func TestSeed_RevokedValueFromAnotherUserWritesNothing(t *testing.T) {
	svc, store, _, alice := seededEnv(t)
	ctx := context.Background()
	ts, err := svc.ListTokens(ctx, alice, "ci_bot")
	require.NoError(t, err)
	require.Len(t, ts, 1)
	require.NoError(t, svc.DeleteToken(ctx, alice, "ci_bot", ts[0].ID))
	const revoked = "reader-token-value-0001"
	before := observeSeed(t, svc, store)
	sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "globex", "users": [
	  {"username": "dave", "tokens": [{"name": "d", "value": "` + revoked + `"}]}]}]}`))
	require.NoError(t, err)
	err = svc.ApplySeed(ctx, sd)
	require.Error(t, err)
	assert.Equal(t, `seed: organizations[0] ("globex").users[0] ("dave").tokens[0] ("d"): token value was revoked from another user; a seed does not give it to anyone else (give the entry another value)`, err.Error())
	assert.Equal(t, before, observeSeed(t, svc, store), "nothing written")
	_, err = store.GetOrg(ctx, "globex")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = svc.Authenticate(ctx, revoked)
	assert.ErrorIs(t, err, orgadmin.ErrRevokedToken)

	// In acme, whose seed loaded it: not created again, by its entry or
	// another's.
	loadSeed(t, svc, sampleSeed)
	loadSeed(t, svc, `{"organizations": [{"id": "acme", "users": [{"username": "bot", "tokens": [{"name": "d", "value": "`+revoked+`"}]}]}]}`)
	_, err = svc.Authenticate(ctx, revoked)
	assert.ErrorIs(t, err, orgadmin.ErrRevokedToken)

	// A value no seed loaded, revoked from bot: bot's entry gets it
	// again, another user's entry does not.
	const own = "bot-token-value-seeded-by-go-api"
	tok, err := svc.SeedToken(ctx, "acme", "bot", orgadmin.SeedTokenInput{CreateTokenInput: orgadmin.CreateTokenInput{Name: "b"}, Value: own})
	require.NoError(t, err)
	require.NoError(t, svc.DeleteToken(ctx, alice, "bot", tok.ID))
	sd, err = orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "ci_bot", "is_service_account": true, "tokens": [{"name": "b", "value": "` + own + `"}]}]}]}`))
	require.NoError(t, err)
	err = svc.ApplySeed(ctx, sd)
	assert.Equal(t, `seed: organizations[0] ("acme").users[0] ("ci_bot").tokens[0] ("b"): token value was revoked from another user; a seed does not give it to anyone else (give the entry another value)`, fmt.Sprint(err))
	loadSeed(t, svc, `{"organizations": [{"id": "acme", "users": [{"username": "BOT", "tokens": [{"name": "b", "value": "`+own+`"}]}]}]}`)
	c, err := svc.Authenticate(ctx, own)
	require.NoError(t, err)
	assert.Equal(t, "bot", c.Username())
}

// A seed refused (by Validate, or by ApplySeed's checks before writing)
// is a BAD_REQUEST for ErrorCode, errors.Is and errors.As, its message as
// it was; a store that fails is still an internal error.
func TestSeed_RefusalsAreBadRequests(t *testing.T) {
	svc, _, _, _ := seededEnv(t)
	ctx := context.Background()
	for js, msg := range map[string]string{
		`{"organizations": [{"id": "acme"}, {"id": "acme"}]}`: `seed: organizations[1] ("acme"): duplicate organization id`,
		`{"organizations": [{"id": "acme", "users": [{"username": "ALICE", "role": "Member", "tokens": [{"name": "t", "value": "another-value-000001"}]}]}]}`: `seed: organizations[0] ("acme").users[0] ("ALICE"): the organization's user "alice" is an Admin user, the entry declares a Member user: its new tokens would be that user's`,
	} {
		sd, err := orgadmin.DecodeSeed(strings.NewReader(js))
		require.NoError(t, err)
		err = svc.ApplySeed(ctx, sd)
		require.Error(t, err)
		assert.Equal(t, msg, err.Error())
		assert.Equal(t, orgadmin.CodeBadRequest, orgadmin.ErrorCode(err))
		assert.ErrorIs(t, err, orgadmin.ErrBadRequest)
		assert.NotErrorIs(t, err, orgadmin.ErrInternal)
		var e *orgadmin.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, []orgadmin.Issue{{Message: msg, Code: orgadmin.IssueNotAllowed}}, e.Issues)
	}
	sd, err := orgadmin.DecodeSeed(strings.NewReader(sampleSeed))
	require.NoError(t, err)
	failing := orgadmin.New(failingStore{memstore.New(), errors.New("store down")}, orgadmin.Config{})
	err = failing.ApplySeed(ctx, sd)
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err), "%v", err)
}

// A message quotes at most 64 bytes of a seed's string, so that a huge
// username does not become a huge line; and says what a number must be.
func TestSeed_MessagesQuoteShortly(t *testing.T) {
	long := strings.Repeat("é", 1000)
	sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "` + long + `"}]}]}`))
	require.NoError(t, err)
	err = sd.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `.users[0] ("`+strings.Repeat("é", 32)+`"…): `)
	assert.Less(t, len(err.Error()), 300, err.Error())
	sd, err = orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "a", "tokens": [{"name": "t", "value": "sixteen-chars-ok", "ttl": 1e300}]}]}]}`))
	require.NoError(t, err)
	assert.EqualError(t, sd.Validate(), `seed: organizations[0] ("acme").users[0] ("a").tokens[0] ("t"): ttl: 1e+300 is out of range`)
	sd, err = orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "a", "tokens": [{"name": "t", "value": "sixteen-chars-ok", "ttl": 3600.5}]}]}]}`))
	require.NoError(t, err)
	assert.EqualError(t, sd.Validate(), `seed: organizations[0] ("acme").users[0] ("a").tokens[0] ("t"): ttl: 3600.5 is not a whole number`)
}

func TestDecodeSeed_RejectsMalformedJSON(t *testing.T) {
	for _, js := range []string{``, `{`, `[]`, `{"organizations": [{"id": "acme"}]} {}`, `{"organizations": [{"id": 5}]}`} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.Errorf(t, err, "%q", js)
	}
	// What is wrong, and where, in words.
	for js, want := range map[string]string{
		``:                                   "seed: no JSON object (the file is empty)",
		"  \n":                               "seed: no JSON object (the file is empty)",
		"\ufeff{\"organizations\": []}":      "seed: the file starts with a byte order mark, which JSON does not have (save it as UTF-8 without one)",
		`{"organizations": [{"id" "acme"}]}`: `seed: at byte 26: invalid character '"' after object key`,
		"{\"organizations\": [{\"id\": \"a\xffb\"}]}":                                                            "seed: not valid UTF-8, at byte 29 of the JSON object",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "description": "x\ud800y"}]}]}`:           `seed: a lone surrogate escape (\ud800), which is no character, at byte 80 of the JSON object`,
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "description": "\ud83d\ude00\udc00"}]}]}`: `seed: a lone surrogate escape (\udc00), which is no character, at byte 91 of the JSON object`,
	} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.EqualErrorf(t, err, want, "%q", js)
	}
	// null is valid JSON, but no seed: a fixture that holds nothing by
	// mistake stops the server instead of loading an empty world.
	for _, js := range []string{`null`, ` null `} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.EqualErrorf(t, err, "seed: want a JSON object, not null", "%q", js)
	}
}

// A key the seed format does not have is a mistake (a misspelt "rol"
// would silently make an Admin a Member): refused, with its path, as is a
// key given twice. Keys match exactly.
func TestDecodeSeed_RefusesUnknownAndDuplicateKeys(t *testing.T) {
	for js, want := range map[string]string{
		`{"organizations": [{"id": "acme"}], "extra": true}`:                                                                   "seed: extra: unknown key",
		`{"organizations": [{"id": "acme", "unknown": 1}]}`:                                                                    "seed: organizations[0].unknown: unknown key",
		`{"organizations": [{"id": "acme", "users": [{"username": "a"}, {"username": "b", "rol": "Admin"}]}]}`:                 "seed: organizations[0].users[1].rol: unknown key",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "tokns": []}]}]}`:                                       "seed: organizations[0].users[0].tokns: unknown key",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "tokens": [{"name": "t", "value": "v", "tll": 5}]}]}]}`: "seed: organizations[0].users[0].tokens[0].tll: unknown key",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "instances": {"read_write": {"size": "jumbo"}}}]}]}`:    "seed: organizations[0].users[0].instances.read_write.size: unknown key",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "ducklings": [{"id": "rw", "state": "active"}]}]}]}`:    "seed: organizations[0].users[0].ducklings[0].state: unknown key",
		`{"organizations": [{"id": "acme", "dives": [{"id": "x", "required_resources": [{"uri": "md:x"}]}]}]}`:                 "seed: organizations[0].dives[0].required_resources[0].uri: unknown key",
		`{"organizations": [{"id": "acme", "users": [{"Username": "a"}]}]}`:                                                    "seed: organizations[0].users[0].Username: unknown key",
		`{"organizations": [{"id": "acme", "id": "globex"}]}`:                                                                  "seed: organizations[0].id: duplicate key",
		`{"organizations": [], "organizations": []}`:                                                                           "seed: organizations: duplicate key",
	} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.EqualErrorf(t, err, want, "%s", js)
	}
	sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "a", "role": "Admin",
	  "instances": {"read_write": {"instance_size": "jumbo"}}, "tokens": [{"name": "t", "value": "v", "ttl": 5}]}]}]}`))
	require.NoError(t, err)
	require.Len(t, sd.Organizations, 1)
	assert.Equal(t, "acme", sd.Organizations[0].ID)
	assert.Equal(t, "Admin", sd.Organizations[0].Users[0].Role)
}

// A value of the wrong JSON type is refused with its path, so that the
// operator can tell which of many entries holds it; null stands for the
// zero value, as json.Unmarshal has it.
func TestDecodeSeed_WrongTypeNamesItsPath(t *testing.T) {
	for js, want := range map[string]string{
		`[]`:                    "seed: want a JSON object, not an array",
		`"acme"`:                "seed: want a JSON object, not a string",
		`{"organizations": {}}`: "seed: organizations: want an array, not an object",
		`{"organizations": [{"id": "acme"}, {"id": 5}]}`:                                                            "seed: organizations[1].id: want a string, not a number",
		`{"organizations": [{"id": "acme", "users": [{"username": "a"}, {"username": 5}]}]}`:                        "seed: organizations[0].users[1].username: want a string, not a number",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "is_service_account": "yes"}]}]}`:            "seed: organizations[0].users[0].is_service_account: want a boolean, not a string",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "privileges": "all"}]}]}`:                    "seed: organizations[0].users[0].privileges: want an array, not a string",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "privileges": [true]}]}]}`:                   "seed: organizations[0].users[0].privileges[0]: want a string, not a boolean",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "tokens": [{"name": "t", "ttl": "1h"}]}]}]}`: "seed: organizations[0].users[0].tokens[0].ttl: want a number, not a string",
		`{"organizations": [{"id": "acme", "users": [{"username": "a", "instances": []}]}]}`:                        "seed: organizations[0].users[0].instances: want an object, not an array",
		`{"organizations": [{"id": "acme", "dives": [{"id": "x", "version": "3"}]}]}`:                               "seed: organizations[0].dives[0].version: want a number, not a string",
		`{"organizations": [{"id": "acme", "dives": [{"id": "x", "version": 1e400}]}]}`:                             "seed: organizations[0].dives[0].version: 1e400 is out of range",
		`{"organizations": [{"id": "acme", "dives": [{"id": "x", "version": 3.0000000000000001}]}]}`:                "seed: organizations[0].dives[0].version: 3.0000000000000001 is not a whole number",
	} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.EqualErrorf(t, err, want, "%s", js)
	}
	sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [{"username": "a",
	  "role": null, "privileges": null, "tokens": [{"name": "t", "value": "v", "ttl": null}], "instances": null}], "dives": null}]}`))
	require.NoError(t, err)
	assert.Equal(t, orgadmin.SeedUser{Username: "a", Tokens: []orgadmin.SeedToken{{Name: "t", Value: "v"}}}, sd.Organizations[0].Users[0])
}

// A seed file is one JSON object and nothing else: a stray closing bracket
// after it is refused like any other trailing data (found by FuzzSeed).
func TestDecodeSeed_RefusesAnyDataAfterTheObject(t *testing.T) {
	for _, js := range []string{`{"organizations": []}]`, `{"organizations": []}}`, `{} {}`, `{} x`, `{},`} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.EqualErrorf(t, err, "seed: data after the JSON object", "%q", js)
	}
	for _, js := range []string{`{}`, "{} \n\t\r", " {\"organizations\": []}\n"} {
		_, err := orgadmin.DecodeSeed(strings.NewReader(js))
		assert.NoErrorf(t, err, "%q", js)
	}
}

// A seed that would give a user more live tokens than the limit is refused
// before anything is written, naming the user, rather than stopping
// half-way through the loading.
func TestSeed_TokensPastTheLimitWriteNothing(t *testing.T) {
	ctx := context.Background()
	seed := func(values ...string) orgadmin.Seed {
		var toks []string
		for _, v := range values {
			toks = append(toks, `{"name": "t", "value": "`+v+`"}`)
		}
		sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "acme", "users": [
		  {"username": "alice"}, {"username": "bob", "tokens": [` + strings.Join(toks, ",") + `]}]}]}`))
		require.NoError(t, err)
		require.NoError(t, sd.Validate(), "within the rules a seed alone can check")
		return sd
	}
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{MaxTokensPerUser: 2})

	err := svc.ApplySeed(ctx, seed("token-value-0001", "token-value-0002", "token-value-0003"))
	require.ErrorContains(t, err, `users[1] ("bob")`)
	_, err = store.GetOrg(ctx, "acme")
	require.ErrorIs(t, err, storage.ErrNotFound, "nothing was written")

	// Two fit; the same two again add nothing; a third new one is refused.
	require.NoError(t, svc.ApplySeed(ctx, seed("token-value-0001", "token-value-0002")))
	require.NoError(t, svc.ApplySeed(ctx, seed("token-value-0001", "token-value-0002")))
	err = svc.ApplySeed(ctx, seed("token-value-0001", "token-value-0003"))
	require.ErrorContains(t, err, `users[1] ("bob")`)
	_, err = svc.Authenticate(ctx, "token-value-0003")
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

// A seed that would take an organization past the limit of users is
// refused before anything is written, naming the first user past it;
// users it holds already take no new place.
func TestSeed_UsersPastTheLimitWriteNothing(t *testing.T) {
	ctx := context.Background()
	seed := func(names ...string) orgadmin.Seed {
		var users []string
		for _, n := range names {
			users = append(users, `{"username": "`+n+`"}`)
		}
		sd, err := orgadmin.DecodeSeed(strings.NewReader(`{"organizations": [{"id": "globex"}, {"id": "acme", "users": [` +
			strings.Join(users, ",") + `]}]}`))
		require.NoError(t, err)
		return sd
	}
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{MaxUsersPerOrg: 2})

	err := svc.ApplySeed(ctx, seed("alice", "bob", "carol"))
	require.EqualError(t, err, `seed: organizations[1] ("acme").users[2] ("carol"): the organization would hold more than the limit of 2 users (it holds 0)`)
	for _, org := range []string{"globex", "acme"} {
		_, err = store.GetOrg(ctx, org)
		require.ErrorIs(t, err, storage.ErrNotFound, "nothing was written")
	}

	// Two fit; the same two again add nothing; a third new one is refused.
	require.NoError(t, svc.ApplySeed(ctx, seed("alice", "bob")))
	require.NoError(t, svc.ApplySeed(ctx, seed("Alice", "bob")))
	err = svc.ApplySeed(ctx, seed("carol", "alice"))
	require.ErrorContains(t, err, `users[0] ("carol")`)
	_, err = svc.GetUser(ctx, "acme", "carol")
	requireCode(t, err, orgadmin.ErrNotFound)

	// A seeded user deleted since stays deleted: it needs no place.
	alice, err := store.GetUser(ctx, "acme", "alice")
	require.NoError(t, err)
	_, err = store.DeleteUser(ctx, "acme", alice.ID, nil)
	require.NoError(t, err)
	_, err = svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "zed"})
	require.NoError(t, err)
	require.NoError(t, svc.ApplySeed(ctx, seed("alice", "bob")))
	_, err = svc.GetUser(ctx, "acme", "alice")
	requireCode(t, err, orgadmin.ErrNotFound)
}

// A seed loaded again with a Dive that exists leaves the Dive as it is,
// even when the seed now says something else of it.
func TestSeed_ExistingDiveIsLeftAsItIs(t *testing.T) {
	svc, store, _ := seedEnv(t)
	loadSeed(t, svc, sampleSeed)
	before, err := store.GetDive(context.Background(), "acme", "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f")
	require.NoError(t, err)
	changed := strings.Replace(sampleSeed, `"title": "Sales", "version": 3`, `"title": "Renamed", "version": 9`, 1)
	require.NotEqual(t, sampleSeed, changed)
	loadSeed(t, svc, changed)
	after, err := store.GetDive(context.Background(), "acme", "0b0d6c1e-7d2a-4c3b-9f4e-5a6b7c8d9e0f")
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// racingStore is a store on which another process loads the same seed
// at one step of this one's loading: just before its first creation of a
// user (that user, and every other of the seed, exists by the time the
// creation reaches the store), or, atDive, just after its first look-up
// of a Dive (both found it missing).
type racingStore struct {
	*memstore.Store
	atDive bool
	other  func()
}

// race runs the other loading, once, if this is its step.
func (s *racingStore) race(atDive bool) {
	if other := s.other; other != nil && atDive == s.atDive {
		s.other = nil
		other()
	}
}

func (s *racingStore) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	s.race(false)
	return s.Store.CreateUser(ctx, u, lim, a)
}

func (s *racingStore) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	d, err := s.Store.GetDive(ctx, org, id)
	s.race(true)
	return d, err
}

// Two servers started together on one fresh store with one seed both
// start: a user the other loading created between this one's look-up and
// its creation is one that exists, left as it is; a Dive both found
// missing is registered by one; and nothing is loaded, nor its event
// recorded, twice.
func TestSeed_LoadingRacingAnotherProcessSucceeds(t *testing.T) {
	for _, atDive := range []bool{false, true} {
		t.Run(map[bool]string{false: "at a user's creation", true: "at a Dive's look-up"}[atDive], func(t *testing.T) {
			clk := newFakeClock()
			want := seededOnce(t, clk)

			store := &racingStore{Store: memstore.New(), atDive: atDive}
			other := orgadmin.New(store.Store, orgadmin.Config{Now: clk.Now})
			store.other = func() { loadSeed(t, other, sampleSeed) }
			svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
			loadSeed(t, svc, sampleSeed)
			require.Nil(t, store.other, "the other loading ran")
			assert.Equal(t, withoutIDs(want), withoutIDs(observeSeed(t, svc, store)))

			alice, err := svc.Authenticate(context.Background(), aliceToken)
			require.NoError(t, err)
			for action, n := range map[string]int{orgadmin.ActionUserCreate: 3, orgadmin.ActionTokenSeed: 2, orgadmin.ActionDiveRegister: 1} {
				events, err := svc.AuditEvents(context.Background(), alice, orgadmin.AuditQuery{Action: action})
				require.NoError(t, err)
				assert.Len(t, events.Events, n, "each %s once", action)
			}
		})
	}
}

// withoutIDs is st with the ids of its users and tokens, which each
// loading mints anew, left out.
func withoutIDs(st seedState) seedState {
	users := slices.Clone(st.Users.Users)
	for i := range users {
		users[i].ID = ""
	}
	st.Users.Users = users
	tokens := map[string][]orgadmin.Token{}
	for name, ts := range st.Tokens {
		ts = slices.Clone(ts)
		for i := range ts {
			ts[i].ID = ""
		}
		tokens[name] = ts
	}
	st.Tokens = tokens
	return st
}

// reservingStore is a store on which another process's creation of a
// token with the same value is under way when this one's first creation
// reaches the store: the value is reserved (the first step of a creation
// on a Redis Cluster), so the creation is refused, but the token cannot
// be read yet; the other creation ends right after this one's look-up.
type reservingStore struct {
	*memstore.Store
	other  func() // the other creation, at the first CreateToken
	finish func() // set by the first CreateToken, run after the next ReadAccess
}

func (s *reservingStore) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	if s.other != nil {
		s.finish, s.other = s.other, nil
		return storage.ErrAlreadyExists
	}
	return s.Store.CreateToken(ctx, t, lim, a)
}

func (s *reservingStore) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	a, err := s.Store.ReadAccess(ctx, q)
	if finish := s.finish; finish != nil {
		s.finish = nil
		finish()
	}
	return a, err
}

// Seeding a value that another process is seeding for the same user at
// that moment (servers started together with one fixture) ends with the
// one token, whichever creation stores it.
func TestSeedToken_ValueBeingSeededByAnotherProcess(t *testing.T) {
	ctx := context.Background()
	store := &reservingStore{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{})
	other := orgadmin.New(store.Store, orgadmin.Config{})
	require.NoError(t, other.CreateOrg(ctx, "acme"))
	_, err := other.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "robot", IsServiceAccount: true})
	require.NoError(t, err)
	in := orgadmin.SeedTokenInput{Value: "seeded-token-robot-0001", CreateTokenInput: orgadmin.CreateTokenInput{Name: "r"}}
	store.other = func() {
		_, err := other.SeedToken(ctx, "acme", "robot", in)
		require.NoError(t, err)
	}

	tok, err := svc.SeedToken(ctx, "acme", "robot", in)
	require.NoError(t, err)
	require.Nil(t, store.finish, "the other creation ran")
	assert.Equal(t, in.Value, tok.Value)
	robot, err := svc.Authenticate(ctx, in.Value)
	require.NoError(t, err)
	toks, err := svc.ListTokens(ctx, robot, "robot")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	assert.Equal(t, tok.ID, toks[0].ID)
}

// answerLosingStore stores the first user created and then fails, as a
// store whose answer is lost on its way back does.
type answerLosingStore struct {
	*memstore.Store
	lost bool
}

func (s *answerLosingStore) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	err := s.Store.CreateUser(ctx, u, lim, a)
	if err == nil && !s.lost {
		s.lost = true
		return errors.New("connection reset by peer")
	}
	return err
}

// A loading that stops because a user's creation answered an error after
// the user was stored is completed by the next: the user gets its tokens
// and its Ducklings, as if the first loading had succeeded.
func TestSeed_LoadingStoppedByALostAnswerIsCompletedByTheNext(t *testing.T) {
	clk := newFakeClock()
	want := seededOnce(t, clk)

	store := &answerLosingStore{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	sd, err := orgadmin.DecodeSeed(strings.NewReader(sampleSeed))
	require.NoError(t, err)
	err = svc.ApplySeed(context.Background(), sd)
	require.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err), "%v", err)
	assert.True(t, strings.HasPrefix(err.Error(), `seed: organizations[0] ("acme").users[0] ("alice"): `), "the error names the entry: %v", err)
	require.True(t, store.lost)

	loadSeed(t, svc, sampleSeed)
	assert.Equal(t, withoutIDs(want), withoutIDs(observeSeed(t, svc, store)))
}

// tokenFailingStore fails the first token creation.
type tokenFailingStore struct {
	*memstore.Store
	failed bool
}

func (s *tokenFailingStore) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	if !s.failed {
		s.failed = true
		return errors.New("connection reset by peer")
	}
	return s.Store.CreateToken(ctx, t, lim, a)
}

// A token that fails while the seed loads is named as the entry's token,
// as validation names it.
func TestSeed_TokenFailingWhileLoadingIsNamed(t *testing.T) {
	store := &tokenFailingStore{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{Now: newFakeClock().Now})
	sd, err := orgadmin.DecodeSeed(strings.NewReader(sampleSeed))
	require.NoError(t, err)
	err = svc.ApplySeed(context.Background(), sd)
	require.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err), "%v", err)
	assert.True(t, strings.HasPrefix(err.Error(), `seed: organizations[0] ("acme").users[0] ("alice").tokens[0] ("ci"): `), "%v", err)
	loadSeed(t, svc, sampleSeed) // and the next loading completes it
	_, err = svc.Authenticate(context.Background(), aliceToken)
	require.NoError(t, err)
}

// A seeded user that an earlier version marked under its fold of the time
// ("user:µαρία", with the micro sign) and that was deleted since stays
// deleted when the seed is loaded again; one never loaded is created.
func TestSeed_DeletedUserMarkedUnderAnEarlierFoldStaysDeleted(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{})
	loadSeed(t, svc, `{"organizations": [{"id": "acme", "users": [{"username": "bob"}]}]}`)
	require.NoError(t, store.MarkSeeded(ctx, "acme", []string{"user:\u00B5\u03B1\u03C1\u03AF\u03B1"}))

	loadSeed(t, svc, `{"organizations": [{"id": "acme", "users": [{"username": "Μαρία"}, {"username": "Μάρκος"}, {"username": "bob"}]}]}`)
	_, err := svc.GetUser(ctx, "acme", "μαρία")
	requireCode(t, err, orgadmin.ErrNotFound)
	u, err := svc.GetUser(ctx, "acme", "μάρκος")
	require.NoError(t, err)
	assert.Equal(t, "Μάρκος", u.Username)
}
