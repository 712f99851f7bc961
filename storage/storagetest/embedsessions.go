package storagetest

import (
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
