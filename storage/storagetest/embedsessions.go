package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var embedSessionTests = []subtest{
	{"CreateGet", testEmbedSessionCreateGet},
	{"NilFields", testEmbedSessionNilFields},
	{"ExpiryNotChecked", testEmbedSessionExpiryNotChecked},
	{"Missing", testEmbedSessionMissing},
	{"MissingUser", testEmbedSessionMissingUser},
	{"UserOfOtherOrg", testEmbedSessionUserOfOtherOrg},
	{"DuplicateDigest", testEmbedSessionDuplicateDigest},
	{"Copies", testEmbedSessionCopies},
	{"Limit", testEmbedSessionLimit},
	{"LimitCountsLiveOnly", testEmbedSessionLimitCountsLiveOnly},
	{"LimitExpiriesOutOfOrder", testEmbedSessionLimitExpiriesOutOfOrder},
	{"LimitZeroMeansNone", testEmbedSessionLimitZeroMeansNone},
	{"LimitPerUser", testEmbedSessionLimitPerUser},
	{"LimitDuplicateDigest", testEmbedSessionLimitDuplicateDigest},
	{"LimitOfARecreatedUser", testEmbedSessionLimitOfARecreatedUser},
	{"DroppedExpiredFreesDigest", testEmbedSessionDroppedExpiredFrees},
}

// getSession requires EmbedSessionByDigest to find d, and returns it.
func getSession(t testing.TB, s storage.Store, d storage.Digest) storage.EmbedSession {
	t.Helper()
	es, err := s.EmbedSessionByDigest(t.Context(), d)
	require.NoError(t, err)
	return es
}

// CreateEmbedSession stores a session that EmbedSessionByDigest returns
// whole: bytes, resources and times.
func testEmbedSessionCreateGet(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bot := createUser(t, s, org.ID, "bot", true)

	es := newSession(alice, "one")
	es.CreatedAt = at(250 * time.Millisecond)
	es.ExpiresAt = at(15*time.Minute + 250*time.Millisecond)
	es.InitialState = []byte(`{"filters":{"region":["EU","US"]},"unicode":"\u00e9\u2603","raw":"é"}`)
	require.NoError(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil))
	botSession := createSession(t, s, bot, "two")

	assertSession(t, es, getSession(t, s, es.Digest))
	assertSession(t, botSession, getSession(t, s, botSession.Digest))
}

// A session without initial state or resources reads back without them.
func testEmbedSessionNilFields(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	es := newSession(alice, "bare")
	es.InitialState = nil
	es.Resources = nil
	require.NoError(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil))

	got := getSession(t, s, es.Digest)
	assert.Len(t, got.InitialState, 0)
	assert.Len(t, got.Resources, 0)
	assertSession(t, es, got)
}

// EmbedSessionByDigest does not check expiry (and the store reads no
// clock).
func testEmbedSessionExpiryNotChecked(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	es := newSession(alice, "old")
	es.CreatedAt = past
	es.ExpiresAt = past.Add(time.Hour)
	require.NoError(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil))
	assertSession(t, es, getSession(t, s, es.Digest))
}

// EmbedSessionByDigest of an unknown digest is ErrNotFound.
func testEmbedSessionMissing(t *testing.T, s storage.Store) {
	_, err := s.EmbedSessionByDigest(t.Context(), digest("nothing stored yet"))
	require.ErrorIs(t, err, storage.ErrNotFound)

	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	createSession(t, s, alice, "one")
	_, err = s.EmbedSessionByDigest(t.Context(), digest("session two"))
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// CreateEmbedSession for a user that does not exist is ErrNotFound.
func testEmbedSessionMissingUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	createUser(t, s, org.ID, "alice", false)
	es := newSession(newUser(org.ID, "ghost", false), "ghost")
	require.ErrorIs(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil), storage.ErrNotFound)
	_, err := s.EmbedSessionByDigest(t.Context(), es.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound)

	nowhere := newSession(newUser(uuid.NewString(), "ghost", false), "nowhere")
	require.ErrorIs(t, s.CreateEmbedSession(t.Context(), nowhere, storage.SessionLimit{}, nil), storage.ErrNotFound)
}

// A session names its user by (Org, UserID): a user of another org is not
// found.
func testEmbedSessionUserOfOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "alice", false)
	es := newSession(alice, "cross")
	es.Org = b.ID
	require.ErrorIs(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil), storage.ErrNotFound)
	_, err := s.EmbedSessionByDigest(t.Context(), es.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// A second session with a taken Digest is ErrAlreadyExists, whoever it is
// for, and changes nothing.
func testEmbedSessionDuplicateDigest(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	es := createSession(t, s, alice, "one")

	for _, u := range []storage.User{alice, bob} {
		dup := newSession(u, "other")
		dup.Digest = es.Digest
		require.ErrorIs(t, s.CreateEmbedSession(t.Context(), dup, storage.SessionLimit{}, nil), storage.ErrAlreadyExists)
	}
	assertSession(t, es, getSession(t, s, es.Digest))
}

// Mutating a session's slices after CreateEmbedSession, or those
// EmbedSessionByDigest returns, changes nothing stored.
func testEmbedSessionCopies(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	es := newSession(alice, "copies")
	want := es
	want.Resources = slices.Clone(es.Resources)
	want.InitialState = slices.Clone(es.InitialState)
	es.Resources = append(make([]storage.Resource, 0, 8), es.Resources...)
	es.InitialState = append(make([]byte, 0, 64), es.InitialState...)
	require.NoError(t, s.CreateEmbedSession(t.Context(), es, storage.SessionLimit{}, nil))
	scribble(es.Resources, storage.Resource{URL: "mutated"})
	scribble(es.InitialState, 'X')
	assertSession(t, want, getSession(t, s, es.Digest))

	got := getSession(t, s, es.Digest)
	scribble(got.Resources, storage.Resource{URL: "mutated"})
	scribble(got.InitialState, 'X')
	assertSession(t, want, getSession(t, s, es.Digest))
}

// sessionAt builds a session of u created at created that expires at
// expires.
func sessionAt(u storage.User, value string, created, expires time.Time) storage.EmbedSession {
	es := newSession(u, value)
	es.CreatedAt, es.ExpiresAt = created, expires
	return es
}

// requireNoSession requires EmbedSessionByDigest not to find d.
func requireNoSession(t testing.TB, s storage.Store, d storage.Digest, msgAndArgs ...any) {
	t.Helper()
	_, err := s.EmbedSessionByDigest(t.Context(), d)
	require.ErrorIs(t, err, storage.ErrNotFound, msgAndArgs...)
}

// A user holding lim.Max sessions live at lim.LiveAt gets no more:
// ErrLimitExceeded, with nothing stored and no event recorded (once a
// cleanup, if the store has one, settled what was pending), and the
// sessions it holds stay.
func testEmbedSessionLimit(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	lim := storage.SessionLimit{Max: 3, LiveAt: t0}
	var held []storage.EmbedSession
	for i := range lim.Max {
		es := sessionAt(bot, fmt.Sprint("held ", i), t0, at(24*time.Hour))
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, audit(newEvent(org.ID, "embed_session.create", t0))), "session %d", i)
		held = append(held, es)
	}
	require.Len(t, listEvents(t, s, org.ID), lim.Max)

	over := sessionAt(bot, "one too many", t0, at(24*time.Hour))
	err := s.CreateEmbedSession(ctx, over, lim, audit(newEvent(org.ID, "embed_session.create", t0)))
	require.ErrorIs(t, err, storage.ErrLimitExceeded)
	requireNoSession(t, s, over.Digest, "a refused session")
	clean(t, s, at(time.Hour))
	assert.Len(t, listEvents(t, s, org.ID), lim.Max, "no event of the refused session")
	for _, es := range held {
		assertSession(t, es, getSession(t, s, es.Digest))
	}
	// A higher limit lets one more in.
	require.NoError(t, s.CreateEmbedSession(ctx, over, storage.SessionLimit{Max: lim.Max + 1, LiveAt: t0}, nil))
	assertSession(t, over, getSession(t, s, over.Digest))
}

// Only sessions live at lim.LiveAt count: one that expires at LiveAt or
// before frees its place.
func testEmbedSessionLimitCountsLiveOnly(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	lim := storage.SessionLimit{Max: 2, LiveAt: t0}
	early := sessionAt(bot, "early", t0, at(time.Minute))
	late := sessionAt(bot, "late", t0, at(time.Hour))
	for _, es := range []storage.EmbedSession{early, late} {
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, nil))
	}
	over := sessionAt(bot, "over", t0, at(time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded)

	// A millisecond before early expires, it is live still.
	lim.LiveAt = at(time.Minute - time.Millisecond)
	require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded)
	// At its expiry it no longer is.
	lim.LiveAt = at(time.Minute)
	require.NoError(t, s.CreateEmbedSession(ctx, over, lim, nil))
	assertSession(t, over, getSession(t, s, over.Digest))
	assertSession(t, late, getSession(t, s, late.Digest))
	// late and over fill the places again.
	another := sessionAt(bot, "another", lim.LiveAt, at(2*time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, another, lim, nil), storage.ErrLimitExceeded)
	requireNoSession(t, s, another.Digest)
}

// Sessions created in another order than they expire (their lifetime
// changed between creations) count as live until each expires, and
// those that outlive the others stay readable.
func testEmbedSessionLimitExpiriesOutOfOrder(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	lim := storage.SessionLimit{Max: 3, LiveAt: t0}
	three := sessionAt(bot, "three", t0, at(3*time.Hour))
	one := sessionAt(bot, "one", t0, at(time.Hour))
	two := sessionAt(bot, "two", t0, at(2*time.Hour))
	for _, es := range []storage.EmbedSession{three, one, two} {
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, nil))
	}
	full := sessionAt(bot, "full", t0, at(4*time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, full, lim, nil), storage.ErrLimitExceeded)

	// At 90 minutes, one has expired: a place, then none.
	lim.LiveAt = at(90 * time.Minute)
	require.NoError(t, s.CreateEmbedSession(ctx, full, lim, nil))
	over := sessionAt(bot, "over", lim.LiveAt, at(4*time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded)
	for _, es := range []storage.EmbedSession{three, two, full} {
		assertSession(t, es, getSession(t, s, es.Digest))
	}
	// At two hours, two has expired as well: one place.
	lim.LiveAt = at(2 * time.Hour)
	require.NoError(t, s.CreateEmbedSession(ctx, over, lim, nil))
	last := sessionAt(bot, "last", lim.LiveAt, at(5*time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, last, lim, nil), storage.ErrLimitExceeded)
	for _, es := range []storage.EmbedSession{three, full, over} {
		assertSession(t, es, getSession(t, s, es.Digest))
	}
}

// A lim.Max of zero or less means no limit.
func testEmbedSessionLimitZeroMeansNone(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	var made []storage.EmbedSession
	for i := range 20 {
		lim := storage.SessionLimit{Max: 0, LiveAt: t0}
		if i%2 == 1 {
			lim.Max = -1
		}
		es := sessionAt(bot, fmt.Sprint("unbounded ", i), t0, at(time.Hour))
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, nil), "session %d", i)
		made = append(made, es)
	}
	for _, es := range made {
		assertSession(t, es, getSession(t, s, es.Digest))
	}
}

// The sessions of other users, of the org or of another, do not count.
func testEmbedSessionLimitPerUser(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org, other := newOrg(t, s), newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	peer := createUser(t, s, org.ID, "peer", true)
	twin := createUser(t, s, other.ID, "bot", true)
	lim := storage.SessionLimit{Max: 2, LiveAt: t0}
	for i := range lim.Max {
		for _, u := range []storage.User{peer, twin} {
			require.NoError(t, s.CreateEmbedSession(ctx, sessionAt(u, fmt.Sprint(u.ID, i), t0, at(time.Hour)), lim, nil))
		}
	}
	var mine []storage.EmbedSession
	for i := range lim.Max {
		es := sessionAt(bot, fmt.Sprint("mine ", i), t0, at(time.Hour))
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, nil), "session %d of bot", i)
		mine = append(mine, es)
	}
	over := sessionAt(bot, "over", t0, at(time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded)
	for _, es := range mine {
		assertSession(t, es, getSession(t, s, es.Digest))
	}
}

// At the limit, a session with a taken Digest is ErrAlreadyExists, as
// below it.
func testEmbedSessionLimitDuplicateDigest(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	lim := storage.SessionLimit{Max: 1, LiveAt: t0}
	es := sessionAt(bot, "one", t0, at(time.Hour))
	require.NoError(t, s.CreateEmbedSession(t.Context(), es, lim, nil))
	dup := sessionAt(bot, "two", t0, at(time.Hour))
	dup.Digest = es.Digest
	require.ErrorIs(t, s.CreateEmbedSession(t.Context(), dup, lim, nil), storage.ErrAlreadyExists)
	assertSession(t, es, getSession(t, s, es.Digest))
}

// A user deleted with its sessions and created again under the same name
// starts with none: the sessions of the deleted user, gone, take no place
// of the new one's, and the limit counts the new one's alone.
func testEmbedSessionLimitOfARecreatedUser(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	old := createUser(t, s, org.ID, "bot", true)
	lim := storage.SessionLimit{Max: 2, LiveAt: t0}
	var gone []storage.EmbedSession
	for i := range lim.Max {
		es := sessionAt(old, fmt.Sprint("old ", i), t0, at(time.Hour))
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, nil))
		gone = append(gone, es)
	}
	deleteUser(t, s, org.ID, "bot")
	bot := createUser(t, s, org.ID, "bot", true)
	for i := range lim.Max {
		es := sessionAt(bot, fmt.Sprint("new ", i), t0, at(time.Hour))
		require.NoError(t, s.CreateEmbedSession(ctx, es, lim, nil), "session %d of the new user", i)
		assertSession(t, es, getSession(t, s, es.Digest))
	}
	over := sessionAt(bot, "over", t0, at(time.Hour))
	require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded)
	for _, es := range gone {
		requireNoSession(t, s, es.Digest, "a session of the deleted user")
	}
}

// A creation may drop the user's sessions no longer live at its LiveAt.
// One the store dropped (EmbedSessionByDigest no longer finds it) is
// gone whole: a session with its digest can be created again; one the
// store kept still holds it.
func testEmbedSessionDroppedExpiredFrees(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	old := sessionAt(bot, "old", t0, at(time.Millisecond))
	require.NoError(t, s.CreateEmbedSession(ctx, old, storage.SessionLimit{}, nil))
	// Past old's expiry: the store may drop old now.
	lim := storage.SessionLimit{Max: 5, LiveAt: at(time.Second)}
	require.NoError(t, s.CreateEmbedSession(ctx, sessionAt(bot, "new", at(time.Second), at(time.Hour)), lim, nil))
	_, err := s.EmbedSessionByDigest(ctx, old.Digest)
	again := sessionAt(bot, "again", at(time.Second), at(time.Hour))
	again.Digest = old.Digest
	if err == nil {
		require.ErrorIs(t, s.CreateEmbedSession(ctx, again, lim, nil), storage.ErrAlreadyExists, "old is kept")
		return
	}
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, s.CreateEmbedSession(ctx, again, lim, nil), "old was dropped: its digest is free")
	assertSession(t, again, getSession(t, s, again.Digest))
}
