package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var tokenTests = []subtest{
	{"CreateAndReadCredential", testTokenCreateAndReadCredential},
	{"CredentialReadsCurrentUser", testCredentialReadsCurrentUser},
	{"CredentialMissing", testCredentialMissing},
	{"CredentialIgnoresExpiry", testCredentialIgnoresExpiry},
	{"MissingUser", testTokenMissingUser},
	{"UserOfOtherOrg", testTokenUserOfOtherOrg},
	{"DuplicateDigest", testTokenDuplicateDigest},
	{"DuplicateID", testTokenDuplicateID},
	{"DuplicateIDOtherUser", testTokenDuplicateIDOtherUser},
	{"LimitExceeded", testTokenLimitExceeded},
	{"LimitIgnoresExpired", testTokenLimitIgnoresExpired},
	{"LimitPerUser", testTokenLimitPerUser},
	{"LimitZeroMeansNone", testTokenLimitZeroMeansNone},
	{"DroppedExpiredFreesDigestAndID", testTokenDroppedExpiredFrees},
}

var listTokensTests = []subtest{
	{"Order", testListTokensOrder},
	{"LiveOnly", testListTokensLiveOnly},
	{"Empty", testListTokensEmpty},
	{"OtherUsers", testListTokensOtherUsers},
	{"OtherOrg", testListTokensOtherOrg},
}

var deleteTokenTests = []subtest{
	{"Delete", testDeleteToken},
	{"OtherUsersToken", testDeleteTokenOtherUsersToken},
	{"OtherUsersTokenKeepsItsID", testDeleteTokenOtherUsersTokenKeepsItsID},
	{"Expired", testDeleteTokenExpired},
	{"Missing", testDeleteTokenMissing},
	{"OtherOrg", testDeleteTokenOtherOrg},
}

// ReadAccess returns a stored token together with its user.
func testTokenCreateAndReadCredential(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bot := createUser(t, s, org.ID, "bot", true)

	tok := newToken(alice, at(1234*time.Millisecond), at(90*24*time.Hour+5*time.Millisecond))
	tok.Type = "read_scaling"
	require.NoError(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{Max: 5, LiveAt: t0}, nil))
	botTok := createToken(t, s, bot, t0, time.Time{})

	requireTokenFound(t, s, tok, alice)
	requireTokenFound(t, s, botTok, bot)
}

// The user ReadAccess returns with a token is the user as stored now.
func testCredentialReadsCurrentUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})

	setPrivileges(t, s, &alice, "admin:users")
	requireTokenFound(t, s, tok, alice)

	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, configB, nil))
	alice.Instances = configB
	requireTokenFound(t, s, tok, alice)
}

// ReadAccess of an unknown digest is ErrNotFound.
func testCredentialMissing(t *testing.T, s storage.Store) {
	_, err := credential(t, s, digest("nothing stored yet"))
	require.ErrorIs(t, err, storage.ErrNotFound)

	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	createToken(t, s, alice, t0, time.Time{})
	_, err = credential(t, s, digest("unknown"))
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = credential(t, s, storage.Digest{})
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// ReadAccess does not check the expiry of the credential (and the store
// reads no clock).
func testCredentialIgnoresExpiry(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	expired := createToken(t, s, alice, past, past.Add(time.Hour))
	requireTokenFound(t, s, expired, alice)
}

// CreateToken for a user that does not exist is ErrNotFound.
func testTokenMissingUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	createUser(t, s, org.ID, "alice", false)
	ghost := newUser(org.ID, "ghost", false)
	tok := newToken(ghost, t0, time.Time{})
	require.ErrorIs(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil), storage.ErrNotFound)
	require.ErrorIs(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{Max: 3, LiveAt: t0}, nil), storage.ErrNotFound)
	requireTokenGone(t, s, tok)

	nowhere := newToken(newUser(uuid.NewString(), "ghost", false), t0, time.Time{})
	require.ErrorIs(t, s.CreateToken(t.Context(), nowhere, storage.TokenLimit{}, nil), storage.ErrNotFound)
	requireTokenGone(t, s, nowhere)
}

// A token names its user by (Org, UserID): a user of another org is not
// found.
func testTokenUserOfOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "alice", false)
	tok := newToken(alice, t0, time.Time{})
	tok.Org = b.ID
	require.ErrorIs(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil), storage.ErrNotFound)
	requireTokenGone(t, s, tok)
}

// A second token with a taken Digest is ErrAlreadyExists, whoever it is
// for, and changes nothing.
func testTokenDuplicateDigest(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	tok := createToken(t, s, alice, t0, time.Time{})

	for _, u := range []storage.User{alice, bob} {
		dup := newToken(u, at(time.Second), time.Time{})
		dup.Digest = tok.Digest
		require.ErrorIs(t, s.CreateToken(t.Context(), dup, storage.TokenLimit{}, nil), storage.ErrAlreadyExists)
		require.ErrorIs(t, s.CreateToken(t.Context(), dup, storage.TokenLimit{Max: 10, LiveAt: t0}, nil), storage.ErrAlreadyExists)
	}

	requireTokenFound(t, s, tok, alice)
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{tok}, toks)
	toks, err = s.ListTokens(t.Context(), org.ID, bob.ID, t0)
	require.NoError(t, err)
	assert.Len(t, toks, 0)
}

// A second token with a taken ID is ErrAlreadyExists and is not stored.
func testTokenDuplicateID(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})

	dup := newToken(alice, at(time.Second), time.Time{})
	dup.ID = tok.ID
	require.ErrorIs(t, s.CreateToken(t.Context(), dup, storage.TokenLimit{}, nil), storage.ErrAlreadyExists)

	requireTokenGone(t, s, dup)
	requireTokenFound(t, s, tok, alice)
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{tok}, toks)
}

// The token ID is unique in the store, not only among one user's tokens:
// the contract does not scope it.
func testTokenDuplicateIDOtherUser(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	bob := createUser(t, s, a.ID, "bob", false)
	carol := createUser(t, s, b.ID, "carol", false)
	tok := createToken(t, s, alice, t0, time.Time{})

	for _, u := range []storage.User{bob, carol} {
		dup := newToken(u, at(time.Second), time.Time{})
		dup.ID = tok.ID
		require.ErrorIs(t, s.CreateToken(t.Context(), dup, storage.TokenLimit{}, nil), storage.ErrAlreadyExists, "token of %s", u.Username)
		requireTokenGone(t, s, dup)
	}
	requireTokenFound(t, s, tok, alice)
}

// With Max 3, a fourth live token is ErrLimitExceeded; a token whose
// ExpiresAt is LiveAt no longer counts; deleting a token frees its place.
func testTokenLimitExceeded(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	lim := storage.TokenLimit{Max: 3, LiveAt: t0}

	never := newToken(alice, t0, time.Time{})
	soon := newToken(alice, t0, at(time.Millisecond))
	later := newToken(alice, t0, at(time.Hour))
	for _, tok := range []storage.Token{never, soon, later} {
		require.NoError(t, s.CreateToken(t.Context(), tok, lim, nil))
	}

	fourth := newToken(alice, t0, time.Time{})
	require.ErrorIs(t, s.CreateToken(t.Context(), fourth, lim, nil), storage.ErrLimitExceeded)
	requireTokenGone(t, s, fourth)
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assert.Len(t, toks, 3)

	// At t0+1ms, soon has expired (ExpiresAt == LiveAt is not live).
	lim.LiveAt = at(time.Millisecond)
	require.NoError(t, s.CreateToken(t.Context(), fourth, lim, nil))
	requireTokenFound(t, s, fourth, alice)

	fifth := newToken(alice, at(time.Millisecond), at(2*time.Hour))
	require.ErrorIs(t, s.CreateToken(t.Context(), fifth, lim, nil), storage.ErrLimitExceeded)
	requireTokenGone(t, s, fifth)

	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, later.ID, storage.Revocation{At: lim.LiveAt}, nil))
	require.NoError(t, s.CreateToken(t.Context(), fifth, lim, nil))
	requireTokenFound(t, s, fifth, alice)
}

// Tokens not live at lim.LiveAt do not count against lim.Max.
func testTokenLimitIgnoresExpired(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	createToken(t, s, alice, past, past.Add(time.Hour))
	createToken(t, s, alice, at(-time.Hour), t0) // ExpiresAt == LiveAt
	createToken(t, s, alice, at(-time.Hour), at(-time.Millisecond))
	createToken(t, s, alice, at(-time.Hour), time.Time{})

	lim := storage.TokenLimit{Max: 3, LiveAt: t0}
	live := []storage.Token{newToken(alice, t0, at(time.Hour)), newToken(alice, t0, time.Time{})}
	for _, tok := range live {
		require.NoError(t, s.CreateToken(t.Context(), tok, lim, nil))
		requireTokenFound(t, s, tok, alice)
	}
	over := newToken(alice, t0, time.Time{})
	require.ErrorIs(t, s.CreateToken(t.Context(), over, lim, nil), storage.ErrLimitExceeded)
	requireTokenGone(t, s, over)
}

// The quota counts the tokens of one user only.
func testTokenLimitPerUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	lim := storage.TokenLimit{Max: 2, LiveAt: t0}
	for range 2 {
		require.NoError(t, s.CreateToken(t.Context(), newToken(alice, t0, time.Time{}), lim, nil))
	}
	require.ErrorIs(t, s.CreateToken(t.Context(), newToken(alice, t0, time.Time{}), lim, nil), storage.ErrLimitExceeded)
	for range 2 {
		require.NoError(t, s.CreateToken(t.Context(), newToken(bob, t0, time.Time{}), lim, nil))
	}
	require.ErrorIs(t, s.CreateToken(t.Context(), newToken(bob, t0, time.Time{}), lim, nil), storage.ErrLimitExceeded)
}

// A zero Max means no limit.
func testTokenLimitZeroMeansNone(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	for i := range 25 {
		lim := storage.TokenLimit{LiveAt: t0}
		if i%2 == 0 {
			lim = storage.TokenLimit{}
		}
		require.NoError(t, s.CreateToken(t.Context(), newToken(alice, t0, time.Time{}), lim, nil), "token %d", i)
	}
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assert.Len(t, toks, 25)
}

// ListTokens orders by CreatedAt, then ID, whatever the insertion order.
func testListTokensOrder(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	prefix := uuid.NewString()
	mk := func(id string, created time.Time) storage.Token {
		tok := newToken(alice, created, time.Time{})
		tok.ID = prefix + "-" + id
		tok.Digest = digest("token " + tok.ID)
		return tok
	}
	var (
		z  = mk("z", at(-time.Second))
		tb = mk("b", t0)
		ta = mk("a", t0)
		tc = mk("c", t0)
		ms = mk("0", at(time.Millisecond)) // one millisecond later sorts after, despite its ID
		a  = mk("a2", at(time.Second))
		c  = mk("c2", at(2*time.Second))
	)
	for _, tok := range []storage.Token{c, tb, ms, z, tc, a, ta} {
		require.NoError(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil))
	}
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{z, ta, tb, tc, ms, a, c}, toks)
}

// ListTokens keeps only tokens live at liveAt: ExpiresAt zero or after it.
func testListTokensLiveOnly(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	old := createToken(t, s, alice, past, past.Add(time.Hour))
	never := createToken(t, s, alice, at(-4*time.Hour), time.Time{})
	atT0 := createToken(t, s, alice, at(-3*time.Hour), t0)
	justBefore := createToken(t, s, alice, at(-2*time.Hour), at(-time.Millisecond))
	justAfter := createToken(t, s, alice, at(-time.Hour), at(time.Millisecond))
	farAway := createToken(t, s, alice, t0, at(365*24*time.Hour))

	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{never, justAfter, farAway}, toks)

	toks, err = s.ListTokens(t.Context(), org.ID, alice.ID, at(-time.Millisecond))
	require.NoError(t, err)
	assertTokens(t, []storage.Token{never, atT0, justAfter, farAway}, toks)

	// The instant is the caller's: no wall clock is consulted.
	toks, err = s.ListTokens(t.Context(), org.ID, alice.ID, past.Add(-time.Hour))
	require.NoError(t, err)
	assertTokens(t, []storage.Token{old, never, atT0, justBefore, justAfter, farAway}, toks)
}

// A user without (live) tokens lists none, without error.
func testListTokensEmpty(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assert.Len(t, toks, 0)

	createToken(t, s, alice, past, past.Add(time.Hour))
	toks, err = s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assert.Len(t, toks, 0)
}

// ListTokens shows one user's tokens only.
func testListTokensOtherUsers(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	aliceTok := createToken(t, s, alice, t0, time.Time{})
	bobTok := createToken(t, s, bob, at(-time.Second), time.Time{})

	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{aliceTok}, toks)
	toks, err = s.ListTokens(t.Context(), org.ID, bob.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{bobTok}, toks)
}

// The tokens of org A's user cannot be listed through org B.
func testListTokensOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "alice", false)
	createToken(t, s, alice, t0, time.Time{})
	requireNoTokens(t, s, b.ID, alice.ID)
}

// DeleteToken removes a live token: it is neither found nor listed, and a
// second delete is ErrNotFound.
func testDeleteToken(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	gone := createToken(t, s, alice, t0, at(time.Hour))
	kept := createToken(t, s, alice, at(time.Second), time.Time{})

	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, gone.ID, storage.Revocation{At: t0}, nil))
	requireTokenGone(t, s, gone)
	requireTokenFound(t, s, kept, alice)
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{kept}, toks)

	err = s.DeleteToken(t.Context(), org.ID, alice.ID, gone.ID, storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)

	// Its ID and digest are free again.
	require.NoError(t, s.CreateToken(t.Context(), gone, storage.TokenLimit{}, nil))
	requireTokenFound(t, s, gone, alice)
}

// DeleteToken with another user's ID is ErrNotFound and keeps the token.
func testDeleteTokenOtherUsersToken(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	tok := createToken(t, s, alice, t0, time.Time{})

	err := s.DeleteToken(t.Context(), org.ID, bob.ID, tok.ID, storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireTokenFound(t, s, tok, alice)
	toks, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{tok}, toks)
}

// A refused DeleteToken of another user's token, of another org's, or
// of an expired one, leaves its id and digest taken: a token with either
// is ErrAlreadyExists, for any user.
func testDeleteTokenOtherUsersTokenKeepsItsID(t *testing.T, s storage.Store) {
	org, other := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	carol := createUser(t, s, other.ID, "carol", false)
	live := createToken(t, s, alice, t0, time.Time{})
	expired := createToken(t, s, alice, t0, at(time.Minute))
	r := storage.Revocation{At: at(time.Hour), KeepUntil: at(48 * time.Hour)}
	for _, tok := range []storage.Token{live, expired} {
		require.ErrorIs(t, s.DeleteToken(t.Context(), org.ID, bob.ID, tok.ID, r, nil), storage.ErrNotFound)
		require.ErrorIs(t, s.DeleteToken(t.Context(), other.ID, carol.ID, tok.ID, r, nil), storage.ErrNotFound)
	}
	require.ErrorIs(t, s.DeleteToken(t.Context(), org.ID, alice.ID, expired.ID, r, nil), storage.ErrNotFound, "expired")
	for _, tok := range []storage.Token{live, expired} {
		for _, u := range []storage.User{alice, bob, carol} {
			byID := newToken(u, at(time.Hour), time.Time{})
			byID.ID = tok.ID
			require.ErrorIs(t, s.CreateToken(t.Context(), byID, storage.TokenLimit{}, nil), storage.ErrAlreadyExists, "the id of alice's token, for %s", u.Username)
			byDigest := newToken(u, at(time.Hour), time.Time{})
			byDigest.Digest = tok.Digest
			require.ErrorIs(t, s.CreateToken(t.Context(), byDigest, storage.TokenLimit{}, nil), storage.ErrAlreadyExists, "the digest of alice's token, for %s", u.Username)
		}
		requireTokenFound(t, s, tok, alice)
	}
}

// DeleteToken of a token not live at liveAt is ErrNotFound; liveAt, not a
// clock, decides.
func testDeleteTokenExpired(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, at(-time.Hour), t0)
	err := s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, storage.Revocation{At: at(time.Hour)}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, storage.Revocation{At: at(-time.Millisecond)}, nil))
	requireTokenGone(t, s, tok)

	old := createToken(t, s, alice, past, past.Add(time.Hour))
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, old.ID, storage.Revocation{At: past}, nil))
	requireTokenGone(t, s, old)
}

// DeleteToken of an unknown token or user is ErrNotFound.
func testDeleteTokenMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	err := s.DeleteToken(t.Context(), org.ID, alice.ID, uuid.NewString(), storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)

	tok := createToken(t, s, alice, t0, time.Time{})
	err = s.DeleteToken(t.Context(), org.ID, alice.ID, uuid.NewString(), storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.DeleteToken(t.Context(), org.ID, uuid.NewString(), tok.ID, storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.DeleteToken(t.Context(), uuid.NewString(), alice.ID, tok.ID, storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireTokenFound(t, s, tok, alice)
}

// The token of org A's user cannot be deleted through org B.
func testDeleteTokenOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})

	err := s.DeleteToken(t.Context(), b.ID, alice.ID, tok.ID, storage.Revocation{At: t0}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireTokenFound(t, s, tok, alice)
}

// A creation may drop the user's tokens no longer live at its LiveAt.
// One the store dropped (ReadAccess no longer finds its digest) is gone
// whole: a token with its digest, or its id, can be created again, and
// one the store kept still holds both.
func testTokenDroppedExpiredFrees(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	old := createToken(t, s, alice, t0, at(time.Millisecond))
	// At the limit, past old's expiry: the store may drop old now.
	lim := storage.TokenLimit{Max: 1, LiveAt: at(time.Second)}
	require.NoError(t, s.CreateToken(t.Context(), newToken(alice, at(time.Second), time.Time{}), lim, nil))
	_, err := credential(t, s, old.Digest)
	dropped := errors.Is(err, storage.ErrNotFound)
	if !dropped {
		require.NoError(t, err)
	}
	byDigest := newToken(alice, at(time.Second), time.Time{})
	byDigest.Digest = old.Digest
	byID := newToken(alice, at(time.Second), time.Time{})
	byID.ID = old.ID
	for _, again := range []storage.Token{byDigest, byID} {
		err := s.CreateToken(t.Context(), again, storage.TokenLimit{}, nil)
		if !dropped {
			require.ErrorIs(t, err, storage.ErrAlreadyExists, "old is kept")
			continue
		}
		require.NoError(t, err, "old was dropped: its digest and id are free")
		requireTokenFound(t, s, again, alice)
		require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, again.ID, revocation(at(time.Second)), nil))
		// A revoked digest is free for a new token too.
		if again.Digest == old.Digest {
			again.ID = uuid.NewString()
			require.NoError(t, s.CreateToken(t.Context(), again, storage.TokenLimit{}, nil))
			require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, again.ID, storage.Revocation{At: at(time.Second)}, nil))
		}
	}
}
