package redisstore

import (
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

// The scripts find a user's id in its record without decoding it when
// encode wrote it, and decode any other form: a record whose fields are
// in another order still has its user:<uid> rewritten.
func TestUserIDOfRecordsInAnotherForm(t *testing.T) {
	ctx := t.Context()
	s, us := usersWorld(t, miniClient(t))
	robot := us[0]
	base := s.orgBase("acme")
	other := `{"n":"Robot","sa":true,"r":"Member","c":` + encode(robot.CreatedAt.UnixMilli()) + `,"id":"` + robot.ID + `"}`
	require.NoError(t, s.c.HSet(ctx, base+"users", "robot", other).Err())
	c := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "Jumbo"}, ReadScaling: storage.InstanceSide{Size: "Standard"}}
	require.NoError(t, s.SetInstances(ctx, "acme", "robot", c, nil))
	rec, err := s.c.Get(ctx, base+"user:"+robot.ID).Result()
	require.NoError(t, err)
	assert.Equal(t, other+"\n"+encode(toInstDoc(c)), rec)
}
