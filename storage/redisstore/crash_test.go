package redisstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

// errStop stands for a process that dies between two writes.
var errStop = errors.New("stopped here")

var crashT0 = time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)

// crashWorld is an org with a user, on a Store writing as on a Cluster.
type crashWorld struct {
	s    *Store
	user storage.User
}

func newCrashWorld(t *testing.T) *crashWorld {
	return newCrashWorldOn(t, miniClient(t))
}

// newCrashWorldOn is a crashWorld on c, under a prefix of its own.
func newCrashWorldOn(t *testing.T, c redis.UniversalClient) *crashWorld {
	ctx := t.Context()
	s := newStore(t, c, false)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: crashT0}, nil))
	w := &crashWorld{s: s, user: storage.User{
		ID: uuid.NewString(), Org: "acme", Username: "Robot", FoldedUsername: "robot",
		IsServiceAccount: true, Role: "Member", CreatedAt: crashT0,
	}}
	require.NoError(t, s.CreateUser(ctx, w.user, storage.UserLimit{}, nil))
	return w
}

// stopAt makes the Store stop at step, once.
func (w *crashWorld) stopAt(t *testing.T, step string) {
	hit := false
	w.s.step = func(name string) error {
		if name == step && !hit {
			hit = true
			return errStop
		}
		return nil
	}
	t.Cleanup(func() { assert.True(t, hit, "the test never reached step %q", step) })
}

func (w *crashWorld) token(value string, expires time.Time) storage.Token {
	return storage.Token{
		ID: uuid.NewString(), Org: w.user.Org, UserID: w.user.ID, Digest: sha256.Sum256([]byte(value)),
		Name: value, Type: "read_write", CreatedAt: crashT0, ExpiresAt: expires,
	}
}

// audited is the Audit of an event of action on the target id.
func audited(action, id string) *storage.Audit {
	return &storage.Audit{Event: storage.Event{
		ID: uuid.NewString(), Org: "acme", At: crashT0, ActorUsername: "system", Action: action, TargetID: id,
	}}
}

// requireEvents asserts that the org's audit trail holds exactly the
// events "action target" given, in any order.
func (w *crashWorld) requireEvents(t *testing.T, want ...string) {
	t.Helper()
	page, err := w.s.ListEvents(t.Context(), "acme", storage.EventQuery{Limit: 100})
	require.NoError(t, err)
	got := []string{}
	for _, e := range page.Events {
		got = append(got, e.Action+" "+e.TargetID)
	}
	if want == nil {
		want = []string{}
	}
	require.ElementsMatch(t, want, got, "every change has its event, every event its change")
}

// requireUnusable asserts that tok neither authenticates nor is listed.
func (w *crashWorld) requireUnusable(t *testing.T, tok storage.Token) {
	t.Helper()
	_, err := w.s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest})
	require.ErrorIs(t, err, storage.ErrNotFound, "the token authenticates")
	toks, err := w.s.ListTokens(t.Context(), tok.Org, tok.UserID, crashT0)
	require.NoError(t, err)
	for _, got := range toks {
		require.NotEqual(t, tok.ID, got.ID, "the token is listed")
	}
}

// A stop after the pointers are reserved leaves a token that neither
// authenticates nor is listed nor counts against the limit; the user
// can still be deleted and its name taken again.
func TestCrashCreateTokenAfterReserve(t *testing.T) {
	for _, expires := range []time.Time{{}, crashT0.Add(time.Hour)} {
		w := newCrashWorld(t)
		ctx := t.Context()
		w.stopAt(t, "create token: reserved")
		lost := w.token("lost-token-value", expires)
		require.ErrorIs(t, w.s.CreateToken(ctx, lost, storage.TokenLimit{Max: 1, LiveAt: crashT0}, audited("token.create", lost.ID)), errStop)
		w.requireUnusable(t, lost)
		w.requireEvents(t)

		next := w.token("next-token-value", expires)
		require.NoError(t, w.s.CreateToken(ctx, next, storage.TokenLimit{Max: 1, LiveAt: crashT0}, audited("token.create", next.ID)))
		w.requireEvents(t, "token.create "+next.ID)
		a, err := w.s.ReadAccess(ctx, storage.AccessQuery{Digest: next.Digest})
		require.NoError(t, err)
		assert.Equal(t, next.ID, a.Credential.Token.ID)

		_, err = w.s.DeleteUser(ctx, "acme", w.user.ID, nil)
		require.NoError(t, err)
		w.requireUnusable(t, next)
		require.NoError(t, w.s.CreateUser(ctx, storage.User{ID: uuid.NewString(), Org: "acme", Username: "robot", FoldedUsername: "robot", Role: "Member", CreatedAt: crashT0}, storage.UserLimit{}, nil))
	}
}

// A creation stopped between its reservation and its script, then
// withdrawn by its id (as the Service does when a creation fails), leaves
// nothing behind: the same value, a seeded one, can be created again.
func TestCrashCreateTokenWithdrawnFreesItsValue(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	w.stopAt(t, "create token: reserved")
	lost := w.token("seeded-token-value", time.Time{})
	require.ErrorIs(t, w.s.CreateToken(ctx, lost, storage.TokenLimit{}, audited("token.seed", lost.ID)), errStop)
	require.ErrorIs(t, w.s.DeleteToken(ctx, "acme", w.user.ID, lost.ID, storage.Revocation{At: crashT0}, audited("token.delete", lost.ID)), storage.ErrNotFound)
	keys, err := w.s.c.Keys(ctx, w.s.prefix+"t*").Result()
	require.NoError(t, err)
	require.Empty(t, keys, "the pointers of a token never stored")

	again := w.token("seeded-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, again, storage.TokenLimit{}, audited("token.seed", again.ID)))
	a, err := w.s.ReadAccess(ctx, storage.AccessQuery{Digest: again.Digest})
	require.NoError(t, err)
	assert.Equal(t, again.ID, a.Credential.Token.ID)
	w.requireEvents(t, "token.seed "+again.ID)
}

// A deletion stopped before its pointers, then deleted again: the second
// removes the pointers it left.
func TestCrashDeleteTokenDeletedAgainDropsItsPointers(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	tok := w.token("doomed-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	w.stopAt(t, "delete token: pointers")
	require.NoError(t, w.s.DeleteToken(ctx, "acme", w.user.ID, tok.ID, storage.Revocation{At: crashT0}, nil))
	require.ErrorIs(t, w.s.DeleteToken(ctx, "acme", w.user.ID, tok.ID, storage.Revocation{At: crashT0}, nil), storage.ErrNotFound)
	keys, err := w.s.c.Keys(ctx, w.s.prefix+"t*").Result()
	require.NoError(t, err)
	require.Empty(t, keys)
}

// The same through the Service, as a client does that got no answer and
// deletes again: the Service answers NOT_FOUND (the token is not among
// the user's), and still asks the store for the deletion, which removes
// the pointers.
func TestCrashDeleteTokenDeletedAgainThroughTheService(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	const credential = "robot-own-credential-value"
	require.NoError(t, w.s.CreateToken(ctx, w.token(credential, time.Time{}), storage.TokenLimit{}, nil))
	doomed := w.token("doomed-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, doomed, storage.TokenLimit{}, nil))
	svc := orgadmin.New(w.s, orgadmin.Config{})

	w.stopAt(t, "delete token: pointers")
	require.NoError(t, svc.DeleteToken(ctx, orgadmin.Bearer(credential), "Robot", doomed.ID))
	err := svc.DeleteToken(ctx, orgadmin.Bearer(credential), "Robot", doomed.ID)
	require.Equal(t, orgadmin.CodeNotFound, orgadmin.ErrorCode(err), "%v", err)
	keys, err := w.s.c.Keys(ctx, w.s.prefix+"tid:"+doomed.ID).Result()
	require.NoError(t, err)
	require.Empty(t, keys, "the deleted token's id pointer")
}

// cancelAt returns a context that the Store cancels when it reaches step,
// going on with it: a caller that leaves at that point.
func (w *crashWorld) cancelAt(t *testing.T, step string) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	hit := false
	w.s.step = func(name string) error {
		if name == step {
			hit = true
			cancel()
		}
		return nil
	}
	t.Cleanup(func() { assert.True(t, hit, "the test never reached step %q", step) })
	return ctx
}

// A caller that leaves once a user or a token is deleted, before its
// pointers are removed, leaves none behind: the deletion is made, and
// its end does not depend on the caller.
func TestCanceledDeletionsRemoveTheirPointers(t *testing.T) {
	t.Run("user", func(t *testing.T) {
		w := newCrashWorld(t)
		tok := w.token("orphan-token-value", time.Time{})
		require.NoError(t, w.s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil))
		_, err := w.s.DeleteUser(w.cancelAt(t, "delete user: pointers"), "acme", w.user.ID, nil)
		require.NoError(t, err)
		keys, err := w.s.c.Keys(t.Context(), w.s.prefix+"t*").Result()
		require.NoError(t, err)
		require.Empty(t, keys)
	})
	t.Run("token", func(t *testing.T) {
		w := newCrashWorld(t)
		tok := w.token("doomed-token-value", time.Time{})
		require.NoError(t, w.s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil))
		require.NoError(t, w.s.DeleteToken(w.cancelAt(t, "delete token: pointers"), "acme", w.user.ID, tok.ID, storage.Revocation{At: crashT0}, nil))
		keys, err := w.s.c.Keys(t.Context(), w.s.prefix+"tid:*").Result()
		require.NoError(t, err)
		require.Empty(t, keys, "the id's pointer")
		_, err = w.s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, LiveAt: crashT0})
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
}

// A stop after the token left its user, before its pointers are removed:
// it no longer authenticates, and deleting it again is ErrNotFound.
func TestCrashDeleteTokenBeforePointers(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	tok := w.token("doomed-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	w.stopAt(t, "delete token: pointers")
	require.NoError(t, w.s.DeleteToken(ctx, "acme", w.user.ID, tok.ID, storage.Revocation{At: crashT0}, audited("token.delete", tok.ID)))
	w.requireUnusable(t, tok)
	w.requireEvents(t, "token.delete "+tok.ID)
	require.ErrorIs(t, w.s.DeleteToken(ctx, "acme", w.user.ID, tok.ID, storage.Revocation{At: crashT0}, nil), storage.ErrNotFound)
}

// A stop after the user left the org's slot, before the pointers of its
// tokens and sessions are removed: none of them can be used, and the
// username can be created again without inheriting them.
func TestCrashDeleteUserBeforePointers(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	tok := w.token("orphan-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	ses := storage.EmbedSession{
		Digest: sha256.Sum256([]byte("orphan-session")), Org: "acme", DiveID: uuid.NewString(), Version: 1,
		UserID: w.user.ID, Username: w.user.Username, AffinityKey: "k", CreatedAt: crashT0, ExpiresAt: crashT0.Add(time.Hour),
	}
	require.NoError(t, w.s.CreateEmbedSession(ctx, ses, storage.SessionLimit{}, nil))

	w.stopAt(t, "delete user: pointers")
	_, err := w.s.DeleteUser(ctx, "acme", w.user.ID, audited("user.delete", w.user.ID))
	require.NoError(t, err)
	w.requireUnusable(t, tok)
	w.requireEvents(t, "user.delete "+w.user.ID)
	_, err = w.s.EmbedSessionByDigest(ctx, ses.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = w.s.GetUser(ctx, "acme", "robot")
	require.ErrorIs(t, err, storage.ErrNotFound)

	again := storage.User{ID: uuid.NewString(), Org: "acme", Username: "ROBOT", FoldedUsername: "robot", Role: "Member", CreatedAt: crashT0}
	require.NoError(t, w.s.CreateUser(ctx, again, storage.UserLimit{}, nil))
	toks, err := w.s.ListTokens(ctx, "acme", again.ID, crashT0)
	require.NoError(t, err)
	assert.Empty(t, toks)
	w.requireUnusable(t, tok)
}

// A token the process remembers (it authenticated once), of a user whose
// deletion stopped before its pointers went, never authenticates as a new
// user of the same name: not alone, not naming that user, not listing its
// tokens.
func TestCrashDeleteUserRememberedTokenIsNotTheNewcomers(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	tok := w.token("remembered-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	_, err := w.s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: "robot", Tokens: true, LiveAt: crashT0})
	require.NoError(t, err, "the token authenticates, and its location is remembered")

	w.stopAt(t, "delete user: pointers")
	_, err = w.s.DeleteUser(ctx, "acme", w.user.ID, nil)
	require.NoError(t, err)
	again := storage.User{ID: uuid.NewString(), Org: "acme", Username: "Robot", FoldedUsername: "robot", IsServiceAccount: true, Role: "Member", CreatedAt: crashT0}
	require.NoError(t, w.s.CreateUser(ctx, again, storage.UserLimit{}, nil))
	for _, q := range []storage.AccessQuery{
		{Digest: tok.Digest, LiveAt: crashT0},
		{Digest: tok.Digest, Username: "robot", LiveAt: crashT0},
		{Digest: tok.Digest, Username: "robot", Tokens: true, LiveAt: crashT0},
	} {
		a, err := w.s.ReadAccess(ctx, q)
		require.ErrorIs(t, err, storage.ErrNotFound, "%+v authenticated as %+v", q, a.Credential.User)
	}
}

// A stop after a session's pointer is reserved leaves nothing that
// resolves.
func TestCrashCreateEmbedSessionAfterReserve(t *testing.T) {
	w := newCrashWorld(t)
	ctx := context.Background()
	w.stopAt(t, "create embed session: reserved")
	ses := storage.EmbedSession{
		Digest: sha256.Sum256([]byte("lost-session")), Org: "acme", DiveID: uuid.NewString(), Version: 1,
		UserID: w.user.ID, Username: w.user.Username, AffinityKey: "k", CreatedAt: crashT0, ExpiresAt: crashT0.Add(time.Hour),
	}
	require.ErrorIs(t, w.s.CreateEmbedSession(ctx, ses, storage.SessionLimit{}, audited("embed_session.create", ses.DiveID)), errStop)
	_, err := w.s.EmbedSessionByDigest(ctx, ses.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound)
	w.requireEvents(t)
}

// A deletion on a Cluster turns its digest's pointer into a tombstone only
// while the pointer is its token's: one that a creation of the same value
// took over (see CreateToken) stays the other token's.
func TestDeleteTokenLeavesAPointerTakenOver(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	tok := w.token("shared-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	key := w.s.prefix + "tok:" + hexDigest(tok.Digest)
	other := "acme\n" + w.user.ID + "\n" + uuid.NewString() + markSep + "00" + markSep + "1"
	require.NoError(t, w.s.c.Set(ctx, key, other, 0).Err())

	require.NoError(t, w.s.DeleteToken(ctx, "acme", w.user.ID, tok.ID, storage.Revocation{At: crashT0, KeepUntil: crashT0.Add(time.Hour)}, nil))
	v, err := w.s.c.Get(ctx, key).Result()
	require.NoError(t, err)
	assert.Equal(t, other, v, "the other token's pointer")
	assertNoKey(t, w.s, w.s.prefix+"tid:"+tok.ID, "the deleted token's id pointer")

	// Its own pointer, marked, becomes its tombstone.
	mine := w.token("own-token-value", time.Time{})
	require.NoError(t, w.s.CreateToken(ctx, mine, storage.TokenLimit{}, nil))
	require.NoError(t, w.s.DeleteToken(ctx, "acme", w.user.ID, mine.ID, storage.Revocation{At: crashT0, KeepUntil: crashT0.Add(time.Hour)}, nil))
	_, err = w.s.ReadAccess(ctx, storage.AccessQuery{Digest: mine.Digest, LiveAt: crashT0})
	require.ErrorIs(t, err, storage.ErrRevoked)
}
