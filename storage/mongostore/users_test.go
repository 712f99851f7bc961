package mongostore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/orgadmin/orgadmin/storage"
)

var t0 = time.Date(2026, 6, 19, 12, 34, 56, 789000000, time.UTC)

// errCrash stands for the process dying between two steps of a call.
var errCrash = errors.New("crash")

// A DeleteUser that stops after any of its steps leaves nothing usable:
// the user, its tokens and sessions are not found, its activity is not
// listed, and the username can be created again at once. A later Cleanup
// finishes the delete, leaving no document of the user behind, and
// leaves the new user of the name alone.
func TestDeleteUserCrashPoints(t *testing.T) {
	for _, stop := range []string{stepTombstone, stepTokens, stepSessions, stepDucklings, stepName, stepUser} {
		t.Run("after_"+stop, func(t *testing.T) {
			s := newTestStore(t)
			if stop == stepName && !s.byPointer {
				t.Skip("the server needs no name pointers")
			}
			ctx := t.Context()
			org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
			require.NoError(t, s.CreateOrg(ctx, org, nil))
			alice := crashUser(org.ID, "Alice")
			bob := crashUser(org.ID, "bob")
			require.NoError(t, s.CreateUser(ctx, alice, storage.UserLimit{}, nil))
			require.NoError(t, s.CreateUser(ctx, bob, storage.UserLimit{}, nil))
			aliceTokens := []storage.Token{crashToken(alice, time.Time{}), crashToken(alice, t0.Add(time.Hour))}
			for _, tok := range aliceTokens {
				require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{Max: 10, LiveAt: t0}, nil))
			}
			bobToken := crashToken(bob, time.Time{})
			require.NoError(t, s.CreateToken(ctx, bobToken, storage.TokenLimit{}, nil))
			session := crashSession(alice)
			require.NoError(t, s.CreateEmbedSession(ctx, session, storage.SessionLimit{}, nil))
			for _, id := range []string{"rw", "rs.0"} {
				require.NoError(t, s.SetDuckling(ctx, storage.Duckling{Org: org.ID, UserID: alice.ID, ID: id, Active: true, At: t0}))
			}
			require.NoError(t, s.SetDuckling(ctx, storage.Duckling{Org: org.ID, UserID: bob.ID, ID: "rw", Active: true, At: t0}))

			steps := crashAfter(s, stop)
			_, err := s.DeleteUser(ctx, org.ID, alice.ID, nil)
			require.ErrorIs(t, err, errCrash)
			s.afterStep = nil
			assert.Equal(t, stop, (*steps)[len(*steps)-1])

			// Nothing of alice can be read or used.
			_, err = s.GetUser(ctx, org.ID, "alice")
			require.ErrorIs(t, err, storage.ErrNotFound)
			require.ErrorIs(t, s.SetInstances(ctx, org.ID, alice.ID, storage.InstanceConfig{}, nil), storage.ErrNotFound)
			target, err := s.GetEmbedTarget(ctx, org.ID, "no-dive", "alice")
			require.NoError(t, err)
			assert.False(t, target.UserFound)
			for _, tok := range aliceTokens {
				_, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest})
				require.ErrorIs(t, err, storage.ErrNotFound)
			}
			toks, err := s.ListTokens(ctx, org.ID, alice.ID, t0)
			require.NoError(t, err)
			assert.Empty(t, toks)
			_, err = s.EmbedSessionByDigest(ctx, session.Digest)
			require.ErrorIs(t, err, storage.ErrNotFound)
			acts, err := s.ListActivity(ctx, org.ID)
			require.NoError(t, err)
			require.Len(t, acts, 1)
			assert.Equal(t, bob.ID, acts[0].User.ID)
			page, err := s.ListUsers(ctx, org.ID, storage.UserQuery{Limit: 10})
			require.NoError(t, err)
			assert.Equal(t, 1, page.Total)
			require.Len(t, page.Users, 1)
			assert.Equal(t, "bob", page.Users[0].FoldedUsername)
			require.ErrorIs(t, s.CreateToken(ctx, crashToken(alice, time.Time{}), storage.TokenLimit{}, nil), storage.ErrNotFound)
			_, err = s.DeleteUser(ctx, org.ID, alice.ID, nil)
			require.ErrorIs(t, err, storage.ErrNotFound)

			// The username is free again, and the new user starts clean.
			fresh := crashUser(org.ID, "ALICE")
			require.NoError(t, s.CreateUser(ctx, fresh, storage.UserLimit{}, nil))
			toks, err = s.ListTokens(ctx, org.ID, fresh.ID, t0)
			require.NoError(t, err)
			assert.Empty(t, toks)

			// Cleanup finishes the delete: no document of the old user is
			// left, and the name is the new user's.
			_, err = s.Cleanup(ctx, t0)
			require.NoError(t, err)
			for _, c := range []*mongo.Collection{s.users, s.tokens, s.sessions, s.ducklings, s.names} {
				n, err := c.CountDocuments(ctx, bson.D{{Key: "uid", Value: alice.ID}})
				require.NoError(t, err)
				assert.Zero(t, n, "documents of the deleted user in %s", c.Name())
			}
			requireNamed(t, s, fresh)

			// Bob was never touched.
			a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: bobToken.Digest})
			require.NoError(t, err)
			assert.Equal(t, bob.ID, a.Credential.User.ID)
		})
	}
}

// writeBackWorld is a store that takes its updates to write a document
// back whole, as FerretDB v1's do (forced on any server), with an org and
// its user alice, and alice's document as stored: what a change that read
// it before a deletion's tombstone writes back (writeBack).
func writeBackWorld(t *testing.T) (*Store, storage.Org, storage.User, bson.M) {
	t.Helper()
	s := newTestStore(t)
	s.byPointer = true // the server whose updates write back
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(t.Context(), org, nil))
	alice := crashUser(org.ID, "alice")
	require.NoError(t, s.CreateUser(t.Context(), alice, storage.UserLimit{}, nil))
	var live bson.M
	require.NoError(t, s.users.FindOne(t.Context(), bson.D{{Key: "_id", Value: key(org.ID, alice.ID)}}).Decode(&live))
	return s, org, alice, live
}

// writeBack writes doc over the document of u, as a change that read it
// before its tombstone does on FerretDB v1.
func writeBack(ctx context.Context, s *Store, u storage.User, doc bson.M) error {
	_, err := s.users.ReplaceOne(ctx, bson.D{{Key: "_id", Value: key(u.Org, u.ID)}}, doc)
	return err
}

// On FerretDB v1 a change of a user that read it before DeleteUser wrote
// its tombstone writes it back whole, live (its update is a read and then
// a write by id). The delete still removes the user, and a token the user
// was given while live again. The write-back is made here by the test
// hook, after the tombstone and after the tokens are removed; the
// audited deletion's event is in the trail once.
func TestDeleteUserOfAUserWrittenBack(t *testing.T) {
	s, org, alice, live := writeBackWorld(t)
	ctx := t.Context()
	late := crashToken(alice, time.Time{})
	var steps []string
	s.afterStep = func(step string) error {
		steps = append(steps, step)
		if step != stepTokens || slices.Contains(steps[:len(steps)-1], stepTokens) {
			return nil
		}
		if err := writeBack(ctx, s, alice, live); err != nil {
			return err
		}
		return s.CreateToken(ctx, late, storage.TokenLimit{}, nil)
	}
	audit, ev := withEvent(org.ID, "user.delete", alice.ID)
	got, err := s.DeleteUser(ctx, org.ID, alice.ID, audit)
	require.NoError(t, err)
	s.afterStep = nil
	assert.Equal(t, alice.ID, got.ID)
	assert.Equal(t, []string{stepTokens, stepSessions, stepDucklings, stepName, stepTokens, stepSessions, stepDucklings, stepName, stepUser},
		slices.DeleteFunc(steps, func(st string) bool {
			return !slices.Contains([]string{stepTokens, stepSessions, stepDucklings, stepName, stepUser}, st)
		}),
		"the records are removed twice, the user once")

	_, err = s.GetUser(ctx, org.ID, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: late.Digest})
	require.ErrorIs(t, err, storage.ErrNotFound)
	for _, c := range []*mongo.Collection{s.users, s.tokens, s.names} {
		n, err := c.CountDocuments(ctx, bson.D{{Key: "uid", Value: alice.ID}})
		require.NoError(t, err)
		assert.Zero(t, n, "documents of the deleted user in %s", c.Name())
	}
	assert.Equal(t, []string{ev}, listed(t, s, org.ID))
	fresh := crashUser(org.ID, "Alice")
	require.NoError(t, s.CreateUser(ctx, fresh, storage.UserLimit{}, nil))
	requireNamed(t, s, fresh)
}

// A user written back every time its deletion turns it into a tombstone
// again is so maxRemoveAttempts times, and then the deletion fails,
// leaving the tombstone, which no read sees and Cleanup finishes.
func TestDeleteUserOfAUserWrittenBackEveryTime(t *testing.T) {
	s, org, alice, live := writeBackWorld(t)
	ctx := t.Context()
	writes := 0
	s.afterStep = func(step string) error {
		if step != stepTokens {
			return nil
		}
		writes++
		return writeBack(ctx, s, alice, live)
	}
	_, err := s.DeleteUser(ctx, org.ID, alice.ID, nil)
	s.afterStep = nil
	require.ErrorContains(t, err, fmt.Sprintf("written back %d times", maxRemoveAttempts))
	assert.Equal(t, maxRemoveAttempts, writes)

	_, err = s.GetUser(ctx, org.ID, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.Cleanup(ctx, t0)
	require.NoError(t, err)
	n, err := s.users.CountDocuments(ctx, bson.D{{Key: "uid", Value: alice.ID}})
	require.NoError(t, err)
	assert.Zero(t, n, "documents of the deleted user")
}

// A change written back over the tombstone (FerretDB v1) is made: when
// its process dies before confirming its event, the document that holds
// the event is all that shows it. The deletion confirms that event before
// it turns the document back into a tombstone, so a process that dies
// right after that (both calls in it) loses neither event: Cleanup then
// finishes the deletion, and both events are in the trail.
func TestDeleteUserOfAUserWrittenBackCrash(t *testing.T) {
	s, org, alice, live := writeBackWorld(t)
	ctx := t.Context()
	// The change: its event pending (its process dies before confirming
	// it), the user as it wrote it back.
	change, changeEv := withEvent(org.ID, "instances.set", alice.ID)
	_, err := s.beginEvent(ctx, change)
	require.NoError(t, err)
	live["ev"] = changeEv
	written := false
	s.afterStep = func(step string) error {
		switch {
		case step == stepTokens && !written:
			written = true
			return writeBack(ctx, s, alice, live)
		case step == stepTombstoneAgain:
			return errCrash
		}
		return nil
	}
	audit, deleteEv := withEvent(org.ID, "user.delete", alice.ID)
	_, err = s.DeleteUser(ctx, org.ID, alice.ID, audit)
	require.ErrorIs(t, err, errCrash)
	s.afterStep = nil
	require.True(t, written)

	// Past the grace of pending events whose change is not made.
	_, err = s.Cleanup(ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	n, err := s.users.CountDocuments(ctx, bson.D{{Key: "uid", Value: alice.ID}})
	require.NoError(t, err)
	assert.Zero(t, n, "documents of the deleted user")
	assert.ElementsMatch(t, []string{deleteEv, changeEv}, listed(t, s, org.ID))
}

// A CreateUser that stops after claiming the name pointer has created
// nothing: the name is not found, and the next creation of it takes the
// pointer over. One that stops after the insert has created the user: it
// is found, changed and deleted like any other, and its name is taken.
func TestCreateUserCrashPoints(t *testing.T) {
	for _, stop := range []string{stepCreateName, stepCreateUser} {
		t.Run("after_"+stop, func(t *testing.T) {
			s := newTestStore(t)
			if !s.byPointer {
				t.Skip("the server needs no name pointers: CreateUser is one write")
			}
			ctx := t.Context()
			org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
			require.NoError(t, s.CreateOrg(ctx, org, nil))
			alice := crashUser(org.ID, "Alice")
			steps := crashAfter(s, stop)
			require.ErrorIs(t, s.CreateUser(ctx, alice, storage.UserLimit{}, nil), errCrash)
			s.afterStep = nil
			assert.Equal(t, stop, (*steps)[len(*steps)-1])
			var n nameDoc
			require.NoError(t, s.names.FindOne(ctx, bson.D{{Key: "_id", Value: key(org.ID, "alice")}}).Decode(&n))
			assert.Equal(t, alice.ID, n.UID)

			again := crashUser(org.ID, "ALICE")
			if stop == stepCreateName {
				_, err := s.GetUser(ctx, org.ID, "alice")
				require.ErrorIs(t, err, storage.ErrNotFound)
				require.ErrorIs(t, s.SetInstances(ctx, org.ID, alice.ID, storage.InstanceConfig{}, nil), storage.ErrNotFound)
				require.NoError(t, s.CreateUser(ctx, again, storage.UserLimit{}, nil))
				requireNamed(t, s, again)
				return
			}
			require.ErrorIs(t, s.CreateUser(ctx, again, storage.UserLimit{}, nil), storage.ErrAlreadyExists)
			requireNamed(t, s, alice)
			cfg := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "jumbo"}}
			require.NoError(t, s.SetInstances(ctx, org.ID, alice.ID, cfg, nil))
			got, err := s.GetUser(ctx, org.ID, "alice")
			require.NoError(t, err)
			assert.Equal(t, cfg, got.Instances)
			deleted, err := s.DeleteUser(ctx, org.ID, alice.ID, nil)
			require.NoError(t, err)
			assert.Equal(t, alice.ID, deleted.ID)
			_, err = s.GetUser(ctx, org.ID, "alice")
			require.ErrorIs(t, err, storage.ErrNotFound)
			count, err := s.names.CountDocuments(ctx, bson.D{})
			require.NoError(t, err)
			assert.Zero(t, count, "name pointers left")
		})
	}
}

// A stale name pointer (to no user, to a tombstone, to a user of another
// org, or to a live user of another name) reserves nothing and reaches
// nothing: lookups by the name fail without touching the user it holds,
// the name can be created, and then the pointer is the new user's.
func TestStaleNamePointer(t *testing.T) {
	s := newTestStore(t)
	if !s.byPointer {
		t.Skip("the server needs no name pointers")
	}
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	other := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	require.NoError(t, s.CreateOrg(ctx, other, nil))
	elsewhere := crashUser(other.ID, "carol")
	require.NoError(t, s.CreateUser(ctx, elsewhere, storage.UserLimit{}, nil))
	frank := crashUser(org.ID, "frank")
	require.NoError(t, s.CreateUser(ctx, frank, storage.UserLimit{}, nil))
	stone := crashUser(org.ID, "dave")
	require.NoError(t, s.CreateUser(ctx, stone, storage.UserLimit{}, nil))
	_, err := s.DeleteUser(ctx, org.ID, stone.ID, nil)
	require.NoError(t, err)
	// A tombstone, as a delete that stopped at once leaves it.
	_, err = s.users.InsertOne(ctx, bson.D{
		{Key: "_id", Value: key(org.ID, stone.ID)}, {Key: "org", Value: nil}, {Key: "dorg", Value: org.ID},
		{Key: "uid", Value: stone.ID}, {Key: "fkey", Value: key(org.ID, stone.ID)}, {Key: "dfkey", Value: "dave"},
		{Key: "slot", Value: key(org.ID, stone.ID)},
	})
	require.NoError(t, err)

	for name, id := range map[string]string{"bob": uuid.NewString(), "carol": elsewhere.ID, "dave": stone.ID, "eve": frank.ID} {
		k := key(org.ID, name)
		_, err := s.names.InsertOne(ctx, nameDoc{ID: k, UID: id})
		require.NoError(t, err)
		_, err = s.GetUser(ctx, org.ID, name)
		require.ErrorIs(t, err, storage.ErrNotFound, name)

		u := crashUser(org.ID, name)
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil), name)
		requireNamed(t, s, u)
	}
	// Nothing of carol's, in the other org, nor of frank's changed.
	for _, u := range []storage.User{elsewhere, frank} {
		got, err := s.GetUser(ctx, u.Org, u.FoldedUsername)
		require.NoError(t, err)
		assert.Equal(t, u.ID, got.ID)
		assert.Equal(t, u.Instances, got.Instances)
	}
	// Cleanup removes the tombstone and leaves dave's new pointer.
	_, err = s.Cleanup(ctx, t0)
	require.NoError(t, err)
	got, err := s.GetUser(ctx, org.ID, "dave")
	require.NoError(t, err)
	assert.NotEqual(t, stone.ID, got.ID)
	requireNamed(t, s, got)
}

// New writes the name pointers a database lacks (one written while no
// pointers were kept), so that lookups of its users need no search; the
// users of a delete that stopped part-way get none.
func TestNewBackfillsNamePointers(t *testing.T) {
	db := newDB(t, client(t))
	old, err := New(t.Context(), db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	if !old.byPointer {
		t.Skip("the server needs no name pointers")
	}
	old.byPointer = false
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, old.CreateOrg(ctx, org, nil))
	alice, bob, carol := crashUser(org.ID, "alice"), crashUser(org.ID, "Bob"), crashUser(org.ID, "carol")
	for _, u := range []storage.User{alice, bob, carol} {
		require.NoError(t, old.CreateUser(ctx, u, storage.UserLimit{}, nil))
	}
	old.afterStep = func(step string) error {
		if step == stepTombstone {
			return errCrash
		}
		return nil
	}
	_, err = old.DeleteUser(ctx, org.ID, carol.ID, nil)
	require.ErrorIs(t, err, errCrash)
	n, err := old.names.CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	require.Zero(t, n)

	s, err := New(ctx, db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	requireNamed(t, s, alice)
	requireNamed(t, s, bob)
	_, err = s.GetUser(ctx, org.ID, "carol")
	require.ErrorIs(t, err, storage.ErrNotFound)
	n, err = s.names.CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	// Again: nothing to write, nothing changes.
	_, err = New(ctx, db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	requireNamed(t, s, alice)
}

// A CreateUser that loses the last place of its org to another creation,
// after it claimed its name pointer, fails with ErrLimitExceeded and
// leaves nothing behind: no pointer, no document. The name can be created
// once a place is free.
func TestCreateUserLosingTheLastPlace(t *testing.T) {
	s := newTestStore(t)
	s.byPointer = true // on MongoDB too: the pointer is what is at stake
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	lim := storage.UserLimit{Max: 2}
	alice := crashUser(org.ID, "alice")
	require.NoError(t, s.CreateUser(ctx, alice, lim, nil))
	bob, carol := crashUser(org.ID, "bob"), crashUser(org.ID, "Carol")
	s.afterStep = func(step string) error {
		if step != stepCreateName {
			return nil
		}
		s.afterStep = nil
		return s.CreateUser(ctx, bob, lim, nil) // takes the last place meanwhile
	}
	require.ErrorIs(t, s.CreateUser(ctx, carol, lim, nil), storage.ErrLimitExceeded)
	require.Nil(t, s.afterStep, "the other creation ran")
	requireNamed(t, s, bob)
	for _, c := range []struct {
		coll   *mongo.Collection
		filter bson.D
	}{
		{s.names, bson.D{{Key: "_id", Value: key(org.ID, "carol")}}},
		{s.users, bson.D{{Key: "uid", Value: carol.ID}}},
	} {
		n, err := c.coll.CountDocuments(ctx, c.filter)
		require.NoError(t, err)
		assert.Zero(t, n, "documents of the refused user in %s", c.coll.Name())
	}

	_, err := s.DeleteUser(ctx, org.ID, alice.ID, nil)
	require.NoError(t, err)
	require.NoError(t, s.CreateUser(ctx, carol, lim, nil))
	requireNamed(t, s, carol)
}

// Concurrent creations racing for the last places leave no document and
// no name pointer of those refused, with or without pointers.
func TestCreateUserRaceLeavesNothingOfTheRefused(t *testing.T) {
	for _, pointers := range []bool{true, false} {
		t.Run(fmt.Sprintf("pointers=%t", pointers), func(t *testing.T) {
			s := newTestStore(t)
			s.byPointer = pointers
			ctx := t.Context()
			org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
			require.NoError(t, s.CreateOrg(ctx, org, nil))
			lim := storage.UserLimit{Max: 4}
			var wg sync.WaitGroup
			for i := range 24 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					err := s.CreateUser(ctx, crashUser(org.ID, fmt.Sprintf("racer%02d", i)), lim, nil)
					if err != nil {
						assert.ErrorIs(t, err, storage.ErrLimitExceeded)
					}
				}()
			}
			wg.Wait()
			users, err := s.users.CountDocuments(ctx, bson.D{})
			require.NoError(t, err)
			assert.Equal(t, int64(lim.Max), users, "user documents")
			if pointers {
				names, err := s.names.CountDocuments(ctx, bson.D{})
				require.NoError(t, err)
				assert.Equal(t, int64(lim.Max), names, "name pointers")
			}
			page, err := s.ListUsers(ctx, org.ID, storage.UserQuery{Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Users, lim.Max)
			for _, u := range page.Users {
				requireNamed(t, s, u)
			}
		})
	}
}

// New gives a slot to the users of a database written before users held
// slots (live users and tombstones alike), then creates the unique index
// of slots; those users count against a limit.
func TestNewBackfillsSlots(t *testing.T) {
	db := newDB(t, client(t))
	ctx := t.Context()
	s, err := New(ctx, db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	ids := make(map[string]string)
	for _, name := range []string{"alice", "bob", "carol", "dave"} {
		u := crashUser(org.ID, name)
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{Max: 10}, nil))
		ids[name] = u.ID
	}
	// Two deletes that stopped at once leave two tombstones.
	crashAfter(s, stepTombstone)
	for _, name := range []string{"carol", "dave"} {
		_, err := s.DeleteUser(ctx, org.ID, ids[name], nil)
		require.ErrorIs(t, err, errCrash)
	}
	s.afterStep = nil
	// As a database written before users held slots.
	require.NoError(t, s.users.Indexes().DropOne(ctx, "org_slot"))
	_, err = s.users.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: "slot", Value: ""}}}})
	require.NoError(t, err)

	s, err = New(ctx, db, Options{Timeout: testTimeout})
	require.NoError(t, err)
	n, err := s.users.CountDocuments(ctx, bson.D{{Key: "slot", Value: bson.D{{Key: "$exists", Value: false}}}})
	require.NoError(t, err)
	assert.Zero(t, n, "users without a slot")
	specs, err := s.users.Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(specs, func(spec mongo.IndexSpecification) bool { return spec.Name == "org_slot" }), "index org_slot")

	require.ErrorIs(t, s.CreateUser(ctx, crashUser(org.ID, "eve"), storage.UserLimit{Max: 2}, nil), storage.ErrLimitExceeded)
	require.NoError(t, s.CreateUser(ctx, crashUser(org.ID, "eve"), storage.UserLimit{Max: 3}, nil))
	_, err = s.Cleanup(ctx, t0)
	require.NoError(t, err)
	page, err := s.ListUsers(ctx, org.ID, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, 3, page.Total)
}

// requireNamed checks that u is the user of its org named by its folded
// username and, where the store keeps name pointers, that the pointer of
// the name holds u's id.
func requireNamed(t *testing.T, s *Store, u storage.User) {
	t.Helper()
	got, err := s.GetUser(t.Context(), u.Org, u.FoldedUsername)
	require.NoError(t, err)
	assert.Equal(t, u.ID, got.ID)
	if !s.byPointer {
		return
	}
	var n nameDoc
	require.NoError(t, s.names.FindOne(t.Context(), bson.D{{Key: "_id", Value: key(u.Org, u.FoldedUsername)}}).Decode(&n))
	assert.Equal(t, u.ID, n.UID, "the name pointer of %s", u.FoldedUsername)
}

// Cleanup removes the tokens and sessions that are no longer live at the
// instant it is given, and only those.
func TestCleanupRemovesExpired(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	alice := crashUser(org.ID, "alice")
	require.NoError(t, s.CreateUser(ctx, alice, storage.UserLimit{}, nil))
	expired := crashToken(alice, t0)
	live := crashToken(alice, t0.Add(time.Millisecond))
	never := crashToken(alice, time.Time{})
	for _, tok := range []storage.Token{expired, live, never} {
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	}
	oldSession := crashSession(alice)
	oldSession.ExpiresAt = t0
	newSession := crashSession(alice)
	newSession.ExpiresAt = t0.Add(time.Second)
	newSession.CreatedAt = t0.Add(-time.Hour) // too early to prune oldSession
	for _, es := range []storage.EmbedSession{oldSession, newSession} {
		require.NoError(t, s.CreateEmbedSession(ctx, es, storage.SessionLimit{}, nil))
	}

	n, err := s.Cleanup(ctx, t0)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: expired.Digest})
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.EmbedSessionByDigest(ctx, oldSession.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound)
	for _, tok := range []storage.Token{live, never} {
		_, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest})
		require.NoError(t, err)
	}
	_, err = s.EmbedSessionByDigest(ctx, newSession.Digest)
	require.NoError(t, err)
}

func crashUser(org, name string) storage.User {
	return storage.User{
		ID: uuid.NewString(), Org: org, Username: name, FoldedUsername: strings.ToLower(name),
		Role: "Member", CreatedAt: t0,
		Instances: storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "standard"}},
	}
}

func crashToken(u storage.User, expires time.Time) storage.Token {
	id := uuid.NewString()
	return storage.Token{
		ID: id, Org: u.Org, UserID: u.ID, Digest: sha256.Sum256([]byte(id)),
		Name: "t", Type: "read_write", CreatedAt: t0, ExpiresAt: expires,
	}
}

func crashSession(u storage.User) storage.EmbedSession {
	return storage.EmbedSession{
		Digest: sha256.Sum256([]byte(uuid.NewString())), Org: u.Org, DiveID: uuid.NewString(),
		Version: 1, UserID: u.ID, Username: u.Username, AffinityKey: "a",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
	}
}

// crashAfter makes s stop after its step stop, as a crash would, and
// returns the steps it takes until then.
func crashAfter(s *Store, stop string) *[]string {
	var steps []string
	s.afterStep = func(step string) error {
		steps = append(steps, step)
		if step == stop {
			return errCrash
		}
		return nil
	}
	return &steps
}

// Cleanup removes the tombstones of revoked tokens past their time at the
// instant given, and keeps the others.
func TestCleanupRemovesTombstones(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	alice := crashUser(org.ID, "alice")
	require.NoError(t, s.CreateUser(ctx, alice, storage.UserLimit{}, nil))
	short, long := crashToken(alice, time.Time{}), crashToken(alice, time.Time{})
	for i, tok := range []storage.Token{short, long} {
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
		r := storage.Revocation{At: t0, KeepUntil: t0.Add(time.Duration(i+1) * time.Hour)}
		require.NoError(t, s.DeleteToken(ctx, org.ID, alice.ID, tok.ID, r, nil))
	}
	count := func() int64 {
		n, err := s.revoked.CountDocuments(ctx, bson.D{})
		require.NoError(t, err)
		return n
	}
	require.EqualValues(t, 2, count())
	n, err := s.Cleanup(ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.EqualValues(t, 1, count())
	_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: long.Digest, LiveAt: t0.Add(time.Hour)})
	require.ErrorIs(t, err, storage.ErrRevoked)
	_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: short.Digest, LiveAt: t0})
	require.NotErrorIs(t, err, storage.ErrRevoked, "removed, though asked about a time it lasted")
}

// An update of a user that the server refused answers what a read of the
// user then says when the user is gone or changed (on FerretDB v1, an
// update that raced a delete and a new user of the name or of the slot
// fails on a unique index), and the update's own error otherwise, a failed
// read included. An error after which the write may have happened (the
// connection's, a timeout's, the write concern's) is the answer as it is.
func TestFailedUpdate(t *testing.T) {
	refusedErr := mongo.CommandError{Code: 1, Name: "InternalError", Message: "UNIQUE constraint failed"}
	for _, c := range []struct {
		name       string
		update     error
		read, want error
	}{
		{"refused, gone", refusedErr, mongo.ErrNoDocuments, mongo.ErrNoDocuments},
		{"refused, changed", refusedErr, storage.ErrConflict, storage.ErrConflict},
		{"refused, still there", refusedErr, nil, refusedErr},
		{"refused, read failed", refusedErr, errors.New("connection reset"), refusedErr},
		{"refused in a write", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 1}}}, mongo.ErrNoDocuments, mongo.ErrNoDocuments},
		{"connection", mongo.CommandError{Labels: []string{"NetworkError"}}, mongo.ErrNoDocuments, nil},
		{"timeout", mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired"}, mongo.ErrNoDocuments, nil},
		{"write concern", mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64}}, mongo.ErrNoDocuments, nil},
		{"not the server's", errors.New("client closed"), mongo.ErrNoDocuments, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == nil {
				want = c.update
			}
			got := failedUpdate(func() (userDoc, error) { return userDoc{}, c.read }, c.update)
			assert.Equal(t, want, got)
		})
	}
}

// An audited compare-and-set whose guard fails every time (another change
// writing the user between each read and write) gives up after
// maxChangeAttempts with an error, whichever way the store updates: never
// not found, for a user that exists.
func TestChangeUserGuardGivesUp(t *testing.T) {
	for _, byPointer := range []bool{false, true} {
		t.Run(fmt.Sprint("byPointer=", byPointer), func(t *testing.T) {
			s, org, alice, _ := writeBackWorld(t)
			s.byPointer = byPointer
			ctx := t.Context()
			d, err := s.liveUser(ctx, org.ID, alice.ID)
			require.NoError(t, err)
			reads := 0
			_, err = s.changeUser(ctx,
				func() (userDoc, error) { reads++; return d, nil }, // what a read finds before each write
				func(d userDoc) bson.D { return bson.D{{Key: "_id", Value: d.ID}} },
				func(_, was userDoc) bool { return was.alive(org.ID, alice.ID) },
				func(string) bson.D {
					return bson.D{{Key: "$set", Value: bson.D{{Key: "privs", Value: []string{"read"}}}}}
				},
				bson.D{privilegesAre([]string{"what another change wrote"})})
			require.EqualError(t, err, fmt.Sprintf("written concurrently %d times", maxChangeAttempts))
			assert.False(t, errors.Is(err, mongo.ErrNoDocuments))
			assert.Equal(t, maxChangeAttempts, reads)
			got, err := s.GetUser(ctx, org.ID, "alice")
			require.NoError(t, err)
			assert.Empty(t, got.Privileges, "unchanged")
		})
	}
}
