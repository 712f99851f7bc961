package mongostore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/internal/casefold"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// earlierWorld is what an earlier version, which keyed usernames by the
// earlier fold, left in a database: written through the store's own calls
// with FoldedUsername set to the earlier key, as the earlier Service
// passed it, and no mark of the re-keying.
//
// In org: maria ("Μαρία", keyed "µαρία" with the micro sign), sofos
// ("Σοφός", keyed "ςοφός" with final sigmas), cherokee ("Ꭰli", keyed
// "ꭰli" in lower-case Cherokee), and angel ("Ángel") and bob, keyed as
// they are now; maria and angel are service accounts. In other:
// otherMaria ("Μαρία" again, keyed "µαρία") and carl. maria has two
// tokens and an embed session, sofos and otherMaria a token each; maria,
// angel and cherokee have Duckling reports. And the delete of sisyphus
// ("Σίσυφος", keyed "ςίςυφος", its id in upper case) stopped after its
// tombstone, leaving its name pointer.
type earlierWorld struct {
	db                                 *mongo.Database
	s                                  *Store // the earlier version's store
	org, other                         storage.Org
	maria, sofos, cherokee, angel, bob storage.User
	otherMaria, carl, sisyphus         storage.User
	tokens                             map[string][]storage.Token // by user id
	session                            storage.EmbedSession
	before                             map[string]map[string]bson.M // collection: _id: document
}

// The keys of the world's users as the earlier fold made them and now.
const (
	mariaOld, mariaNew       = "\u00B5αρία", "μαρία"
	sofosOld, sofosNew       = "ςοφός", "σοφόσ"
	cherokeeOld, cherokeeNew = "\uAB70li", "\u13A0li"
	sisyphusOld              = "ςίςυφος"
)

// stale returns the users of w keyed by the earlier fold, live.
func (w *earlierWorld) stale() []storage.User {
	return []storage.User{w.maria, w.sofos, w.cherokee, w.otherMaria}
}

// newKey is the key of u now.
func newKey(u storage.User) string { return casefold.Fold(u.FoldedUsername) }

// newEarlierWorld writes an earlierWorld on db, with name pointers where
// New keeps them (FerretDB v1), or never when noPointers is set (as on
// MongoDB).
func newEarlierWorld(t *testing.T, db *mongo.Database, noPointers bool) *earlierWorld {
	t.Helper()
	ctx := t.Context()
	s := storeOn(t, db)
	if noPointers {
		s.byPointer = false
	}
	w := &earlierWorld{db: db, s: s, tokens: make(map[string][]storage.Token)}
	w.org = storage.Org{ID: "a-" + uuid.NewString(), CreatedAt: t0}
	w.other = storage.Org{ID: "b-" + uuid.NewString(), CreatedAt: t0}
	for _, o := range []storage.Org{w.org, w.other} {
		require.NoError(t, s.CreateOrg(ctx, o, nil))
	}
	// Ids in the order of creation: the re-keying goes by org and id, and
	// so takes its steps in the same order every time.
	users := 0
	user := func(org, name, key string, sa bool) storage.User {
		users++
		u := crashUser(org, name)
		u.ID = fmt.Sprintf("%02d-%s", users, u.ID)
		u.FoldedUsername, u.IsServiceAccount = key, sa
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil), name)
		return u
	}
	w.maria = user(w.org.ID, "Μαρία", mariaOld, true)
	w.sofos = user(w.org.ID, "Σοφός", sofosOld, false)
	w.cherokee = user(w.org.ID, "Ꭰli", cherokeeOld, false)
	w.angel = user(w.org.ID, "Ángel", "ángel", true)
	w.bob = user(w.org.ID, "bob", "bob", false)
	w.otherMaria = user(w.other.ID, "Μαρία", mariaOld, false)
	w.carl = user(w.other.ID, "Carl", "carl", false)
	for old, now := range map[string]string{mariaOld: mariaNew, sofosOld: sofosNew, cherokeeOld: cherokeeNew} {
		require.True(t, casefold.Stale(old))
		require.Equal(t, now, casefold.Fold(old))
	}

	for u, n := range map[*storage.User]int{&w.maria: 2, &w.sofos: 1, &w.otherMaria: 1} {
		for range n {
			tok := crashToken(*u, time.Time{})
			require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
			w.tokens[u.ID] = append(w.tokens[u.ID], tok)
		}
	}
	w.session = crashSession(w.maria)
	require.NoError(t, s.CreateEmbedSession(ctx, w.session, storage.SessionLimit{}, nil))
	for _, d := range []storage.Duckling{
		{Org: w.org.ID, UserID: w.maria.ID, ID: "rw", Active: true, At: t0},
		{Org: w.org.ID, UserID: w.maria.ID, ID: "rs.0", At: t0},
		{Org: w.org.ID, UserID: w.angel.ID, ID: "rw", Active: true, At: t0},
		{Org: w.org.ID, UserID: w.cherokee.ID, ID: "rw", At: t0},
	} {
		require.NoError(t, s.SetDuckling(ctx, d))
	}

	// A delete that stopped after its tombstone: its fkey is its document
	// id, which is not what Fold makes of it (the id is in upper case).
	w.sisyphus = crashUser(w.org.ID, "Σίσυφος")
	w.sisyphus.ID, w.sisyphus.FoldedUsername = "SISYPHUS-"+uuid.NewString(), sisyphusOld // the last of org
	require.NoError(t, s.CreateUser(ctx, w.sisyphus, storage.UserLimit{}, nil))
	require.True(t, casefold.Stale(key(w.org.ID, w.sisyphus.ID)))
	crashAfter(s, stepTombstone)
	_, err := s.DeleteUser(ctx, w.org.ID, w.sisyphus.ID, nil)
	require.ErrorIs(t, err, errCrash)
	s.afterStep = nil

	_, err = db.Collection(migrationsColl).DeleteOne(ctx, bson.D{{Key: "_id", Value: refoldMark}})
	require.NoError(t, err)
	w.before = snapshot(t, db)
	return w
}

// snapshot returns every document of the collections of users and their
// records, by collection and id.
func snapshot(t *testing.T, db *mongo.Database) map[string]map[string]bson.M {
	t.Helper()
	out := make(map[string]map[string]bson.M)
	for _, c := range []string{usersColl, tokensColl, sessionsColl, ducklingsColl, namesColl, revokedColl, migrationsColl} {
		cur, err := db.Collection(c).Find(t.Context(), bson.D{})
		require.NoError(t, err)
		var docs []bson.M
		require.NoError(t, cur.All(t.Context(), &docs))
		out[c] = make(map[string]bson.M, len(docs))
		for _, d := range docs {
			out[c][fmt.Sprint(d["_id"])] = d
		}
	}
	return out
}

// folded returns the FoldedUsername of each user.
func folded(users []storage.User) []string {
	out := []string{}
	for _, u := range users {
		out = append(out, u.FoldedUsername)
	}
	return out
}

// requireRekeyed checks, reading only, that s is the store of w once its
// users are re-keyed: each stale user found under its new key and not its
// old one, listings ordered and counted by the new keys, tokens and
// activity unchanged, nothing else of the database changed (no pointer
// left under a stale key), and the mark written.
func requireRekeyed(t *testing.T, s *Store, w *earlierWorld) {
	t.Helper()
	ctx := t.Context()
	for _, u := range w.stale() {
		got, err := s.GetUser(ctx, u.Org, newKey(u))
		require.NoError(t, err, u.Username)
		assert.Equal(t, u.ID, got.ID)
		assert.Equal(t, newKey(u), got.FoldedUsername)
		assert.Equal(t, u.Username, got.Username)
		_, err = s.GetUser(ctx, u.Org, u.FoldedUsername)
		require.ErrorIs(t, err, storage.ErrNotFound, "%s under its old key", u.Username)
		got.FoldedUsername = u.FoldedUsername
		assert.Equal(t, u, got)
	}
	for _, u := range []storage.User{w.angel, w.bob, w.carl} {
		requireNamed(t, s, u)
	}
	_, err := s.GetUser(ctx, w.org.ID, casefold.Fold(sisyphusOld))
	require.ErrorIs(t, err, storage.ErrNotFound, "the user being deleted")

	// Listings, in the order of the new keys: "µαρία" (C2 B5) sorted
	// before "ángel" (C3 A1), "μαρία" (CE BC) after it.
	list := func(org string, q storage.UserQuery) ([]string, int, bool) {
		t.Helper()
		page, err := s.ListUsers(ctx, org, q)
		require.NoError(t, err)
		return folded(page.Users), page.Total, page.More
	}
	sa, human := true, false
	for _, c := range []struct {
		org   string
		q     storage.UserQuery
		want  []string
		total int
		more  bool
	}{
		{w.org.ID, storage.UserQuery{Limit: 10}, []string{"bob", "ángel", mariaNew, sofosNew, cherokeeNew}, 5, false},
		{w.org.ID, storage.UserQuery{Limit: 2}, []string{"bob", "ángel"}, 5, true},
		{w.org.ID, storage.UserQuery{Limit: 2, Offset: 2}, []string{mariaNew, sofosNew}, 5, true},
		{w.org.ID, storage.UserQuery{Limit: 2, Offset: 4}, []string{cherokeeNew}, 5, false},
		{w.org.ID, storage.UserQuery{Limit: 2, After: "bob"}, []string{"ángel", mariaNew}, 5, true},
		{w.org.ID, storage.UserQuery{Limit: 2, After: "ángel"}, []string{mariaNew, sofosNew}, 5, true},
		{w.org.ID, storage.UserQuery{Limit: 2, After: sofosNew}, []string{cherokeeNew}, 5, false},
		{w.org.ID, storage.UserQuery{Limit: 10, ServiceAccount: &sa}, []string{"ángel", mariaNew}, 2, false},
		{w.org.ID, storage.UserQuery{Limit: 1, ServiceAccount: &sa, After: "ángel"}, []string{mariaNew}, 2, false},
		{w.org.ID, storage.UserQuery{Limit: 1, ServiceAccount: &sa, Offset: 1}, []string{mariaNew}, 2, false},
		{w.org.ID, storage.UserQuery{Limit: 10, ServiceAccount: &human}, []string{"bob", sofosNew, cherokeeNew}, 3, false},
		{w.org.ID, storage.UserQuery{Limit: 1, ServiceAccount: &human, After: "bob"}, []string{sofosNew}, 3, true},
		{w.other.ID, storage.UserQuery{Limit: 10}, []string{"carl", mariaNew}, 2, false},
	} {
		got, total, more := list(c.org, c.q)
		assert.Equal(t, c.want, got, "%+v", c.q)
		assert.Equal(t, c.total, total, "total of %+v", c.q)
		assert.Equal(t, c.more, more, "more of %+v", c.q)
	}

	// Activity, in the order of the new keys, with its reports.
	acts, err := s.ListActivity(ctx, w.org.ID)
	require.NoError(t, err)
	var who []string
	for _, a := range acts {
		who = append(who, a.User.FoldedUsername)
		want := map[string]int{w.maria.ID: 2, w.angel.ID: 1, w.cherokee.ID: 1}[a.User.ID]
		assert.Len(t, a.Ducklings, want, "reports of %s", a.User.Username)
	}
	assert.Equal(t, []string{"ángel", mariaNew, cherokeeNew}, who)

	// The tokens authenticate, with the user under its new key, and the
	// user is their target by that key (not by the old one).
	for _, u := range w.stale() {
		for _, tok := range w.tokens[u.ID] {
			a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: newKey(u), Tokens: true, LiveAt: t0})
			require.NoError(t, err)
			assert.Equal(t, u.ID, a.Credential.User.ID)
			assert.Equal(t, newKey(u), a.Credential.User.FoldedUsername)
			require.True(t, a.TargetFound)
			assert.Equal(t, u.ID, a.Target.ID)
			assert.Len(t, a.Tokens, len(w.tokens[u.ID]))
			a, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: u.FoldedUsername})
			require.NoError(t, err)
			assert.False(t, a.TargetFound, "the target under its old key")
		}
	}
	es, err := s.EmbedSessionByDigest(ctx, w.session.Digest)
	require.NoError(t, err)
	assert.Equal(t, w.maria.ID, es.UserID)
	target, err := s.GetEmbedTarget(ctx, w.org.ID, "no-dive", mariaNew)
	require.NoError(t, err)
	require.True(t, target.UserFound)
	assert.Equal(t, w.maria.ID, target.User.ID)

	// Nothing else changed: the users' documents but for the keys of the
	// stale ones, and the records of users.
	now := snapshot(t, w.db)
	for id, doc := range w.before[usersColl] {
		if k, _ := doc["fkey"].(string); doc["org"] != nil && casefold.Stale(k) {
			doc = maps.Clone(doc)
			doc["fkey"] = casefold.Fold(k)
		}
		assert.Equal(t, doc, now[usersColl][id], "user %s", id)
	}
	assert.Len(t, now[usersColl], len(w.before[usersColl]))
	for _, c := range []string{tokensColl, sessionsColl, ducklingsColl, revokedColl} {
		assert.Equal(t, w.before[c], now[c], c)
	}
	// The pointers: none under a stale key, the others as they were.
	for id, doc := range now[namesColl] {
		parts, ok := splitKey(id)
		require.True(t, ok, id)
		assert.False(t, casefold.Stale(parts[1]), "a pointer under the stale key %q", parts[1])
		if _, ok := w.before[namesColl][id]; ok {
			assert.Equal(t, w.before[namesColl][id], doc)
		}
	}
	if s.byPointer {
		for _, u := range w.stale() {
			u.FoldedUsername = newKey(u)
			requireNamed(t, s, u)
		}
	}
	assert.Contains(t, now[migrationsColl], refoldMark)
}

// requireUsable checks that the users of w re-keyed can be used as any
// other: their new keys are taken, their tokens listed and deleted, and
// their deletion leaves nothing of them; and that Cleanup finishes the
// delete an earlier version left.
func requireUsable(t *testing.T, s *Store, w *earlierWorld) {
	t.Helper()
	ctx := t.Context()
	for _, u := range w.stale() {
		dup := crashUser(u.Org, strings.ToUpper(u.Username))
		dup.FoldedUsername = newKey(u)
		require.ErrorIs(t, s.CreateUser(ctx, dup, storage.UserLimit{}, nil), storage.ErrAlreadyExists, u.Username)
		require.ErrorIs(t, s.CreateUser(ctx, dup, storage.UserLimit{Max: 100}, nil), storage.ErrAlreadyExists, u.Username)
	}
	toks, err := s.ListTokens(ctx, w.org.ID, w.maria.ID, t0)
	require.NoError(t, err)
	require.Len(t, toks, 2)
	gone := w.tokens[w.maria.ID][0]
	require.NoError(t, s.DeleteToken(ctx, w.org.ID, w.maria.ID, gone.ID, storage.Revocation{At: t0, KeepUntil: t0.Add(time.Hour)}, nil))
	_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: gone.Digest, LiveAt: t0})
	require.ErrorIs(t, err, storage.ErrRevoked)
	toks, err = s.ListTokens(ctx, w.org.ID, w.maria.ID, t0)
	require.NoError(t, err)
	assert.Len(t, toks, 1)

	for _, u := range w.stale() {
		deleted, err := s.DeleteUser(ctx, u.Org, u.ID, nil)
		require.NoError(t, err)
		assert.Equal(t, newKey(u), deleted.FoldedUsername)
		_, err = s.GetUser(ctx, u.Org, newKey(u))
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
	_, err = s.Cleanup(ctx, t0)
	require.NoError(t, err)
	for _, u := range append(w.stale(), w.sisyphus) {
		for _, c := range []*mongo.Collection{s.users, s.tokens, s.sessions, s.ducklings, s.names} {
			n, err := c.CountDocuments(ctx, bson.D{{Key: "uid", Value: u.ID}})
			require.NoError(t, err)
			assert.Zero(t, n, "documents of the deleted %s in %s", u.Username, c.Name())
		}
	}
	// The names are free again, under their new keys.
	for _, u := range w.stale() {
		fresh := crashUser(u.Org, u.Username)
		fresh.FoldedUsername = newKey(u)
		require.NoError(t, s.CreateUser(ctx, fresh, storage.UserLimit{}, nil))
		requireNamed(t, s, fresh)
	}
}

// New re-keys the users an earlier version stored under the earlier fold
// (with name pointers, as on FerretDB v1): found by the new key alone,
// listed in its order, with their tokens, reports and sessions; the
// other users and orgs untouched. Another New changes nothing.
func TestNewRekeysUsersOfTheEarlierFold(t *testing.T) {
	db := newDB(t, client(t))
	w := newEarlierWorld(t, db, false)
	s, err := New(t.Context(), db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	requireRekeyed(t, s, w)

	again := snapshot(t, db)
	s2, err := New(t.Context(), db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	assert.Equal(t, again, snapshot(t, db), "a second New")
	requireUsable(t, s2, w)
}

// Without name pointers (as on MongoDB, where New keeps none) the
// re-keying is the update of each user's key, and the same holds.
func TestRefoldWithoutNamePointers(t *testing.T) {
	db := newDB(t, client(t))
	w := newEarlierWorld(t, db, true)
	require.NoError(t, w.s.refold(t.Context()))
	requireRekeyed(t, w.s, w)
	require.NoError(t, w.s.refold(t.Context()))
	requireUsable(t, w.s, w)
}

// refoldSteps is how many steps refold takes on an earlierWorld: three for
// each of its four stale users, and the removal of the pointer of the
// user being deleted; without name pointers, one for each user. With
// pointers they are: maria's user, name and old name (1 to 3), sofos's (4
// to 6), cherokee's (7 to 9), the removal of sisyphus's pointer (10), and,
// in the other org, otherMaria's (11 to 13).
func refoldSteps(pointers bool) int {
	if pointers {
		return 4*3 + 1
	}
	return 4
}

// A re-keying stopped after any of its steps (between two writes of one
// user, between users, between orgs), by an error or by the caller's
// context, leaves each user found under one key, its old or its new one,
// with its tokens, and no mark; the next New finishes it. Each case is
// checked with readers between the two runs (which repair the pointers
// they find missing) and without.
func TestRefoldCrashPoints(t *testing.T) {
	for stop := 1; stop <= refoldSteps(true); stop++ {
		for _, how := range []string{"error", "error_read", "cancel"} {
			if how == "cancel" && !slices.Contains([]int{1, 5, 10, 12}, stop) {
				continue
			}
			t.Run(fmt.Sprintf("%s_after_%d", how, stop), func(t *testing.T) {
				t.Parallel()
				testRefoldCrash(t, stop, how)
			})
		}
	}
}

func testRefoldCrash(t *testing.T, stop int, how string) {
	db := newDB(t, client(t))
	w := newEarlierWorld(t, db, false)
	if stop > refoldSteps(w.s.byPointer) {
		t.Skip("no such step without name pointers")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var steps []string
	w.s.afterStep = func(step string) error {
		steps = append(steps, step)
		if len(steps) < stop {
			return nil
		}
		if how == "cancel" {
			cancel()
			return nil
		}
		return errCrash
	}
	err := w.s.refold(ctx)
	w.s.afterStep = nil
	if how == "cancel" {
		require.ErrorIs(t, err, context.Canceled)
	} else {
		require.ErrorIs(t, err, errCrash)
	}
	user := []string{stepRefoldUser, stepRefoldName, stepRefoldOldName}
	want := slices.Concat(user, user, user, []string{stepRefoldOldName}, user)
	if !w.s.byPointer {
		want = []string{stepRefoldUser, stepRefoldUser, stepRefoldUser, stepRefoldUser}
	}
	require.Equal(t, want[:stop], steps)
	n, err := db.Collection(migrationsColl).CountDocuments(t.Context(), bson.D{})
	require.NoError(t, err)
	assert.Zero(t, n, "the mark of an unfinished re-keying")

	if how == "error_read" {
		s := w.s
		// What a reader sees meanwhile: each user under one key.
		for _, u := range w.stale() {
			byNew, errNew := s.GetUser(t.Context(), u.Org, newKey(u))
			byOld, errOld := s.GetUser(t.Context(), u.Org, u.FoldedUsername)
			require.True(t, (errNew == nil) != (errOld == nil), "%s: found by its new key: %v, by its old key: %v", u.Username, errNew, errOld)
			if errNew == nil {
				assert.Equal(t, u.ID, byNew.ID)
				assert.Equal(t, newKey(u), byNew.FoldedUsername)
			} else {
				require.ErrorIs(t, errNew, storage.ErrNotFound)
				assert.Equal(t, u.ID, byOld.ID)
				assert.Equal(t, u.FoldedUsername, byOld.FoldedUsername)
			}
			for _, tok := range w.tokens[u.ID] {
				a, err := s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest})
				require.NoError(t, err)
				assert.Equal(t, u.ID, a.Credential.User.ID)
			}
		}
		for org, n := range map[string]int{w.org.ID: 5, w.other.ID: 2} {
			page, err := s.ListUsers(t.Context(), org, storage.UserQuery{Limit: 10})
			require.NoError(t, err)
			assert.Equal(t, n, page.Total)
			assert.Len(t, page.Users, n)
		}
	}

	s, err := New(t.Context(), db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	requireRekeyed(t, s, w)
}

// A change that read a user before its re-keying can write it back under
// its old key (on FerretDB v1 an update is a read and then a write of the
// whole document): the re-keying reads the users again, re-keys it again,
// and only then writes its mark. A user written back every time (a
// process of the earlier version still running) makes it fail after
// maxRefoldRounds rounds, without the mark.
func TestRefoldUserWrittenBack(t *testing.T) {
	for _, every := range []bool{false, true} {
		t.Run(fmt.Sprintf("every_time=%t", every), func(t *testing.T) {
			db := newDB(t, client(t))
			w := newEarlierWorld(t, db, false)
			ctx := t.Context()
			var old bson.M
			require.NoError(t, w.s.users.FindOne(ctx, bson.D{{Key: "_id", Value: key(w.org.ID, w.maria.ID)}}).Decode(&old))
			writes := 0
			w.s.afterStep = func(step string) error {
				if step != stepRefoldUser || (writes > 0 && !every) {
					return nil
				}
				var d userDoc
				err := w.s.users.FindOne(ctx, bson.D{{Key: "_id", Value: key(w.org.ID, w.maria.ID)}}).Decode(&d)
				if err != nil || d.FKey != mariaNew {
					return err // another user's step
				}
				writes++
				return writeBack(ctx, w.s, w.maria, old)
			}
			err := w.s.refold(ctx)
			w.s.afterStep = nil
			if every {
				require.ErrorContains(t, err, "still stored under the earlier fold")
				assert.Equal(t, maxRefoldRounds, writes)
				n, err := db.Collection(migrationsColl).CountDocuments(ctx, bson.D{})
				require.NoError(t, err)
				assert.Zero(t, n, "the mark")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1, writes)
			requireRekeyed(t, w.s, w)
		})
	}
}

// A user whose new key another user holds (one a process of the earlier
// version created while this one ran: under its own key, "μαρία" was a
// name of its own) makes New fail with ErrAlreadyExists, naming the org,
// both users and both keys, and leaves both as they were; the other
// users are re-keyed. Once one of the two is deleted, New finishes.
func TestRefoldConflict(t *testing.T) {
	db := newDB(t, client(t))
	w := newEarlierWorld(t, db, false)
	ctx := t.Context()
	dup := crashUser(w.org.ID, "ΜΑΡΊΑ")
	dup.FoldedUsername = mariaNew
	require.NoError(t, w.s.CreateUser(ctx, dup, storage.UserLimit{}, nil))
	before := snapshot(t, db)

	_, err := New(ctx, db, Options{Timeout: testTimeout})
	require.ErrorIs(t, err, storage.ErrAlreadyExists)
	for _, s := range []string{w.org.ID, w.maria.ID, dup.ID, mariaOld, mariaNew} {
		assert.Contains(t, err.Error(), s)
	}
	t.Log(err)
	after := snapshot(t, db)
	for _, id := range []string{key(w.org.ID, w.maria.ID), key(w.org.ID, dup.ID)} {
		assert.Equal(t, before[usersColl][id], after[usersColl][id])
	}
	for _, id := range []string{key(w.org.ID, mariaOld), key(w.org.ID, mariaNew)} {
		assert.Equal(t, before[namesColl][id], after[namesColl][id])
	}
	assert.Empty(t, after[migrationsColl])
	got, err := w.s.GetUser(ctx, w.org.ID, mariaNew)
	require.NoError(t, err)
	assert.Equal(t, dup.ID, got.ID)
	got, err = w.s.GetUser(ctx, w.org.ID, mariaOld)
	require.NoError(t, err)
	assert.Equal(t, w.maria.ID, got.ID)
	for _, u := range []storage.User{w.sofos, w.cherokee, w.otherMaria} {
		got, err := w.s.GetUser(ctx, u.Org, newKey(u))
		require.NoError(t, err, "%s, re-keyed all the same", u.Username)
		assert.Equal(t, u.ID, got.ID)
	}

	_, err = w.s.DeleteUser(ctx, w.org.ID, dup.ID, nil)
	require.NoError(t, err)
	s, err := New(ctx, db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	requireRekeyed(t, s, w)
}

// Processes started at once on a database of the earlier version each
// run New, and each succeeds: their re-keyings repeat each other's
// writes.
func TestRefoldConcurrently(t *testing.T) {
	db := newDB(t, client(t))
	w := newEarlierWorld(t, db, false)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		c := testdb.Mongo(t) // a process of its own
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = New(t.Context(), c.Database(db.Name()), Options{Timeout: testTimeout})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	requireRekeyed(t, w.s, w)
}

// The round trips of the re-keying: on a database it has done, one read
// by id; with k stale users and name pointers, 3k + 6 (the mark, the
// users and the pointers read twice, three writes for each user, and the
// mark written), here with one more write, the removal of the pointer of
// the user being deleted.
func TestRefoldCommands(t *testing.T) {
	sent := &commands{}
	c, err := mongo.Connect(options.Client().ApplyURI(testURI(t)).SetTimeout(testTimeout).
		SetMonitor(&event.CommandMonitor{Started: sent.started}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	w := newEarlierWorld(t, newDB(t, c), false)
	if !w.s.byPointer {
		t.Skip("counted for a server with name pointers (FerretDB v1)")
	}
	sent.take()

	require.NoError(t, w.s.refold(t.Context()))
	var names []string
	for _, cmd := range sent.take() {
		f := strings.Fields(cmd)
		names = append(names, f[0]+" "+f[1])
	}
	k := len(w.stale())
	count := func(name string) int {
		return len(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n != name }))
	}
	assert.Len(t, names, 3*k+6+1, "%v", names)
	for name, n := range map[string]int{
		"find " + migrationsColl: 1, "find " + usersColl: 2, "find " + namesColl: 2,
		"update " + usersColl: k, "update " + namesColl: k, "delete " + namesColl: k + 1,
		"insert " + migrationsColl: 1,
	} {
		assert.Equal(t, n, count(name), name)
	}

	require.NoError(t, w.s.refold(t.Context()))
	assert.Equal(t, []string{fmt.Sprintf(`find %s {"_id": %q}`, migrationsColl, refoldMark)}, sent.take(), "a database done")
}

// splitKey is the inverse of key.
func TestSplitKey(t *testing.T) {
	for _, parts := range [][]string{{"acme", "µαρία"}, {"", ""}, {"a:b", "12:x"}, {"o"}} {
		got, ok := splitKey(key(parts...))
		require.True(t, ok)
		assert.Equal(t, parts, got)
	}
	for _, k := range []string{"x", "3:ab", "01:a", "-1:", "2:ab3"} {
		_, ok := splitKey(k)
		assert.False(t, ok, k)
	}
}
