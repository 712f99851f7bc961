package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// accessTests check what ReadAccess reads besides the credential (whose
// own tests are among tokenTests): the request's target and its tokens.
var accessTests = []subtest{
	{"NoTarget", testAccessNoTarget},
	{"Self", testAccessSelf},
	{"OtherUser", testAccessOtherUser},
	{"MissingUser", testAccessMissingUser},
	{"UserOfOtherOrg", testAccessUserOfOtherOrg},
	{"UnknownDigest", testAccessUnknownDigest},
	{"DeletedUser", testAccessDeletedUser},
	{"CurrentRecords", testAccessCurrentRecords},
	{"TokensOnlyWhenAsked", testAccessTokensOnlyWhenAsked},
	{"Copies", testAccessCopies},
	{"Into", testAccessInto},
}

// readAccess requires that ReadAccess of tok's digest, with the target
// named target and its tokens at liveAt, finds tok with its user u, the
// target user want and its tokens wantTokens.
func readAccess(t *testing.T, s storage.Store, tok storage.Token, u storage.User, target string, liveAt time.Time, want storage.User, wantTokens []storage.Token) {
	t.Helper()
	a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, Username: target, Tokens: true, LiveAt: liveAt})
	require.NoError(t, err)
	assertToken(t, tok, a.Credential.Token)
	assertUser(t, u, a.Credential.User)
	require.True(t, a.TargetFound, "user %q found", target)
	assertUser(t, want, a.Target)
	assertTokens(t, wantTokens, a.Tokens)
}

// Without a target, ReadAccess reads the credential alone.
func testAccessNoTarget(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	for _, tokens := range []bool{false, true} {
		a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, Tokens: tokens, LiveAt: t0})
		require.NoError(t, err)
		assertToken(t, tok, a.Credential.Token)
		assertUser(t, alice, a.Credential.User)
		assert.False(t, a.TargetFound)
		assert.Equal(t, storage.User{}, a.Target)
		assert.Nil(t, a.Tokens)
	}
}

// The caller's own tokens: those live at liveAt, in ListTokens' order,
// read at the caller's instant (no wall clock).
func testAccessSelf(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	late := createToken(t, s, alice, at(time.Second), time.Time{})
	early := createToken(t, s, alice, at(-time.Second), at(time.Hour))
	old := createToken(t, s, alice, past, past.Add(time.Hour))

	readAccess(t, s, late, alice, "alice", t0, alice, []storage.Token{early, late})
	readAccess(t, s, old, alice, "alice", t0, alice, []storage.Token{early, late})
	readAccess(t, s, late, alice, "alice", past, alice, []storage.Token{old, early, late})
	readAccess(t, s, late, alice, "alice", at(2*time.Hour), alice, []storage.Token{late})
	listed, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, listed, []storage.Token{early, late})
}

// Another user of the caller's org: that user's tokens, not the caller's.
func testAccessOtherUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bot := createUser(t, s, org.ID, "Bot", true)
	carol := createUser(t, s, org.ID, "carol", false)
	aliceTok := createToken(t, s, alice, t0, time.Time{})
	b1 := createToken(t, s, bot, at(-time.Minute), time.Time{})
	b2 := createToken(t, s, bot, t0, at(time.Minute))

	readAccess(t, s, aliceTok, alice, "bot", t0, bot, []storage.Token{b1, b2})
	readAccess(t, s, b1, bot, "alice", t0, alice, []storage.Token{aliceTok})
	readAccess(t, s, aliceTok, alice, "carol", t0, carol, []storage.Token{})
}

// A user the caller's org does not have is reported by TargetFound.
func testAccessMissingUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, Username: "nobody", Tokens: true, LiveAt: t0})
	require.NoError(t, err)
	assertToken(t, tok, a.Credential.Token)
	assertUser(t, alice, a.Credential.User)
	assert.False(t, a.TargetFound)
	assert.Equal(t, storage.User{}, a.Target)
	assert.Nil(t, a.Tokens)
}

// A user of another org is as missing, even under the same name, and none
// of its tokens is read.
func testAccessUserOfOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	for _, name := range []string{"mallory", "alice"} {
		other := createUser(t, s, b.ID, name, false)
		createToken(t, s, other, t0, time.Time{})
	}
	got, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, Username: "mallory", Tokens: true, LiveAt: t0})
	require.NoError(t, err)
	assertUser(t, alice, got.Credential.User)
	assert.False(t, got.TargetFound)
	assert.Nil(t, got.Tokens)
	readAccess(t, s, tok, alice, "alice", t0, alice, []storage.Token{tok})
}

// An unknown digest is ErrNotFound, whatever the target.
func testAccessUnknownDigest(t *testing.T, s storage.Store) {
	q := storage.AccessQuery{Digest: digest("nothing stored yet"), Username: "alice", Tokens: true, LiveAt: t0}
	_, err := s.ReadAccess(t.Context(), q)
	require.ErrorIs(t, err, storage.ErrNotFound)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	createToken(t, s, alice, t0, time.Time{})
	q.Digest = digest("unknown")
	_, err = s.ReadAccess(t.Context(), q)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// The token of a deleted user, or a deleted token, is ErrNotFound; a
// deleted target is not found.
func testAccessDeletedUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	aliceTok := createToken(t, s, alice, t0, time.Time{})
	bobTok := createToken(t, s, bob, t0, time.Time{})
	revoked := createToken(t, s, alice, t0, time.Time{})
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, revoked.ID, storage.Revocation{At: t0}, nil))
	_, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: revoked.Digest, Username: "alice", Tokens: true, LiveAt: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)

	_, err = s.DeleteUser(t.Context(), org.ID, bob.ID, nil)
	require.NoError(t, err)
	_, err = s.ReadAccess(t.Context(), storage.AccessQuery{Digest: bobTok.Digest, Username: "bob", Tokens: true, LiveAt: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)
	a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: aliceTok.Digest, Username: "bob", Tokens: true, LiveAt: t0})
	require.NoError(t, err)
	assert.False(t, a.TargetFound)
	assert.Nil(t, a.Tokens)
	readAccess(t, s, aliceTok, alice, "alice", t0, alice, []storage.Token{aliceTok})
}

// The user read with the credential is the user as stored now.
func testAccessCurrentRecords(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	setPrivileges(t, s, &alice, "admin:users")
	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, configB, nil))
	alice.Instances = configB
	readAccess(t, s, tok, alice, "alice", t0, alice, []storage.Token{tok})
	bob := createUser(t, s, org.ID, "bob", true)
	setPrivileges(t, s, &bob, "read")
	require.NoError(t, s.SetInstances(t.Context(), org.ID, bob.ID, configB, nil))
	bob.Instances = configB
	readAccess(t, s, tok, alice, "bob", t0, bob, []storage.Token{})
}

// The target's tokens are read only when the query asks for them; the
// target itself either way.
func testAccessTokensOnlyWhenAsked(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bot := createUser(t, s, org.ID, "bot", true)
	tok := createToken(t, s, alice, t0, time.Time{})
	createToken(t, s, bot, t0, time.Time{})
	for _, target := range []storage.User{alice, bot} {
		a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, Username: target.FoldedUsername, LiveAt: t0})
		require.NoError(t, err)
		assertToken(t, tok, a.Credential.Token)
		require.True(t, a.TargetFound)
		assertUser(t, target, a.Target)
		assert.Nil(t, a.Tokens, "tokens of %s, not asked for", target.Username)
	}
}

// What ReadAccess returns shares no memory with the store, nor the
// credential's user with the target, even when they are the same user.
func testAccessCopies(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	setPrivileges(t, s, &alice, "a", "b")
	tok := createToken(t, s, alice, t0, time.Time{})
	q := storage.AccessQuery{Digest: tok.Digest, Username: "alice", Tokens: true, LiveAt: t0}
	a, err := s.ReadAccess(t.Context(), q)
	require.NoError(t, err)
	a.Credential.User.Privileges[0] = "changed"
	assert.Equal(t, []string{"a", "b"}, a.Target.Privileges, "the target shares the credential's user's privileges")
	a.Target.Privileges[1] = "changed"
	a.Tokens[0].Name = "changed"
	assertUser(t, alice, getUser(t, s, org.ID, "alice"), "after mutating ReadAccess's result")
	readAccess(t, s, tok, alice, "alice", t0, alice, []storage.Token{tok})
}

// The tokens are appended to AccessQuery.Into, as append gives it: after
// what Into holds (kept even when it is not live at LiveAt), in Into's
// array when it has room, whatever that array held beyond Into's length.
func testAccessInto(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bot := createUser(t, s, org.ID, "bot", true)
	tok := createToken(t, s, alice, t0, time.Time{})
	b1 := createToken(t, s, bot, at(-time.Minute), time.Time{})
	createToken(t, s, bot, past, past.Add(time.Hour))
	b2 := createToken(t, s, bot, t0, at(time.Minute))
	kept := storage.Token{ID: "kept", Name: "kept", CreatedAt: past, ExpiresAt: past.Add(time.Second)}
	array := make([]storage.Token, 8) // what Into's array holds beyond it
	for i := range array {
		array[i] = tok
	}
	into := array[:1]
	into[0] = kept
	for _, target := range []storage.User{bot, alice} {
		want := []storage.Token{kept, b1, b2}
		if target.ID == alice.ID {
			want = []storage.Token{kept, tok}
		}
		q := storage.AccessQuery{Digest: tok.Digest, Username: target.FoldedUsername, Tokens: true, LiveAt: t0, Into: into}
		a, err := s.ReadAccess(t.Context(), q)
		require.NoError(t, err)
		assertToken(t, tok, a.Credential.Token)
		require.True(t, a.TargetFound)
		assertUser(t, target, a.Target)
		assertTokens(t, want, a.Tokens)
		require.NotEmpty(t, a.Tokens)
		assert.Same(t, &into[0], &a.Tokens[0], "the tokens are not in Into's array")

		// Without room: the tokens, after Into's records.
		q.Into = into[:1:1]
		a, err = s.ReadAccess(t.Context(), q)
		require.NoError(t, err)
		assertTokens(t, want, a.Tokens)
	}
}
