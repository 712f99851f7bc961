package redisstore

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage"
)

// A creation on a Cluster that dies between its reservation and its
// script leaves its token's pointers behind. A creation of the same value
// takes the digest's pointer over once it is older than the reservation
// grace, and only when the token it names does not exist.

func TestDeadReservationMiniredis(t *testing.T) {
	testDeadReservation(t, func(t *testing.T) redis.UniversalClient { return miniClient(t) })
}

func TestDeadReservationRedisCluster(t *testing.T) {
	c := clusterClient(t)
	testDeadReservation(t, func(*testing.T) redis.UniversalClient { return c })
}

const fixedValue = "fixed-token-value"

func testDeadReservation(t *testing.T, client func(*testing.T) redis.UniversalClient) {
	lim := storage.TokenLimit{Max: 10, LiveAt: crashT0}
	cases := []struct {
		name           string
		lost, expected time.Duration // the tokens' lifetimes; 0: no expiry
	}{
		{"no expiry", 0, 0},
		{"with expiry", time.Hour, time.Hour},
		{"with expiry, taken by one without", time.Hour, 0},
	}
	for _, tc := range cases {
		t.Run("taken over past the grace, "+tc.name, func(t *testing.T) {
			w := newCrashWorldOn(t, client(t))
			ctx := t.Context()
			lost := w.crashCreating(t, tc.lost)
			grace := w.s.reservationGrace()
			held := w.get(t, w.digestKey(lost))

			early := w.tokenAt(crashT0.Add(grace-time.Millisecond), tc.expected)
			require.ErrorIs(t, w.s.CreateToken(ctx, early, lim, audited("token.create", early.ID)), storage.ErrAlreadyExists)
			assert.Equal(t, held, w.get(t, w.digestKey(lost)), "a reservation within the grace stays")
			assert.False(t, w.exists(t, "tid:"+early.ID), "the refused token's id is not left reserved")

			next := w.tokenAt(crashT0.Add(grace), tc.expected)
			require.NoError(t, w.s.CreateToken(ctx, next, lim, audited("token.create", next.ID)))
			w.requireOnly(t, next)
			assert.False(t, w.exists(t, "tid:"+lost.ID), "the dead reservation's id")
			assert.True(t, w.exists(t, "tid:"+next.ID), "the new token's id")
			life, err := w.s.c.PTTL(ctx, w.digestKey(next)).Result()
			require.NoError(t, err)
			if tc.expected == 0 {
				assert.Equal(t, time.Duration(-1), life, "the pointer of a token without expiry has none")
			} else {
				assert.Greater(t, life, tc.expected, "the pointer lives as long as the new token, and the grace")
			}
			w.requireEvents(t, "token.create "+next.ID)
		})
	}

	t.Run("never while its token exists", func(t *testing.T) {
		for _, life := range []time.Duration{0, time.Hour} {
			w := newCrashWorldOn(t, client(t))
			ctx := t.Context()
			tok := w.tokenAt(crashT0, life)
			require.NoError(t, w.s.CreateToken(ctx, tok, lim, nil))
			held := w.get(t, w.digestKey(tok))

			late := w.tokenAt(crashT0.AddDate(100, 0, 0), 0)
			require.ErrorIs(t, w.s.CreateToken(ctx, late, lim, nil), storage.ErrAlreadyExists)
			assert.Equal(t, held, w.get(t, w.digestKey(tok)), "the pointer of the token")
			assert.False(t, w.exists(t, "tid:"+late.ID), "the refused token's id is not left reserved")
			w.requireOnly(t, tok)
		}
	})

	t.Run("never without a time", func(t *testing.T) {
		w := newCrashWorldOn(t, client(t))
		ctx := t.Context()
		lost := w.crashCreating(t, 0)
		// The mark an earlier version wrote: the value and a nonce.
		held := w.get(t, w.digestKey(lost))
		old := held[:strings.LastIndex(held, markSep)]
		require.Equal(t, 1, strings.Count(old, markSep))
		require.NoError(t, w.s.c.Set(ctx, w.digestKey(lost), old, 0).Err())

		late := w.tokenAt(crashT0.AddDate(100, 0, 0), 0)
		require.ErrorIs(t, w.s.CreateToken(ctx, late, lim, nil), storage.ErrAlreadyExists)
		assert.Equal(t, old, w.get(t, w.digestKey(lost)), "a reservation of unknown age stays")
		assert.True(t, w.exists(t, "tid:"+lost.ID))
		assert.False(t, w.exists(t, "tid:"+late.ID))
	})

	t.Run("gone before it is taken", func(t *testing.T) {
		// The dead reservation goes between its read and the takeover:
		// its token deleted by its id, or its lifetime over. The value is
		// free, and the creation takes it.
		w := newCrashWorldOn(t, client(t))
		ctx := t.Context()
		lost := w.crashCreating(t, 0)
		var deleted error
		w.s.step = func(name string) error {
			if name == "create token: take over" {
				deleted = w.s.DeleteToken(ctx, "acme", w.user.ID, lost.ID, storage.Revocation{At: crashT0}, nil)
			}
			return nil
		}
		next := w.tokenAt(crashT0.Add(w.s.reservationGrace()), 0)
		err := w.s.CreateToken(ctx, next, lim, nil)
		require.ErrorIs(t, deleted, storage.ErrNotFound, "the dead token, never stored, is deleted by its id")
		require.NoError(t, err, "the value is free")
		w.requireOnly(t, next)
		assert.True(t, w.exists(t, "tid:"+next.ID), "the new token's id")
		assert.False(t, w.exists(t, "tid:"+lost.ID), "the dead reservation's id")
	})

	t.Run("gone before it is read", func(t *testing.T) {
		// What held the value goes between the reservation that found it
		// and its read: a tombstone or a pointer whose life ended, or a
		// deletion. The value is free, and the creation takes it.
		for _, held := range []string{"tombstone", "reservation"} {
			w := newCrashWorldOn(t, client(t))
			ctx := t.Context()
			var lost storage.Token
			if held == "tombstone" {
				lost = w.tokenAt(crashT0, 0)
				require.NoError(t, w.s.CreateToken(ctx, lost, lim, nil))
				require.NoError(t, w.s.DeleteToken(ctx, "acme", w.user.ID, lost.ID, storage.Revocation{At: crashT0, KeepUntil: crashT0.Add(time.Hour)}, nil))
				require.True(t, isTombstone(w.get(t, w.digestKey(lost))), "a tombstone")
			} else {
				lost = w.crashCreating(t, 0)
			}
			w.s.step = func(name string) error {
				if name == "reserve: held" {
					require.NoError(t, w.s.c.Del(ctx, w.digestKey(lost)).Err())
				}
				return nil
			}
			next := w.tokenAt(crashT0.Add(time.Second), 0)
			require.NoError(t, w.s.CreateToken(ctx, next, lim, nil), "after a %s that went", held)
			w.requireOnly(t, next)
			assert.True(t, w.exists(t, "tid:"+next.ID), "the new token's id")
		}
	})

	t.Run("one of two racing takeovers", func(t *testing.T) {
		w := newCrashWorldOn(t, client(t))
		ctx := t.Context()
		lost := w.crashCreating(t, 0)
		// Both creations have found the reservation dead before either
		// takes it.
		var arrived sync.WaitGroup
		arrived.Add(2)
		w.s.step = func(name string) error {
			if name == "create token: take over" {
				arrived.Done()
				arrived.Wait()
			}
			return nil
		}
		toks := []storage.Token{w.tokenAt(crashT0.Add(w.s.reservationGrace()), 0), w.tokenAt(crashT0.Add(w.s.reservationGrace()), 0)}
		errs := make([]error, len(toks))
		var wg sync.WaitGroup
		for i, tok := range toks {
			wg.Go(func() { errs[i] = w.s.CreateToken(ctx, tok, lim, nil) })
		}
		wg.Wait()

		won := 0
		if errs[0] != nil {
			won = 1
		}
		require.NoError(t, errs[won])
		require.ErrorIs(t, errs[1-won], storage.ErrAlreadyExists)
		w.requireOnly(t, toks[won])
		assert.False(t, w.exists(t, "tid:"+toks[1-won].ID), "the loser's id is not left reserved")
		assert.False(t, w.exists(t, "tid:"+lost.ID), "the dead reservation's id")
	})
}

// crashCreating creates a token of fixedValue at crashT0 that lives for
// life (for ever when 0), stopped between its reservation and its script.
func (w *crashWorld) crashCreating(t *testing.T, life time.Duration) storage.Token {
	t.Helper()
	w.stopAt(t, "create token: reserved")
	lost := w.tokenAt(crashT0, life)
	require.ErrorIs(t, w.s.CreateToken(t.Context(), lost, storage.TokenLimit{Max: 10, LiveAt: crashT0}, audited("token.create", lost.ID)), errStop)
	require.True(t, w.exists(t, "tid:"+lost.ID), "the reservation is left")
	return lost
}

// tokenAt is a new token of fixedValue created at at that lives for life
// (for ever when 0).
func (w *crashWorld) tokenAt(at time.Time, life time.Duration) storage.Token {
	tok := w.token(fixedValue, time.Time{})
	tok.CreatedAt = at
	if life > 0 {
		tok.ExpiresAt = at.Add(life)
	}
	return tok
}

func (w *crashWorld) digestKey(tok storage.Token) string {
	return w.s.prefix + "tok:" + hexDigest(tok.Digest)
}

// get returns the value of key, which must exist.
func (w *crashWorld) get(t *testing.T, key string) string {
	t.Helper()
	v, err := w.s.c.Get(t.Context(), key).Result()
	require.NoError(t, err, key)
	return v
}

// exists reports whether the global key (after the Store's prefix) exists.
func (w *crashWorld) exists(t *testing.T, key string) bool {
	t.Helper()
	n, err := w.s.c.Exists(t.Context(), w.s.prefix+key).Result()
	require.NoError(t, err)
	return n == 1
}

// requireOnly asserts that fixedValue authenticates as tok, the only
// token its user lists.
func (w *crashWorld) requireOnly(t *testing.T, tok storage.Token) {
	t.Helper()
	a, err := w.s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest, LiveAt: tok.CreatedAt})
	require.NoError(t, err)
	assert.Equal(t, tok.ID, a.Credential.Token.ID, "the token the value authenticates as")
	toks, err := w.s.ListTokens(t.Context(), "acme", w.user.ID, tok.CreatedAt)
	require.NoError(t, err)
	ids := []string{}
	for _, got := range toks {
		ids = append(ids, got.ID)
	}
	assert.Equal(t, []string{tok.ID}, ids, "the tokens listed")
}

func TestReservedAt(t *testing.T) {
	at := crashT0.Add(1234 * time.Millisecond)
	ms := strconv.FormatInt(at.UnixMilli(), 10)
	for _, tc := range []struct {
		v    string
		want time.Time
		ok   bool
	}{
		{"acme\nuid\ntid\x00nonce\x00" + ms, at, true},
		{"acme\nuid\ntid\x00nonce", time.Time{}, false},
		{"acme\nuid\ntid", time.Time{}, false},
		{"acme\nuid\ntid\x00nonce\x00", time.Time{}, false},
		{"acme\nuid\ntid\x00nonce\x00zero", time.Time{}, false},
		{tombstone("acme", "uid", "tid", crashT0, at), time.Time{}, false},
	} {
		got, ok := reservedAt(tc.v)
		assert.Equal(t, tc.ok, ok, "%q", tc.v)
		assert.True(t, tc.want.Equal(got), "%q: %v", tc.v, got)
	}
	assert.Equal(t, "acme\nuid\ntid", unmark("acme\nuid\ntid\x00nonce\x00"+ms), "unmark drops the whole mark")
}

// A server whose start with ORGADMIN_ADMIN_TOKEN dies between the
// reservation of the token's pointers and its script, on a Cluster: a
// start within the reservation grace finds the value held, one past it
// makes the value the Admin's bootstrap token.
func TestBootstrapAfterADeadCreationMiniredis(t *testing.T) {
	testBootstrapAfterADeadCreation(t, miniClient(t))
}

func TestBootstrapAfterADeadCreationRedisCluster(t *testing.T) {
	testBootstrapAfterADeadCreation(t, clusterClient(t))
}

func testBootstrapAfterADeadCreation(t *testing.T, c redis.UniversalClient) {
	ctx := t.Context()
	s := newStore(t, c, false)
	clock := fakeclock.New(crashT0)
	in := orgadmin.BootstrapInput{Org: "default", Username: "admin", Token: "operator-chosen-admin-token"}
	died(t, s, "create token: reserved", func() {
		_, _ = orgadmin.New(s, orgadmin.Config{Now: clock.Now}).Bootstrap(ctx, in)
	})

	restarted := orgadmin.New(s, orgadmin.Config{Now: clock.Now})
	clock.Advance(s.reservationGrace() - time.Second)
	_, err := restarted.Bootstrap(ctx, in)
	require.Equal(t, orgadmin.CodeBadRequest, orgadmin.ErrorCode(err), "within the grace the value is held: %v", err)

	clock.Advance(time.Second)
	token, err := restarted.Bootstrap(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, in.Token, token)
	admin, err := restarted.Authenticate(ctx, in.Token)
	require.NoError(t, err)
	assert.Equal(t, "admin", admin.Username())
	toks, err := restarted.ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	assert.Equal(t, orgadmin.BootstrapTokenName, toks[0].Name)

	// And the start after it changes nothing.
	token, err = restarted.Bootstrap(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, in.Token, token)
	toks, err = restarted.ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	require.Len(t, toks, 1)
}

// death is what a process that dies panics with in died.
type death struct{}

// died runs f, the work of a process that dies when s reaches step:
// nothing of f runs after that step, not even what it would do on an
// error (the Service withdraws a creation that fails).
func died(t *testing.T, s *Store, step string, f func()) {
	t.Helper()
	s.step = func(name string) error {
		if name == step {
			panic(death{})
		}
		return nil
	}
	defer func() {
		s.step = nil
		switch r := recover(); r {
		case death{}:
		case nil:
			t.Fatalf("the process never reached step %q", step)
		default:
			panic(r)
		}
	}()
	f()
}

// Round trips of a creation that meets a reservation, on a Cluster: the
// reservation, the claim over a tombstone, the read of the value held,
// then, when it is past the grace, the read of its token in its org and
// the takeover (with the drop of its id's key); the script follows a
// takeover, the release a refusal.
func TestDeadReservationRoundTrips(t *testing.T) {
	c := miniClient(t)
	counter := &sent{}
	c.AddHook(counter)
	w := newCrashWorldOn(t, c)
	ctx := t.Context()
	lim := storage.TokenLimit{Max: 10, LiveAt: crashT0}
	lost := w.crashCreating(t, 0)
	grace := w.s.reservationGrace()

	trips := func(tok storage.Token) (int64, error) {
		before := counter.trips.Load()
		err := w.s.CreateToken(ctx, tok, lim, nil)
		return counter.trips.Load() - before, err
	}
	// The first creation that runs the script loads it (EVALSHA, then
	// EVAL).
	n, err := trips(w.token("another-token-value", time.Time{}))
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "no reservation met: the reservation and the script, loaded")

	n, err = trips(w.tokenAt(crashT0.Add(grace-time.Millisecond), 0))
	require.ErrorIs(t, err, storage.ErrAlreadyExists)
	assert.Equal(t, int64(4), n, "refused within the grace")

	n, err = trips(w.tokenAt(crashT0.Add(grace), 0))
	require.NoError(t, err)
	assert.Equal(t, int64(6), n, "taken over")

	n, err = trips(w.tokenAt(crashT0.AddDate(1, 0, 0), 0))
	require.ErrorIs(t, err, storage.ErrAlreadyExists)
	assert.Equal(t, int64(5), n, "refused: its token exists")

	n, err = trips(w.token("a-third-token-value", time.Time{}))
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "no reservation met: the reservation and the script")
	assert.False(t, w.exists(t, "tid:"+lost.ID))
}

// A user's deletion on a Cluster removes the pointers of its tokens after
// its script: a creation of the same value by another user that took a
// pointer over in between (the deleted token no longer exists) keeps it,
// and its token authenticates.
func TestDeleteUserLeavesAPointerTakenOverMiniredis(t *testing.T) {
	testDeleteUserLeavesAPointerTakenOver(t, miniClient(t))
}

func TestDeleteUserLeavesAPointerTakenOverRedisCluster(t *testing.T) {
	testDeleteUserLeavesAPointerTakenOver(t, clusterClient(t))
}

func testDeleteUserLeavesAPointerTakenOver(t *testing.T, c redis.UniversalClient) {
	w := newCrashWorldOn(t, c)
	ctx := t.Context()
	kiosk := storage.User{ID: uuid.NewString(), Org: "acme", Username: "Kiosk", FoldedUsername: "kiosk",
		IsServiceAccount: true, Role: "Member", CreatedAt: crashT0}
	require.NoError(t, w.s.CreateUser(ctx, kiosk, storage.UserLimit{}, nil))
	doomed := w.tokenAt(crashT0, 0)
	require.NoError(t, w.s.CreateToken(ctx, doomed, storage.TokenLimit{}, nil))

	next := w.tokenAt(crashT0.Add(w.s.reservationGrace()), 0)
	next.UserID = kiosk.ID
	var created error
	took := false
	w.s.step = func(name string) error {
		if name == "delete user: pointers" && !took {
			took = true
			created = w.s.CreateToken(ctx, next, storage.TokenLimit{}, nil)
		}
		return nil
	}
	_, err := w.s.DeleteUser(ctx, "acme", w.user.ID, nil)
	require.NoError(t, err)
	require.True(t, took, "the deletion reached its pointers")
	require.NoError(t, created, "the value's pointer, of a token that no longer exists, is taken over")

	a, err := w.s.ReadAccess(ctx, storage.AccessQuery{Digest: next.Digest, LiveAt: next.CreatedAt})
	require.NoError(t, err, "the token created while the user was deleted authenticates")
	assert.Equal(t, next.ID, a.Credential.Token.ID)
	assert.Equal(t, kiosk.ID, a.Credential.User.ID)
	assert.True(t, w.exists(t, "tid:"+next.ID), "the new token's id")
	assert.False(t, w.exists(t, "tid:"+doomed.ID), "the deleted token's id")
}
