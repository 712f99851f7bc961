package storagetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// revokedTests check the tombstones DeleteToken keeps (storage.Revocation)
// and how ReadAccess reports them.
var revokedTests = []subtest{
	{"Reported", testRevokedReported},
	{"UnknownIsNotRevoked", testRevokedUnknownIsNot},
	{"UntilExpiry", testRevokedUntilExpiry},
	{"UntilKeepUntil", testRevokedUntilKeepUntil},
	{"DeletedUserIsNotRevoked", testRevokedDeletedUserIsNot},
	{"RecreatedClears", testRevokedRecreatedClears},
	{"RevokedAgainLastsTheLaterExpiry", testRevokedAgainLastsTheLaterExpiry},
	{"RefusedCreationKeepsIt", testRevokedRefusedCreationKeepsIt},
	{"Audited", testRevokedAudited},
	{"BoundedPerOrg", testRevokedBoundedPerOrg},
}

// revocation revokes at at, keeping a tombstone of a token without expiry
// for a day.
func revocation(at time.Time) storage.Revocation {
	return storage.Revocation{At: at, KeepUntil: at.Add(24 * time.Hour)}
}

// readErr returns the error of ReadAccess of d at liveAt, with a target
// and its tokens asked for, as a request would.
func readErr(t *testing.T, s storage.Store, d storage.Digest, liveAt time.Time) error {
	t.Helper()
	_, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: d, Username: "alice", Tokens: true, LiveAt: liveAt})
	return err
}

// A revoked token's digest is ErrRevoked, which errors.Is also finds to be
// ErrNotFound, with the revoked token's org, user and id (also for a
// token read before it was revoked); the user's other tokens are
// untouched.
func testRevokedReported(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	other := createToken(t, s, alice, at(time.Second), time.Time{})
	read := createToken(t, s, alice, at(2*time.Second), time.Time{})
	readAccess(t, s, read, alice, "alice", at(2*time.Second), alice, []storage.Token{tok, other, read})
	for _, revoked := range []storage.Token{tok, read} {
		require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, revoked.ID, revocation(at(time.Minute)), nil))
		a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: revoked.Digest, Username: "alice", Tokens: true, LiveAt: at(time.Minute)})
		require.ErrorIs(t, err, storage.ErrRevoked)
		require.ErrorIs(t, err, storage.ErrNotFound)
		var want storage.Access
		want.Credential.Token = storage.Token{Org: org.ID, UserID: alice.ID, ID: revoked.ID}
		assert.Equal(t, want, a, "whose token it was, and nothing more")
	}
	readAccess(t, s, other, alice, "alice", at(time.Minute), alice, []storage.Token{other})
	// Revoking it again finds no token, and keeps it revoked.
	require.ErrorIs(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(at(time.Minute)), nil), storage.ErrNotFound)
	require.ErrorIs(t, readErr(t, s, tok.Digest, at(time.Minute)), storage.ErrRevoked)
}

// A digest never stored, and one of a token that failed to revoke, are
// ErrNotFound, not ErrRevoked.
func testRevokedUnknownIsNot(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(t0), nil))
	err := readErr(t, s, digest("never issued"), t0)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrRevoked)

	// An expired token is not revoked: DeleteToken refuses it.
	old := createToken(t, s, alice, t0, at(time.Hour))
	require.ErrorIs(t, s.DeleteToken(t.Context(), org.ID, alice.ID, old.ID, revocation(at(time.Hour)), nil), storage.ErrNotFound)
	_, err = s.ReadAccess(t.Context(), storage.AccessQuery{Digest: old.Digest, LiveAt: at(time.Hour)})
	require.NoError(t, err, "the expired token is still stored, and its expiry is the caller's to check")
}

// The tombstone of a token with an expiry lasts until that expiry: at its
// ExpiresAt, and after, the digest is ErrNotFound, whatever KeepUntil
// says, and a write past that time may drop it.
func testRevokedUntilExpiry(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, at(time.Hour))
	r := storage.Revocation{At: at(time.Minute), KeepUntil: at(48 * time.Hour)}
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, r, nil))
	require.ErrorIs(t, readErr(t, s, tok.Digest, at(time.Hour-time.Millisecond)), storage.ErrRevoked)
	for _, when := range []time.Time{at(time.Hour), at(2 * time.Hour)} {
		err := readErr(t, s, tok.Digest, when)
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.NotErrorIs(t, err, storage.ErrRevoked, "at %v", when)
	}
	// Writes past its time (which may sweep it) leave it gone.
	for range 20 {
		more := createToken(t, s, alice, at(3*time.Hour), time.Time{})
		require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, more.ID, revocation(at(3*time.Hour)), nil))
	}
	require.NotErrorIs(t, readErr(t, s, tok.Digest, at(2*time.Hour)), storage.ErrRevoked)

	// Until the token's expiry, whether KeepUntil comes before it or after.
	long := createToken(t, s, alice, t0, at(72*time.Hour))
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, long.ID, storage.Revocation{At: at(time.Minute), KeepUntil: at(48 * time.Hour)}, nil))
	require.ErrorIs(t, readErr(t, s, long.Digest, at(72*time.Hour-time.Millisecond)), storage.ErrRevoked, "the tombstone outlasts KeepUntil")
	require.NotErrorIs(t, readErr(t, s, long.Digest, at(72*time.Hour)), storage.ErrRevoked)
}

// The tombstone of a token without expiry lasts until KeepUntil.
func testRevokedUntilKeepUntil(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(t0), nil))
	require.ErrorIs(t, readErr(t, s, tok.Digest, at(24*time.Hour-time.Millisecond)), storage.ErrRevoked)
	err := readErr(t, s, tok.Digest, at(24*time.Hour))
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrRevoked)
}

// Deleting a user makes no tombstone of its tokens: they are ErrNotFound.
func testRevokedDeletedUserIsNot(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	tok := createToken(t, s, bob, t0, time.Time{})
	expiring := createToken(t, s, bob, t0, at(time.Hour))
	_, err := s.DeleteUser(t.Context(), org.ID, bob.ID, nil)
	require.NoError(t, err)
	for _, d := range []storage.Digest{tok.Digest, expiring.Digest} {
		err := readErr(t, s, d, at(time.Minute))
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.NotErrorIs(t, err, storage.ErrRevoked)
	}
	_ = alice
}

// A token created with the digest of a tombstone (a seeded value seeded
// again) removes the tombstone: it authenticates, and once deleted with
// its user it is not revoked.
func testRevokedRecreatedClears(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(t0), nil))
	again := newToken(alice, at(time.Minute), time.Time{})
	again.Digest = tok.Digest
	require.NoError(t, s.CreateToken(t.Context(), again, storage.TokenLimit{Max: 10, LiveAt: at(time.Minute)}, nil))
	readAccess(t, s, again, alice, "alice", at(time.Minute), alice, []storage.Token{again})
	_, err := s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.NoError(t, err)
	err = readErr(t, s, tok.Digest, at(time.Minute))
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrRevoked)
}

// A digest revoked, created again with a later expiry and revoked again
// reads as revoked until that later expiry: a write once the first
// tombstone's time is past (which may sweep tombstones) leaves the second.
func testRevokedAgainLastsTheLaterExpiry(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := createToken(t, s, alice, t0, at(time.Hour))
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(at(10*time.Minute)), nil))
	again := newToken(alice, at(20*time.Minute), at(3*time.Hour))
	again.Digest = tok.Digest
	require.NoError(t, s.CreateToken(t.Context(), again, storage.TokenLimit{Max: 10, LiveAt: at(20 * time.Minute)}, nil))
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, again.ID, revocation(at(30*time.Minute)), nil))
	later := at(2 * time.Hour)
	other := newToken(alice, later, at(5*time.Hour))
	require.NoError(t, s.CreateToken(t.Context(), other, storage.TokenLimit{Max: 10, LiveAt: later}, nil))
	require.ErrorIs(t, readErr(t, s, tok.Digest, later), storage.ErrRevoked, "the second revocation lasts until its token's expiry")
	err := readErr(t, s, tok.Digest, at(3*time.Hour))
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrRevoked)
}

// A creation with a revoked digest that is refused (its user gone, its
// quota full, its id taken) changes nothing: the tombstone stays, and
// the digest reads as revoked still.
func testRevokedRefusedCreationKeepsIt(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	tok := createToken(t, s, alice, t0, at(time.Hour))
	held := createToken(t, s, bob, t0, time.Time{})
	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(t0), nil))
	deleteUser(t, s, org.ID, "alice")
	when := at(time.Minute)
	refused := []struct {
		name string
		tok  func() storage.Token
		lim  storage.TokenLimit
		want error
	}{
		{"its user gone", func() storage.Token { return newToken(alice, when, time.Time{}) }, storage.TokenLimit{}, storage.ErrNotFound},
		{"its quota full", func() storage.Token { return newToken(bob, when, time.Time{}) }, storage.TokenLimit{Max: 1, LiveAt: when}, storage.ErrLimitExceeded},
		{"its id taken", func() storage.Token {
			again := newToken(bob, when, time.Time{})
			again.ID = held.ID
			return again
		}, storage.TokenLimit{}, storage.ErrAlreadyExists},
	}
	for _, c := range refused {
		again := c.tok()
		again.Digest = tok.Digest
		require.ErrorIs(t, s.CreateToken(t.Context(), again, c.lim, nil), c.want, c.name)
		require.ErrorIs(t, readErr(t, s, tok.Digest, when), storage.ErrRevoked, "after a creation refused, %s", c.name)
	}
	requireTokenFound(t, s, held, bob)
}

// A revocation records its audit event, as any DeleteToken does, and a
// refused one neither an event nor a tombstone.
func testRevokedAudited(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	tok := createToken(t, s, alice, t0, time.Time{})
	ev := storage.Event{ID: "0198f3a2-0000-7000-8000-000000000001", Org: org.ID, At: at(time.Minute), ActorUsername: "system",
		Action: "token.delete", TargetKind: "token", TargetID: tok.ID, TargetUsername: "alice"}
	// Bob does not hold the token: refused, nothing recorded.
	refused := &storage.Audit{Event: storage.Event{ID: "0198f3a2-0000-7000-8000-000000000002",
		Org: org.ID, At: at(time.Minute), ActorUsername: "system", Action: "token.delete", TargetKind: "token", TargetID: tok.ID}}
	require.ErrorIs(t, s.DeleteToken(t.Context(), org.ID, bob.ID, tok.ID, revocation(at(time.Minute)), refused), storage.ErrNotFound)
	readAccess(t, s, tok, alice, "alice", at(time.Minute), alice, []storage.Token{tok})

	require.NoError(t, s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, revocation(at(time.Minute)), &storage.Audit{Event: ev}))
	require.ErrorIs(t, readErr(t, s, tok.Digest, at(time.Minute)), storage.ErrRevoked)
	page, err := s.ListEvents(t.Context(), org.ID, storage.EventQuery{Limit: 10, Action: "token.delete"})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	assert.Equal(t, ev.ID, page.Events[0].ID)
	assert.Equal(t, tok.ID, page.Events[0].TargetID)
}

// An org keeps at most Revocation.MaxPerOrg tombstones: a revocation
// beyond it drops those of the org's tombstones that end first, whose
// digests then read as ErrNotFound; another org's are untouched.
func testRevokedBoundedPerOrg(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	other := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, other.ID, "bob", false)
	revoke := func(u storage.User, tok storage.Token) {
		t.Helper()
		r := storage.Revocation{At: at(time.Minute), KeepUntil: at(24 * time.Hour), MaxPerOrg: 3}
		require.NoError(t, s.DeleteToken(t.Context(), u.Org, u.ID, tok.ID, r, nil))
	}
	// Bob's tombstone ends before any of alice's.
	bobs := createToken(t, s, bob, t0, at(2*time.Hour))
	revoke(bob, bobs)
	// Alice's end in another order than the one they are revoked in; the
	// third has no expiry, so it ends at KeepUntil.
	var toks []storage.Token
	for _, expires := range []time.Time{at(5 * time.Hour), at(3 * time.Hour), {}, at(4 * time.Hour), at(6 * time.Hour)} {
		tok := createToken(t, s, alice, t0, expires)
		revoke(alice, tok)
		toks = append(toks, tok)
	}
	when := at(2 * time.Minute)
	for i, tok := range toks {
		err := readErr(t, s, tok.Digest, when)
		if i == 1 || i == 3 { // ending at 3 h and 4 h: the two that end first
			require.ErrorIs(t, err, storage.ErrNotFound, "token %d", i)
			require.NotErrorIs(t, err, storage.ErrRevoked, "token %d: dropped beyond the bound", i)
		} else {
			require.ErrorIs(t, err, storage.ErrRevoked, "token %d: among the three that end last", i)
		}
	}
	require.ErrorIs(t, readErr(t, s, bobs.Digest, when), storage.ErrRevoked, "another org's tombstone")
}
