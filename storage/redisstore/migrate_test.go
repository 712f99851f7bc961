package redisstore

import (
	"context"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/casefold"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// A user an earlier version stored under its fold of the username (old),
// which Migrate re-keys under casefold.Fold (new).
type staleName struct {
	username, old, new string
	sa                 bool
}

var staleNames = []staleName{
	{"Μαρία", "\u00B5αρία", "μαρία", false}, // micro sign -> mu
	{"Σοφός", "ςοφός", "σοφόσ", true},       // final sigma -> sigma, everywhere
	{"Ꭰli", "ꭰli", "Ꭰli", false},            // lower-case Cherokee -> upper case
}

// migrationWorld is what an earlier version left, written with this
// version's calls given the earlier keys:
//
//   - acme: the stale users above and ann, bob, robot (a service account)
//     and ángel, whose keys did not change; tokens of the stale users (one
//     of María's revoked, one expiring) and of ann; Duckling reports of
//     María, ángel and robot; an embed session of María;
//   - beta: ann and zoë, keys unchanged, and a token of zoë;
//   - gamma: a María of its own, under the earlier key.
type migrationWorld struct {
	s       *Store
	t0      time.Time
	users   map[string]storage.User    // acme's, by username, as stored
	tokens  map[string][]storage.Token // acme's live tokens, by username
	revoked storage.Token              // María's
	session storage.EmbedSession       // María's
	gamma   storage.User
}

// inEachWorld runs f, as a subtest, in a migration world on each kind of
// Redis.
func inEachWorld(t *testing.T, f func(t *testing.T, w *migrationWorld)) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) { f(t, newMigrationWorld(t, tc)) })
	}
}

func newMigrationWorld(t *testing.T, tc mirrorCase) *migrationWorld {
	t.Helper()
	ctx := t.Context()
	s := newStore(t, tc.client(t), tc.single)
	w := &migrationWorld{s: s, t0: crashT0, users: map[string]storage.User{}, tokens: map[string][]storage.Token{}}
	for _, org := range []string{"acme", "beta", "gamma"} {
		require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: org, CreatedAt: w.t0}, nil))
	}
	user := func(org, name, key string, sa bool) storage.User {
		u := storage.User{ID: uuid.NewString(), Org: org, Username: name, FoldedUsername: key,
			IsServiceAccount: sa, Role: "Member", Privileges: []string{"read"}, CreatedAt: w.t0,
			Instances: storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "Standard"}}}
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
		return u
	}
	token := func(u storage.User, value string, expires time.Time) storage.Token {
		tok := storage.Token{ID: uuid.NewString(), Org: u.Org, UserID: u.ID, Digest: sha256.Sum256([]byte(value)),
			Name: value, Type: "read_write", CreatedAt: w.t0, ExpiresAt: expires}
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
		return tok
	}
	for _, n := range staleNames {
		require.Equal(t, n.new, casefold.Fold(n.old), "fixture: %s", n.username)
		require.True(t, casefold.Stale(n.old), "fixture: %s", n.username)
		w.users[n.username] = user("acme", n.username, n.old, n.sa)
	}
	for _, name := range []string{"Ann", "Bob", "Robot", "Ángel"} {
		w.users[name] = user("acme", name, casefold.Fold(name), name == "Robot")
	}
	maria := w.users["Μαρία"]
	w.tokens["Μαρία"] = []storage.Token{token(maria, "maria-forever", time.Time{}), token(maria, "maria-hour", w.t0.Add(time.Hour))}
	w.revoked = token(maria, "maria-revoked", time.Time{})
	require.NoError(t, s.DeleteToken(ctx, "acme", maria.ID, w.revoked.ID,
		storage.Revocation{At: w.t0, KeepUntil: w.t0.Add(24 * time.Hour)}, nil))
	w.tokens["Σοφός"] = []storage.Token{token(w.users["Σοφός"], "sofos", time.Time{})}
	w.tokens["Ꭰli"] = []storage.Token{token(w.users["Ꭰli"], "dli", time.Time{})}
	w.tokens["Ann"] = []storage.Token{token(w.users["Ann"], "ann", time.Time{})}
	for _, name := range []string{"Μαρία", "Ángel", "Robot"} {
		require.NoError(t, s.SetDuckling(ctx, storage.Duckling{Org: "acme", UserID: w.users[name].ID, ID: "rw", Active: true, At: w.t0}))
	}
	w.session = storage.EmbedSession{
		Digest: sha256.Sum256([]byte("maria-session")), Org: "acme", DiveID: uuid.NewString(), Version: 1,
		UserID: maria.ID, Username: maria.Username, AffinityKey: "k", CreatedAt: w.t0, ExpiresAt: w.t0.Add(time.Hour),
	}
	require.NoError(t, s.CreateEmbedSession(ctx, w.session, storage.SessionLimit{}, nil))

	user("beta", "Ann", "ann", false)
	token(user("beta", "Zoë", "zoë", false), "zoe", time.Time{})
	w.gamma = user("gamma", "Μαρία", "\u00B5αρία", false)
	return w
}

// contents returns what the world's Redis holds under the org's key base,
// or under the Store's prefix for org "".
func (w *migrationWorld) contents(t *testing.T, org string) []string {
	t.Helper()
	prefix := w.s.prefix
	if org != "" {
		prefix = w.s.orgBase(org)
	}
	c, err := testdb.RedisContents(t.Context(), w.s.c, prefix)
	require.NoError(t, err)
	slices.Sort(c)
	return c
}

// rekeyed returns u as GetUser should find it once re-keyed.
func rekeyed(u storage.User) storage.User {
	u.FoldedUsername = casefold.Fold(u.FoldedUsername)
	return u
}

// requireMigrated asserts that every user of org (acme or gamma) is under
// its new key and none under its old one, or, with done false, the
// reverse: an org is never half re-keyed.
func (w *migrationWorld) requireMigrated(t *testing.T, org string, done bool) {
	t.Helper()
	users := []storage.User{w.gamma}
	if org == "acme" {
		users = nil
		for _, n := range staleNames {
			users = append(users, w.users[n.username])
		}
	}
	for _, u := range users {
		want, gone := rekeyed(u), u.FoldedUsername
		if !done {
			want, gone = u, want.FoldedUsername
		}
		got, err := w.s.GetUser(t.Context(), org, want.FoldedUsername)
		require.NoError(t, err, "%s %s under %q", org, u.Username, want.FoldedUsername)
		assert.Equal(t, want, got)
		_, err = w.s.GetUser(t.Context(), org, gone)
		require.ErrorIs(t, err, storage.ErrNotFound, "%s %s under %q", org, u.Username, gone)
	}
}

// After Migrate every stale user is found, listed, reported active,
// authenticated and deleted under its new key, and never under its old
// one; its new key is taken; other users and orgs are untouched; nothing
// the Store holds, nor its cache of token locations, names an old key.
func TestMigrateRekeysStaleUsers(t *testing.T) {
	inEachWorld(t, func(t *testing.T, w *migrationWorld) {
		ctx := t.Context()
		s := w.s
		// The earlier version authenticated the tokens: this process
		// remembers where their records are, under the old keys.
		for _, n := range staleNames {
			for _, tok := range w.tokens[n.username] {
				a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: n.old, Tokens: true, LiveAt: w.t0})
				require.NoError(t, err)
				require.Equal(t, n.old, a.Credential.User.FoldedUsername)
			}
		}
		beta := w.contents(t, "beta")

		require.NoError(t, s.Migrate(ctx))

		w.requireMigrated(t, "acme", true)
		w.requireMigrated(t, "gamma", true)
		for _, name := range []string{"Ann", "Bob", "Robot", "Ángel"} {
			got, err := s.GetUser(ctx, "acme", w.users[name].FoldedUsername)
			require.NoError(t, err)
			assert.Equal(t, w.users[name], got, "untouched")
		}
		assert.Equal(t, beta, w.contents(t, "beta"), "an org without stale users is untouched")
		for _, c := range w.contents(t, "") {
			for _, n := range staleNames {
				assert.NotContains(t, c, n.old, "an old key survives")
			}
		}

		// Nothing remembered names an old key.
		for _, n := range staleNames {
			for _, tok := range w.tokens[n.username] {
				if loc, ok := s.locs.Get(tok.Digest); ok {
					assert.Equal(t, n.new, loc.folded, "a remembered location names the old key")
				}
			}
		}
		// The tokens authenticate, twice (the second time from the
		// location remembered), as the user with its new key, alone
		// and with the user itself or another as the target.
		ann := w.users["Ann"]
		for _, n := range staleNames {
			u := rekeyed(w.users[n.username])
			for _, tok := range w.tokens[n.username] {
				for range 2 {
					a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, LiveAt: w.t0})
					require.NoError(t, err, n.username)
					assert.Equal(t, u, a.Credential.User)
					assert.Equal(t, tok.ID, a.Credential.Token.ID)

					a, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: n.new, Tokens: true, LiveAt: w.t0})
					require.NoError(t, err, n.username)
					require.True(t, a.TargetFound)
					assert.Equal(t, u, a.Target)
					assert.ElementsMatch(t, tokenIDs(w.tokens[n.username]), tokenIDs(a.Tokens))

					a, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: "ann", LiveAt: w.t0})
					require.NoError(t, err, n.username)
					assert.Equal(t, ann, a.Target)
				}
			}
			// Another user's token, with this user as the target.
			a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: w.tokens["Ann"][0].Digest, Username: n.new, Tokens: true, LiveAt: w.t0})
			require.NoError(t, err)
			require.True(t, a.TargetFound, n.username)
			assert.Equal(t, u, a.Target)
			assert.ElementsMatch(t, tokenIDs(w.tokens[n.username]), tokenIDs(a.Tokens))
			a, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: w.tokens["Ann"][0].Digest, Username: n.old, LiveAt: w.t0})
			require.NoError(t, err)
			assert.False(t, a.TargetFound, "found under the old key")
			toks, err := s.ListTokens(ctx, "acme", u.ID, w.t0)
			require.NoError(t, err)
			assert.ElementsMatch(t, tokenIDs(w.tokens[n.username]), tokenIDs(toks))
		}
		_, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: w.revoked.Digest, LiveAt: w.t0})
		require.ErrorIs(t, err, storage.ErrRevoked, "a revoked token stays revoked")

		requireListsByNewKeys(t, s)

		act, err := s.ListActivity(ctx, "acme")
		require.NoError(t, err)
		var active []string
		for _, a := range act {
			active = append(active, a.User.FoldedUsername)
			require.Len(t, a.Ducklings, 1, a.User.Username)
			assert.Equal(t, a.User.ID, a.Ducklings[0].UserID)
		}
		assert.Equal(t, []string{"robot", "ángel", "μαρία"}, active, "active accounts by their new keys")

		// The new key is taken.
		for _, n := range staleNames {
			other := storage.User{ID: uuid.NewString(), Org: "acme", Username: n.username, FoldedUsername: n.new, Role: "Member", CreatedAt: w.t0}
			require.ErrorIs(t, s.CreateUser(ctx, other, storage.UserLimit{}, nil), storage.ErrAlreadyExists, n.username)
		}

		// María's tokens are deleted, and she is, with all she holds.
		maria := rekeyed(w.users["Μαρία"])
		gone := w.tokens["Μαρία"][0]
		require.NoError(t, s.DeleteToken(ctx, "acme", maria.ID, gone.ID, storage.Revocation{At: w.t0, KeepUntil: w.t0.Add(time.Hour)}, nil))
		_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: gone.Digest, LiveAt: w.t0})
		require.ErrorIs(t, err, storage.ErrRevoked)
		toks, err := s.ListTokens(ctx, "acme", maria.ID, w.t0)
		require.NoError(t, err)
		assert.Equal(t, []string{w.tokens["Μαρία"][1].ID}, tokenIDs(toks))

		got, err := s.DeleteUser(ctx, "acme", maria.ID, nil)
		require.NoError(t, err)
		assert.Equal(t, maria, got)
		_, err = s.GetUser(ctx, "acme", "μαρία")
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: w.tokens["Μαρία"][1].Digest, LiveAt: w.t0})
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = s.EmbedSessionByDigest(ctx, w.session.Digest)
		require.ErrorIs(t, err, storage.ErrNotFound)
		for _, c := range w.contents(t, "") {
			if strings.Contains(c, maria.ID) {
				assert.Contains(t, c, `"\x00rev\n`, "only the tombstones of her revoked tokens name her")
			}
		}
		for _, c := range w.contents(t, "acme") {
			assert.NotContains(t, c, "μαρία", "her key survives in acme")
		}
		page, err := s.ListUsers(ctx, "acme", storage.UserQuery{Limit: 10})
		require.NoError(t, err)
		assert.Equal(t, 6, page.Total)
	})
}

func tokenIDs(ts []storage.Token) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// requireListsByNewKeys asserts that acme's users are listed in the order
// of their new keys, where "μαρία" (CE BC) sorts after "ángel" (C3 A1),
// as the old "µαρία" (C2 B5) did not: all, service accounts and humans,
// by offset and by keyset pages of two, with their counts.
func requireListsByNewKeys(t *testing.T, s *Store) {
	t.Helper()
	sa, hu := true, false
	for _, c := range []struct {
		name string
		kind *bool
		want []string
	}{
		{"all", nil, []string{"ann", "bob", "robot", "ángel", "μαρία", "σοφόσ", "Ꭰli"}},
		{"service accounts", &sa, []string{"robot", "σοφόσ"}},
		{"humans", &hu, []string{"ann", "bob", "ángel", "μαρία", "Ꭰli"}},
	} {
		var byOffset, byKeyset []string
		after := ""
		for offset := 0; offset < len(c.want)+2; offset += 2 {
			page, err := s.ListUsers(t.Context(), "acme", storage.UserQuery{ServiceAccount: c.kind, Offset: offset, Limit: 2})
			require.NoError(t, err)
			assert.Equal(t, len(c.want), page.Total, c.name)
			assert.Equal(t, offset+2 < len(c.want), page.More, "%s: offset %d", c.name, offset)
			for _, u := range page.Users {
				byOffset = append(byOffset, u.FoldedUsername)
			}

			page, err = s.ListUsers(t.Context(), "acme", storage.UserQuery{ServiceAccount: c.kind, After: after, Limit: 2})
			require.NoError(t, err)
			assert.Equal(t, len(c.want), page.Total, c.name)
			for _, u := range page.Users {
				byKeyset = append(byKeyset, u.FoldedUsername)
				after = u.FoldedUsername
			}
		}
		assert.Equal(t, c.want, byOffset, "%s, by offset", c.name)
		assert.Equal(t, c.want, byKeyset, "%s, by keyset", c.name)
	}
}

// A migrated store costs Migrate one GET; without the marker (a run
// stopped before it), a run finds nothing stale, runs no script and
// changes nothing but the marker.
func TestMigrateAgainChangesNothing(t *testing.T) {
	inEachWorld(t, func(t *testing.T, w *migrationWorld) {
		ctx := t.Context()
		counter := &sent{}
		w.s.c.AddHook(counter)
		require.NoError(t, w.s.Migrate(ctx))
		t.Logf("first run, 2 orgs of 3 with stale users: %d round trips, %v", counter.trips.Load(), counter.take())
		w.requireMigrated(t, "acme", true)
		w.requireMigrated(t, "gamma", true)
		after := w.contents(t, "")

		counter.trips.Store(0)
		counter.take()
		require.NoError(t, w.s.Migrate(ctx))
		assert.EqualValues(t, 1, counter.trips.Load(), "a migrated store costs one round trip")
		assert.Equal(t, []string{"get"}, counter.take())
		assert.Equal(t, after, w.contents(t, ""))

		require.NoError(t, w.s.c.Del(ctx, w.s.prefix+migratedKey).Err())
		counter.take()
		require.NoError(t, w.s.Migrate(ctx))
		assert.NotContains(t, counter.take(), "evalsha", "no script runs where nothing is stale")
		assert.Equal(t, after, w.contents(t, ""))
	})
}

// A run stopped after any org (an error, or its context canceled) leaves
// each org re-keyed whole or not at all, and no marker; the next run
// completes it.
func TestMigrateStoppedPartWayIsCompletedByTheNextRun(t *testing.T) {
	for _, tc := range mirrorCases {
		for _, stop := range []struct {
			name   string
			after  int // orgs done
			cancel bool
		}{
			{"error after 1 org", 1, false},
			{"error after 2 orgs", 2, false},
			{"error after every org", 3, false},
			{"canceled after 1 org", 1, true},
			{"canceled after 2 orgs", 2, true},
		} {
			t.Run(tc.name+"/"+stop.name, func(t *testing.T) {
				w := newMigrationWorld(t, tc)
				s := w.s
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				var done []string
				s.step = func(name string) error {
					if name != "migrate: org done" {
						return nil
					}
					done = append(done, name)
					if len(done) < stop.after {
						return nil
					}
					if stop.cancel {
						cancel()
						return ctx.Err()
					}
					return errStop
				}
				err := s.Migrate(ctx)
				if stop.cancel {
					require.ErrorIs(t, err, context.Canceled)
				} else {
					require.ErrorIs(t, err, errStop)
				}
				s.step = nil
				assertNoKey(t, s, s.prefix+migratedKey, "marked before every org is done")
				for _, org := range []string{"acme", "gamma"} {
					_, err := s.GetUser(t.Context(), org, "μαρία")
					w.requireMigrated(t, org, err == nil)
				}

				require.NoError(t, s.Migrate(t.Context()))
				w.requireMigrated(t, "acme", true)
				w.requireMigrated(t, "gamma", true)
				requireListsByNewKeys(t, s)
				n, err := s.c.Exists(t.Context(), s.prefix+migratedKey).Result()
				require.NoError(t, err)
				assert.EqualValues(t, 1, n, "marked")
			})
		}
	}
}

// A user whose new key another user holds (a process that served before
// the migration created it) is not moved: Migrate fails naming the org
// and the key, writes no marker, and leaves the org as it was, its
// other stale users too.
func TestMigrateConflictNamesOrgAndKey(t *testing.T) {
	inEachWorld(t, func(t *testing.T, w *migrationWorld) {
		ctx := t.Context()
		s := w.s
		other := storage.User{ID: uuid.NewString(), Org: "acme", Username: "μαρία", FoldedUsername: "μαρία", Role: "Member", CreatedAt: w.t0}
		require.NoError(t, s.CreateUser(ctx, other, storage.UserLimit{}, nil))
		acme := w.contents(t, "acme")

		err := s.Migrate(ctx)
		require.ErrorIs(t, err, storage.ErrAlreadyExists)
		assert.Contains(t, err.Error(), `org "acme"`)
		assert.Contains(t, err.Error(), "\"\u00B5αρία\"")
		assert.Equal(t, acme, w.contents(t, "acme"), "the org is left as it was")
		assertNoKey(t, s, s.prefix+migratedKey)

		got, err := s.GetUser(ctx, "acme", "μαρία")
		require.NoError(t, err)
		assert.Equal(t, other, got)
		got, err = s.GetUser(ctx, "acme", "ςοφός")
		require.NoError(t, err)
		assert.Equal(t, w.users["Σοφός"], got, "not moved either")
	})
}

// An org in the layout of an earlier version still (ix:all and no recs,
// no name:<key>) is re-keyed there too: ix:all holds the new keys, and
// the first listing builds recs in their order.
func TestMigrateEarlierLayout(t *testing.T) {
	inEachWorld(t, func(t *testing.T, w *migrationWorld) {
		ctx := t.Context()
		s := w.s
		base := s.orgBase("acme")
		require.NoError(t, s.c.Del(ctx, base+"recs").Err())
		var all []string
		for _, u := range w.users {
			require.NoError(t, s.c.Del(ctx, base+"name:"+u.FoldedUsername).Err())
			require.NoError(t, s.c.ZAdd(ctx, base+"ix:all", redis.Z{Member: u.FoldedUsername}).Err())
			all = append(all, casefold.Fold(u.FoldedUsername))
		}
		require.NoError(t, s.Migrate(ctx))
		ix, err := s.c.ZRange(ctx, base+"ix:all", 0, -1).Result()
		require.NoError(t, err)
		assert.ElementsMatch(t, all, ix)
		w.requireMigrated(t, "acme", true)
		requireListsByNewKeys(t, s)
		for _, n := range staleNames {
			for _, tok := range w.tokens[n.username] {
				a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, LiveAt: w.t0})
				require.NoError(t, err)
				assert.Equal(t, n.new, a.Credential.User.FoldedUsername)
			}
		}
	})
}

// Several processes may migrate at once: each run completes, and the
// store ends re-keyed once. A script whose keys were read before another
// process moved them (the run that lost the race) skips those users and
// changes nothing.
func TestMigrateFromSeveralProcesses(t *testing.T) {
	inEachWorld(t, func(t *testing.T, w *migrationWorld) {
		ctx := t.Context()
		stores := []*Store{w.s}
		for range 3 {
			s, err := New(w.s.c, Options{Prefix: w.s.prefix})
			require.NoError(t, err)
			s.single = w.s.single
			stores = append(stores, s)
		}
		errs := make(chan error, len(stores))
		for _, s := range stores {
			go func() { errs <- s.Migrate(ctx) }()
		}
		for range stores {
			require.NoError(t, <-errs)
		}
		w.requireMigrated(t, "acme", true)
		w.requireMigrated(t, "gamma", true)
		requireListsByNewKeys(t, w.s)
		after := w.contents(t, "")

		args := []any{single(w.s.single), w.s.prefix, "acme"}
		for _, n := range staleNames {
			args = append(args, n.old, n.new)
		}
		v, err := w.s.run(ctx, migrateOrgScript, "acme", args...).Slice()
		require.NoError(t, err)
		assert.EqualValues(t, 0, v[0], "users moved again")
		assert.Len(t, v[1], 4, "the digests of the moved users' tokens, to forget")
		assert.Equal(t, after, w.contents(t, ""))
	})
}

// Between the read of an org's keys and its script, another process may
// delete a stale user, or stop us: the script skips a user no longer
// held, and a run stopped there wrote nothing of that org.
func TestMigrateBetweenReadAndScript(t *testing.T) {
	inEachWorld(t, func(t *testing.T, w *migrationWorld) {
		ctx := t.Context()
		s := w.s
		// acme alone has stale users.
		_, err := s.DeleteUser(ctx, "gamma", w.gamma.ID, nil)
		require.NoError(t, err)
		sofos := w.users["Σοφός"]
		acme := w.contents(t, "acme")
		s.step = func(name string) error {
			if name == "migrate: keys read" {
				return errStop
			}
			return nil
		}
		require.ErrorIs(t, s.Migrate(ctx), errStop)
		assert.Equal(t, acme, w.contents(t, "acme"), "stopped before the script: nothing written")

		deleted := false
		s.step = func(name string) error {
			if name != "migrate: keys read" || deleted {
				return nil
			}
			deleted = true
			_, err := s.DeleteUser(ctx, "acme", sofos.ID, nil)
			return err
		}
		require.NoError(t, s.Migrate(ctx))
		require.True(t, deleted, "the step was reached")
		for _, key := range []string{"ςοφός", "σοφόσ"} {
			_, err := s.GetUser(ctx, "acme", key)
			require.ErrorIs(t, err, storage.ErrNotFound, key)
		}
		for _, name := range []string{"Μαρία", "Ꭰli"} {
			u := rekeyed(w.users[name])
			got, err := s.GetUser(ctx, "acme", u.FoldedUsername)
			require.NoError(t, err)
			assert.Equal(t, u, got)
		}
		for _, c := range w.contents(t, "acme") {
			assert.NotContains(t, c, sofos.ID, "the deleted user left something")
		}
	})
}
