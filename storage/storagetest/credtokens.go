package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// credentialTokensTests check storage.CredentialTokensReader, on stores
// that implement it: it must answer exactly what TokenByDigest and
// ListTokens answer.
var credentialTokensTests = []subtest{
	{"Self", testCredentialTokensSelf},
	{"OtherUser", testCredentialTokensOtherUser},
	{"MissingUser", testCredentialTokensMissingUser},
	{"UserOfOtherOrg", testCredentialTokensUserOfOtherOrg},
	{"UnknownDigest", testCredentialTokensUnknownDigest},
	{"DeletedUser", testCredentialTokensDeletedUser},
	{"CurrentRecords", testCredentialTokensCurrentRecords},
	{"Versions", testCredentialTokensVersions},
}

// reader returns s as a CredentialTokensReader, or skips the test.
func reader(t *testing.T, s storage.Store) storage.CredentialTokensReader {
	r, ok := s.(storage.CredentialTokensReader)
	if !ok {
		t.Skip("the store does not implement storage.CredentialTokensReader (optional)")
	}
	return r
}

// requireCredentialTokens requires that CredentialTokens of tok's digest
// and target finds tok with its user u, and the target's tokens want.
func requireCredentialTokens(t *testing.T, r storage.CredentialTokensReader, tok storage.Token, u storage.User, target string, liveAt time.Time, want []storage.Token) {
	t.Helper()
	c, ut, err := r.CredentialTokens(t.Context(), tok.Digest, target, liveAt, nil)
	require.NoError(t, err)
	assertToken(t, tok, c.Token)
	assertUser(t, u, c.User)
	require.True(t, ut.Found, "user %q found", target)
	assertTokens(t, want, ut.Tokens)
}

// The caller's own tokens: those live at liveAt, in ListTokens' order,
// read at the caller's instant (no wall clock).
func testCredentialTokensSelf(t *testing.T, s storage.Store) {
	r := reader(t, s)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	late := createToken(t, s, alice, at(time.Second), time.Time{})
	early := createToken(t, s, alice, at(-time.Second), at(time.Hour))
	old := createToken(t, s, alice, past, past.Add(time.Hour))

	requireCredentialTokens(t, r, late, alice, "alice", t0, []storage.Token{early, late})
	requireCredentialTokens(t, r, old, alice, "alice", t0, []storage.Token{early, late})
	requireCredentialTokens(t, r, late, alice, "alice", past, []storage.Token{old, early, late})
	requireCredentialTokens(t, r, late, alice, "alice", at(2*time.Hour), []storage.Token{late})
	listed, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, listed, []storage.Token{early, late})
}

// Another user of the caller's org: that user's tokens, not the caller's.
func testCredentialTokensOtherUser(t *testing.T, s storage.Store) {
	r := reader(t, s)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bot := createUser(t, s, org.ID, "Bot", true)
	carol := createUser(t, s, org.ID, "carol", false)
	aliceTok := createToken(t, s, alice, t0, time.Time{})
	b1 := createToken(t, s, bot, at(-time.Minute), time.Time{})
	b2 := createToken(t, s, bot, t0, at(time.Minute))

	requireCredentialTokens(t, r, aliceTok, alice, "bot", t0, []storage.Token{b1, b2})
	requireCredentialTokens(t, r, b1, bot, "alice", t0, []storage.Token{aliceTok})
	requireCredentialTokens(t, r, aliceTok, alice, "carol", t0, []storage.Token{})
	_ = carol
}

// A user the caller's org does not have is reported by Found.
func testCredentialTokensMissingUser(t *testing.T, s storage.Store) {
	r := reader(t, s)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	c, ut, err := r.CredentialTokens(t.Context(), tok.Digest, "nobody", t0, nil)
	require.NoError(t, err)
	assertToken(t, tok, c.Token)
	assertUser(t, alice, c.User)
	assert.False(t, ut.Found)
	assert.Empty(t, ut.Tokens)
}

// A user of another org is as missing, even under the same name, and none
// of its tokens is read.
func testCredentialTokensUserOfOtherOrg(t *testing.T, s storage.Store) {
	r := reader(t, s)
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	for _, name := range []string{"mallory", "alice"} {
		other := createUser(t, s, b.ID, name, false)
		createToken(t, s, other, t0, time.Time{})
	}
	c, ut, err := r.CredentialTokens(t.Context(), tok.Digest, "mallory", t0, nil)
	require.NoError(t, err)
	assertUser(t, alice, c.User)
	assert.False(t, ut.Found)
	assert.Empty(t, ut.Tokens)
	requireCredentialTokens(t, r, tok, alice, "alice", t0, []storage.Token{tok})
}

// An unknown digest is ErrNotFound, as for TokenByDigest.
func testCredentialTokensUnknownDigest(t *testing.T, s storage.Store) {
	r := reader(t, s)
	_, _, err := r.CredentialTokens(t.Context(), digest("nothing stored yet"), "alice", t0, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	createToken(t, s, alice, t0, time.Time{})
	_, _, err = r.CredentialTokens(t.Context(), digest("unknown"), "alice", t0, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// The token of a deleted user, or a deleted token, is ErrNotFound; a
// deleted target is not found.
func testCredentialTokensDeletedUser(t *testing.T, s storage.Store) {
	r := reader(t, s)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	aliceTok := createToken(t, s, alice, t0, time.Time{})
	bobTok := createToken(t, s, bob, t0, time.Time{})
	revoked := createToken(t, s, alice, t0, time.Time{})
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, revoked.ID, t0))
	_, _, err := r.CredentialTokens(t.Context(), revoked.Digest, "alice", t0, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)

	_, err = s.DeleteUser(t.Context(), org.ID, "bob")
	require.NoError(t, err)
	_, _, err = r.CredentialTokens(t.Context(), bobTok.Digest, "bob", t0, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, ut, err := r.CredentialTokens(t.Context(), aliceTok.Digest, "bob", t0, nil)
	require.NoError(t, err)
	assert.False(t, ut.Found)
	requireCredentialTokens(t, r, aliceTok, alice, "alice", t0, []storage.Token{aliceTok})
}

// The user read with the credential is the user as stored now.
func testCredentialTokensCurrentRecords(t *testing.T, s storage.Store) {
	r := reader(t, s)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	alice.Role = "Admin"
	alice.Privileges = []string{"admin:users"}
	require.NoError(t, s.UpdateUser(t.Context(), alice))
	require.NoError(t, s.SetInstances(t.Context(), org.ID, "alice", configB))
	alice.Instances = configB
	requireCredentialTokens(t, r, tok, alice, "alice", t0, []storage.Token{tok})
}

// readVersion reads tok's credential with target's tokens at liveAt,
// requires the tokens want, and returns their Version. A store that
// reports one must ask skip about exactly it, and leave Tokens nil when
// skip says so; one that reports 0 must never ask.
func readVersion(t *testing.T, r storage.CredentialTokensReader, tok storage.Token, target string, liveAt time.Time, want []storage.Token) uint64 {
	t.Helper()
	var asked []uint64
	_, ut, err := r.CredentialTokens(t.Context(), tok.Digest, target, liveAt, func(v uint64) bool {
		asked = append(asked, v)
		return false
	})
	require.NoError(t, err)
	require.True(t, ut.Found, "user %q found", target)
	assertTokens(t, want, ut.Tokens)
	if ut.Version == 0 {
		assert.Empty(t, asked, "skip called by a store that reports Version 0")
		return 0
	}
	assert.Equal(t, []uint64{ut.Version}, asked, "skip asked about the Version reported")

	c, skipped, err := r.CredentialTokens(t.Context(), tok.Digest, target, liveAt, func(v uint64) bool { return v == ut.Version })
	require.NoError(t, err)
	assertToken(t, tok, c.Token)
	assert.Equal(t, storage.UserTokens{Found: true, Version: ut.Version}, skipped, "skipped: the Version, no tokens")
	return ut.Version
}

// A store that versions token records keeps a user's Version while the
// records are unchanged (it has no reason to forget one in this test), and
// gives a new one at every change, whatever other users' records do; a
// Version is never given twice.
func testCredentialTokensVersions(t *testing.T, s storage.Store) {
	r := reader(t, s)
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	a1 := createToken(t, s, alice, t0, time.Time{})
	old := createToken(t, s, alice, past, past.Add(time.Hour))

	v := readVersion(t, r, a1, "alice", t0, []storage.Token{a1})
	if v == 0 {
		t.Log("the store does not version token records (optional)")
		return
	}
	seen := map[uint64]string{v: "alice"}
	fresh := func(v uint64, what string) {
		t.Helper()
		if first, ok := seen[v]; ok {
			t.Errorf("%s: Version %d, given before for %s", what, v, first)
		}
		seen[v] = what
	}
	// Unchanged records, read at any instant: the same Version.
	assert.Equal(t, v, readVersion(t, r, a1, "alice", past, []storage.Token{old, a1}))

	fresh(readVersion(t, r, a1, "bob", t0, []storage.Token{}), "bob")
	b1 := createToken(t, s, bob, t0, time.Time{})
	fresh(readVersion(t, r, a1, "bob", t0, []storage.Token{b1}), "bob with a token")
	assert.Equal(t, v, readVersion(t, r, b1, "alice", t0, []storage.Token{a1}), "read with bob's credential")
	alice.Role = "Admin"
	require.NoError(t, s.UpdateUser(t.Context(), alice))
	assert.Equal(t, v, readVersion(t, r, a1, "alice", t0, []storage.Token{a1}), "another user's tokens or alice's record changed")

	a2 := createToken(t, s, alice, at(time.Second), time.Time{})
	fresh(readVersion(t, r, a1, "alice", t0, []storage.Token{a1, a2}), "a token created")

	// A token that has expired dropped by a quota check, even with the
	// new token refused: the records read at an earlier instant change.
	err := s.CreateToken(t.Context(), newToken(alice, at(2*time.Second), time.Time{}), storage.TokenLimit{Max: 2, LiveAt: t0})
	require.ErrorIs(t, err, storage.ErrLimitExceeded)
	listed, err := s.ListTokens(t.Context(), org.ID, alice.ID, past)
	require.NoError(t, err)
	if tokenIDs(listed)[0] != old.ID {
		fresh(readVersion(t, r, a1, "alice", past, listed), "an expired token dropped")
	}

	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, a2.ID, t0))
	fresh(readVersion(t, r, a1, "alice", t0, []storage.Token{a1}), "a token deleted")

	_, err = s.DeleteUser(t.Context(), org.ID, "bob")
	require.NoError(t, err)
	createUser(t, s, org.ID, "bob", false)
	fresh(readVersion(t, r, a1, "bob", t0, []storage.Token{}), "bob created again")
}
