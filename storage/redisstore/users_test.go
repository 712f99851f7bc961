package redisstore

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// usersWorld is org "acme" with the users robot (a service account), ann
// and bob, on a Store of c.
func usersWorld(t *testing.T, c redis.UniversalClient) (*Store, []storage.User) {
	t.Helper()
	ctx := t.Context()
	s := newStore(t, c, true)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: crashT0}, nil))
	var us []storage.User
	for _, name := range []string{"Robot", "Ann", "Bob"} {
		u := storage.User{ID: uuid.NewString(), Org: "acme", Username: name, FoldedUsername: foldASCII(name),
			IsServiceAccount: name == "Robot", Role: "Member", CreatedAt: crashT0}
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
		us = append(us, u)
	}
	return s, us
}

func foldASCII(name string) string {
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func usernames(us []storage.User) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Username)
	}
	return out
}

// clients are the Redis servers a layout test runs on: miniredis, and
// the real server when there is one.
func clients() map[string]func(testing.TB) redis.UniversalClient {
	return map[string]func(testing.TB) redis.UniversalClient{
		"Miniredis":   func(tb testing.TB) redis.UniversalClient { return miniClient(tb) },
		"RedisServer": func(tb testing.TB) redis.UniversalClient { return serverClient(tb) },
	}
}

// An org written by an earlier version has no recs, only ix:all: its
// first listing of all users builds recs from the users and inst hashes,
// removes ix:all, and lists the users as before.
func TestListUsersBuildsRecsOfAnEarlierLayout(t *testing.T) {
	for name, client := range clients() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, us := usersWorld(t, client(t))
			base := s.orgBase("acme")
			// The layout of the earlier version.
			require.NoError(t, s.c.Del(ctx, base+"recs").Err())
			for _, u := range us {
				require.NoError(t, s.c.ZAdd(ctx, base+"ix:all", redis.Z{Member: u.FoldedUsername}).Err())
			}
			page, err := s.ListUsers(ctx, "acme", storage.UserQuery{Limit: 2})
			require.NoError(t, err)
			assert.Equal(t, []string{"Ann", "Bob"}, usernames(page.Users))
			assert.Equal(t, 3, page.Total)
			assert.True(t, page.More)
			assert.Equal(t, us[1], page.Users[0], "the record, whole")

			members, err := s.c.ZRange(ctx, base+"recs", 0, -1).Result()
			require.NoError(t, err)
			require.Len(t, members, 3, "recs built")
			assertNoKey(t, s, base+"ix:all", "ix:all removed")

			page, err = s.ListUsers(ctx, "acme", storage.UserQuery{Limit: 2, After: "bob"})
			require.NoError(t, err)
			assert.Equal(t, []string{"Robot"}, usernames(page.Users))
			assert.False(t, page.More)
		})
	}
}

// Every write of a user's records replaces its member of recs, which
// holds what name:<folded> holds after the folded username; a deleted user
// has none.
func TestRecsFollowEveryUserWrite(t *testing.T) {
	for name, client := range clients() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, us := usersWorld(t, client(t))
			base := s.orgBase("acme")
			member := func(u storage.User) string {
				t.Helper()
				rec, err := s.c.Get(ctx, base+"name:"+u.FoldedUsername).Result()
				require.NoError(t, err)
				return u.FoldedUsername + "\x00" + rec
			}
			recs := func() []string {
				t.Helper()
				ms, err := s.c.ZRange(ctx, base+"recs", 0, -1).Result()
				require.NoError(t, err)
				return ms
			}
			ann, bob, robot := us[1], us[2], us[0]
			assert.Equal(t, []string{member(ann), member(bob), member(robot)}, recs(), "created")

			c := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "Jumbo"}, ReadScaling: storage.InstanceSide{Size: "Standard", FlockSize: 2}}
			require.NoError(t, s.SetInstances(ctx, "acme", bob.ID, c, nil))
			bob.Instances = c
			require.NoError(t, s.SetPrivileges(ctx, "acme", ann.ID, ann.Privileges, []string{"read"}, nil))
			ann.Privileges = []string{"read"}
			assert.Equal(t, []string{member(ann), member(bob), member(robot)}, recs(), "replaced")
			page, err := s.ListUsers(ctx, "acme", storage.UserQuery{Limit: 10})
			require.NoError(t, err)
			assert.Equal(t, []storage.User{ann, bob, robot}, page.Users)

			_, err = s.DeleteUser(ctx, "acme", bob.ID, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{member(ann), member(robot)}, recs(), "deleted")
		})
	}
}

// The scripts find a user's id in its record without decoding it when
// encode wrote it, and decode any other form: a record whose fields are
// in another order still has its name:<folded> rewritten.
func TestUserIDOfRecordsInAnotherForm(t *testing.T) {
	ctx := t.Context()
	s, us := usersWorld(t, miniClient(t))
	robot := us[0]
	base := s.orgBase("acme")
	other := `{"n":"Robot","sa":true,"r":"Member","c":` + encode(robot.CreatedAt.UnixMilli()) + `,"id":"` + robot.ID + `"}`
	require.NoError(t, s.c.HSet(ctx, base+"users", "robot", other).Err())
	c := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "Jumbo"}, ReadScaling: storage.InstanceSide{Size: "Standard"}}
	require.NoError(t, s.SetInstances(ctx, "acme", robot.ID, c, nil))
	rec, err := s.c.Get(ctx, base+"name:"+robot.FoldedUsername).Result()
	require.NoError(t, err)
	assert.Equal(t, other+"\n"+encode(toInstDoc(c)), rec)
}

// SetPrivileges writes the record encode makes of the user as stored
// (decoded, whatever its form) with the privileges it is given: every
// other field survives, escapes and all, and the record comes out in the
// very form encode writes, which reads without decoding.
func TestSetPrivilegesRewritesTheRecord(t *testing.T) {
	for name, client := range clients() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, us := usersWorld(t, client(t))
			base := s.orgBase("acme")
			record := func(u storage.User) string {
				t.Helper()
				rec, err := s.c.HGet(ctx, base+"users", u.FoldedUsername).Result()
				require.NoError(t, err)
				mirror, err := s.c.Get(ctx, base+"name:"+u.FoldedUsername).Result()
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(mirror, rec+"\n"), "name:<folded> holds the record")
				return rec
			}

			// Plain text: the form encode writes.
			ann := us[1]
			require.NoError(t, s.SetPrivileges(ctx, "acme", ann.ID, nil, []string{"read", "write"}, nil))
			ann.Privileges = []string{"read", "write"}
			assert.Equal(t, encode(toUserDoc(ann)), record(ann))
			var d userDoc
			assert.True(t, readUserDocAsWritten(record(ann), &d), "read as written")
			require.NoError(t, s.SetPrivileges(ctx, "acme", ann.ID, ann.Privileges, nil, nil))
			ann.Privileges = nil
			assert.Equal(t, encode(toUserDoc(ann)), record(ann), "no privileges: none written")

			// Every field, with text JSON escapes.
			odd := `say "hi" \ / <b>&amp; é ☃ 😀` + "\t\u2028\x01"
			carol := storage.User{ID: uuid.NewString(), Org: "acme", Username: "Carol", FoldedUsername: "carol",
				Description: odd, IsServiceAccount: true, Role: "Admin", Privileges: []string{odd, "a/b"},
				Email: "c/" + odd, FirstName: odd + "1", LastName: odd + "2", CreatedAt: crashT0}
			require.NoError(t, s.CreateUser(ctx, carol, storage.UserLimit{}, nil))
			to := []string{odd, "a/b", `"`}
			require.NoError(t, s.SetPrivileges(ctx, "acme", carol.ID, carol.Privileges, to, nil))
			carol.Privileges = to
			got, err := s.GetUser(ctx, "acme", "carol")
			require.NoError(t, err)
			assert.Equal(t, carol, got)
			page, err := s.ListUsers(ctx, "acme", storage.UserQuery{Limit: 10})
			require.NoError(t, err)
			require.Len(t, page.Users, 4)
			assert.Equal(t, carol, page.Users[2], "listed")
			require.ErrorIs(t, s.SetPrivileges(ctx, "acme", carol.ID, []string{odd, "a/b"}, nil, nil), storage.ErrConflict)

			// A record in another form, as an earlier version wrote it.
			robot := us[0]
			other := `{"p":["x"],"n":"Robot","sa":true,"r":"Member","c":` + encode(robot.CreatedAt.UnixMilli()) + `,"id":"` + robot.ID + `"}`
			require.NoError(t, s.c.HSet(ctx, base+"users", "robot", other).Err())
			require.ErrorIs(t, s.SetPrivileges(ctx, "acme", robot.ID, nil, []string{"y"}, nil), storage.ErrConflict)
			require.NoError(t, s.SetPrivileges(ctx, "acme", robot.ID, []string{"x"}, []string{"x", "y"}, nil))
			robot.Privileges = []string{"x", "y"}
			assert.Equal(t, encode(toUserDoc(robot)), record(robot))
			got, err = s.GetUser(ctx, "acme", "robot")
			require.NoError(t, err)
			assert.Equal(t, robot, got)
		})
	}
}
