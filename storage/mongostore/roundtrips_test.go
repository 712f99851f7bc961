package mongostore

import (
	"context"
	"fmt"
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

	"github.com/orgadmin/orgadmin/storage"
)

// command is what a store sent: the command's name, its collection, and
// the filter it carried ("" when none), as extended JSON.
type command struct {
	name, coll, filter string
}

func (c command) String() string { return c.name + " " + c.coll + " " + c.filter }

// commands records the commands a client sends.
type commands struct {
	mu   sync.Mutex
	sent []command
}

func (c *commands) started(_ context.Context, e *event.CommandStartedEvent) {
	cmd := command{name: e.CommandName}
	if v, err := e.Command.LookupErr(e.CommandName); err == nil {
		cmd.coll, _ = v.StringValueOK()
	}
	for _, path := range [][]string{{"filter"}, {"query"}, {"updates", "0", "q"}, {"deletes", "0", "q"}} {
		if v, err := e.Command.LookupErr(path...); err == nil {
			cmd.filter = v.String()
			break
		}
	}
	c.mu.Lock()
	c.sent = append(c.sent, cmd)
	c.mu.Unlock()
}

// take returns the commands sent since the last take, sorted (concurrent
// reads may be sent in either order).
func (c *commands) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.sent))
	for i, cmd := range c.sent {
		out[i] = cmd.String()
	}
	c.sent = nil
	return out
}

// The lookups by name send the commands below, no more. With name
// pointers (as on FerretDB v1) every filter of the common path is a bare
// {_id: X}, which such a server reads by its primary key; without them
// (as on MongoDB) a lookup by name is one query of the index org_fkey, as
// it always was.
func TestCommandsByName(t *testing.T) {
	for _, pointers := range []bool{true, false} {
		t.Run(fmt.Sprintf("pointers=%t", pointers), func(t *testing.T) {
			testCommandsByName(t, pointers)
		})
	}
}

func testCommandsByName(t *testing.T, pointers bool) {
	sent := &commands{}
	c, err := mongo.Connect(options.Client().ApplyURI(testURI(t)).SetTimeout(testTimeout).
		SetMonitor(&event.CommandMonitor{Started: sent.started}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	s, err := New(t.Context(), newDB(t, c), Options{Timeout: testTimeout})
	require.NoError(t, err)
	s.byPointer = pointers
	ctx := t.Context()
	org := storage.Org{ID: "acme", CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	require.NoError(t, s.PutDive(ctx, storage.Dive{ID: "d1", Org: org.ID, Title: "x", Version: 1}, nil))
	alice := crashUser(org.ID, "alice")
	alice.ID = "a1"
	sent.take()

	// id is a bare {_id: id} filter; the others name the collections' keys.
	id := func(k string) string { return fmt.Sprintf(`{"_id": %q}`, k) }
	aliceID, aliceName, org1 := id(key("acme", "a1")), id(key("acme", "alice")), id("acme")
	byAlice := `{"org": "acme","fkey": "alice"}`
	var want []string
	if pointers {
		want = []string{"find orgs " + org1, "insert user_names ", "insert users "}
	} else {
		want = []string{"find orgs " + org1, "insert users "}
	}
	require.NoError(t, s.CreateUser(ctx, alice, storage.UserLimit{}, nil))
	assert.Equal(t, want, sent.take(), "CreateUser")

	// Under a limit, the count of the org's users runs with the read of
	// the org. The first slot tried is free: alice, created without a
	// limit, holds none of the numbered ones.
	want = append([]string{"aggregate users "}, want...)
	require.NoError(t, s.CreateUser(ctx, crashUser(org.ID, "bob"), storage.UserLimit{Max: 1000}, nil))
	assert.ElementsMatch(t, want, sent.take(), "CreateUser under a limit")

	if pointers {
		want = []string{"find user_names " + aliceName, "find users " + aliceID}
	} else {
		want = []string{"find users " + byAlice}
	}
	_, err = s.GetUser(ctx, org.ID, "alice")
	require.NoError(t, err)
	assert.Equal(t, want, sent.take(), "GetUser")

	if pointers {
		want = []string{"find dives " + id(key("acme", "d1")), "find user_names " + aliceName, "find users " + aliceID}
	} else {
		want = []string{"find dives " + id(key("acme", "d1")), "find users " + byAlice}
	}
	_, err = s.GetEmbedTarget(ctx, org.ID, "d1", "alice")
	require.NoError(t, err)
	assert.ElementsMatch(t, want, sent.take(), "GetEmbedTarget")

	want = []string{`update users {"_id": "4:acme2:a1","org": "acme"}`}
	require.NoError(t, s.SetInstances(ctx, org.ID, "a1", storage.InstanceConfig{}, nil))
	assert.Equal(t, want, sent.take(), "SetInstances")

	owned := `{"org": "acme","uid": "a1"}`
	// The tokens and sessions are read first, for the events of their
	// creations to confirm (none here).
	removal := []string{"find tokens " + owned, "delete tokens " + owned, "find embed_sessions " + owned, "delete embed_sessions " + owned, "delete ducklings " + owned}
	// The user is found by its id: no name is looked up.
	if pointers {
		want = append([]string{"find users " + aliceID, "findAndModify users " + aliceID}, removal...)
		want = append(want, `delete user_names {"_id": "4:acme5:alice","uid": "a1"}`)
	} else {
		want = append([]string{"find users " + aliceID, `findAndModify users {"_id": "4:acme2:a1","org": "acme","uid": "a1"}`}, removal...)
	}
	want = append(want, `delete users {"_id": "4:acme2:a1","org": null}`)
	_, err = s.DeleteUser(ctx, org.ID, "a1", nil)
	require.NoError(t, err)
	assert.Equal(t, want, sent.take(), "DeleteUser")

	// A name nobody has: with pointers, past the missing pointer, a
	// search (a pointer is only a hint).
	if pointers {
		want = []string{"find user_names " + aliceName, "find users " + byAlice}
	} else {
		want = []string{"find users " + byAlice}
	}
	_, err = s.GetUser(ctx, org.ID, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)
	assert.Equal(t, want, sent.take(), "GetUser of a missing user")
}

// Many concurrent lookups, changes and deletes by name on one store with
// name pointers, while the same names are created again, agree with each
// other: a name found is the user of that name, and a delete returns the
// user it removed, and leaves no document of it.
func TestNamePointersUnderChurn(t *testing.T) {
	s := newTestStore(t)
	s.byPointer = true
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	names := []string{"ann", "ben", "cy"}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				name := names[(w+i)%len(names)]
				switch i % 3 {
				case 0:
					err := s.CreateUser(ctx, crashUser(org.ID, strings.ToUpper(name)), storage.UserLimit{}, nil)
					if err != nil && !assert.ErrorIs(t, err, storage.ErrAlreadyExists) {
						return
					}
				case 1:
					u, err := s.GetUser(ctx, org.ID, name)
					if err == nil {
						assert.Equal(t, name, u.FoldedUsername)
					} else if !assert.ErrorIs(t, err, storage.ErrNotFound) {
						return
					}
					if err == nil {
						err = s.SetInstances(ctx, org.ID, u.ID, storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "jumbo"}}, nil)
						if err != nil && !assert.ErrorIs(t, err, storage.ErrNotFound) {
							return
						}
					}
				case 2:
					u, err := s.GetUser(ctx, org.ID, name)
					if err == nil {
						u, err = s.DeleteUser(ctx, org.ID, u.ID, nil)
					}
					if err == nil {
						assert.Equal(t, name, u.FoldedUsername)
						// Not written back live by a change that read it
						// before its tombstone.
						n, err := s.users.CountDocuments(ctx, bson.D{{Key: "_id", Value: key(org.ID, u.ID)}})
						assert.NoError(t, err)
						assert.Zero(t, n, "the deleted user's document")
					} else if !assert.ErrorIs(t, err, storage.ErrNotFound) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()

	// Afterwards each name is either free or the live user's, by pointer
	// and by listing alike.
	page, err := s.ListUsers(ctx, org.ID, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	listed := make(map[string]string)
	for _, u := range page.Users {
		listed[u.FoldedUsername] = u.ID
	}
	for _, name := range names {
		u, err := s.GetUser(ctx, org.ID, name)
		if id, ok := listed[name]; ok {
			require.NoError(t, err)
			assert.Equal(t, id, u.ID)
			requireNamed(t, s, u)
		} else {
			require.ErrorIs(t, err, storage.ErrNotFound)
		}
	}
	_, err = s.Cleanup(ctx, t0)
	require.NoError(t, err)
	n, err := s.users.CountDocuments(ctx, bson.D{{Key: "org", Value: nil}})
	require.NoError(t, err)
	assert.Zero(t, n, "tombstones left after Cleanup")
}

// FerretDB v1 is told apart by the ferretdbVersion of buildInfo.
func TestFerretDBv1(t *testing.T) {
	for v, want := range map[string]bool{"": false, "v1.24.2": true, "1.0.0": true, "v2.1.0": false, "v10.0": false, "unknown": true} {
		assert.Equal(t, want, ferretDBv1(v), "%q", v)
	}
}

// ReadAccess of a live token sends what it sent before tombstones; a
// digest no token has costs one more find by _id, in revoked_tokens,
// whether it was revoked or never issued. A revocation deletes the token
// (in two commands on FerretDB v1) and writes its tombstone.
func TestCommandsOfRevokedTokens(t *testing.T) {
	sent := &commands{}
	c, err := mongo.Connect(options.Client().ApplyURI(testURI(t)).SetTimeout(testTimeout).
		SetMonitor(&event.CommandMonitor{Started: sent.started}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	s, err := New(t.Context(), newDB(t, c), Options{Timeout: testTimeout})
	require.NoError(t, err)
	ctx := t.Context()
	org := storage.Org{ID: "acme", CreatedAt: t0}
	require.NoError(t, s.CreateOrg(ctx, org, nil))
	alice := crashUser(org.ID, "alice")
	require.NoError(t, s.CreateUser(ctx, alice, storage.UserLimit{}, nil))
	tok := storage.Token{ID: uuid.NewString(), Org: org.ID, UserID: alice.ID, Digest: storage.Digest{1}, Name: "t", Type: "read_write", CreatedAt: t0}
	require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
	sent.take()

	names := func() []string {
		var out []string
		for _, c := range sent.take() {
			f := strings.Fields(c)
			out = append(out, f[0]+" "+f[1])
		}
		return out
	}
	q := storage.AccessQuery{Digest: tok.Digest, LiveAt: t0}
	_, err = s.ReadAccess(ctx, q)
	require.NoError(t, err)
	live := names()
	assert.NotContains(t, live, "find "+revokedColl, "the success path reads no tombstone")

	require.NoError(t, s.DeleteToken(ctx, org.ID, alice.ID, tok.ID, storage.Revocation{At: t0, KeepUntil: t0.Add(time.Hour)}, nil))
	take := []string{"findAndModify " + tokensColl}
	if s.byPointer { // FerretDB v1: a find, then a delete that counts (takeToken)
		take = []string{"find " + tokensColl, "delete " + tokensColl}
	}
	// Then, at once, the tombstone and the look for the token's events
	// left pending (settleTaken).
	got := names()
	require.GreaterOrEqual(t, len(got), len(take))
	assert.Equal(t, take, got[:len(take)], "DeleteToken")
	assert.ElementsMatch(t, []string{"update " + revokedColl, "find " + eventsColl}, got[len(take):], "DeleteToken")

	_, err = s.ReadAccess(ctx, q)
	require.ErrorIs(t, err, storage.ErrRevoked)
	assert.Equal(t, []string{"find " + tokensColl, "find " + revokedColl}, names(), "a revoked digest")
	q.Digest = storage.Digest{2}
	_, err = s.ReadAccess(ctx, q)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrRevoked)
	assert.Equal(t, []string{"find " + tokensColl, "find " + revokedColl}, names(), "an unknown digest")
}
