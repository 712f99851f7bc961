package redisstore

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

func TestLocationsMiniredis(t *testing.T) {
	testLocations(t, miniClient(t))
}

func TestLocationsRedisServer(t *testing.T) {
	testLocations(t, serverClient(t))
}

// Once a Store has authenticated a token, it reads the token's records
// with one MGET instead of the script unless the request lists another
// user's tokens, with the same answers; and it still sees at once what
// another process changed.
func testLocations(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	w := newLocationsWorld(t, c, true)
	names, s, svc, otherSvc, adminToken, admin := w.names, w.s, w.svc, w.otherSvc, w.adminToken, w.admin
	var err error
	for _, name := range []string{"a", "b"} {
		_, err = svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: name})
		require.NoError(t, err)
	}
	robotTok, err := svc.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "r"})
	require.NoError(t, err)

	d := sha256.Sum256([]byte(adminToken))
	s.locs.Forget(d)
	now := time.Now()
	read := func(target string, tokens bool) (storage.Access, []string) {
		t.Helper()
		names.take()
		a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: d, Username: target, Tokens: tokens, LiveAt: now})
		require.NoError(t, err)
		return a, names.take()
	}
	// Own tokens: the script the first time, one MGET afterwards.
	a1, sent := read("admin", true)
	assert.Contains(t, sent, "evalsha")
	a2, sent := read("admin", true)
	assert.Equal(t, []string{"mget"}, sent)
	assert.Equal(t, a1, a2)
	assert.Len(t, a2.Tokens, 3)
	assert.Equal(t, a1.Credential.User, a1.Target)

	// The credential alone, or with the caller as target, reads the
	// token's own record, in one MGET too.
	for _, target := range []string{"", "admin"} {
		a3, sent := read(target, false)
		assert.Equal(t, []string{"mget"}, sent)
		assert.Equal(t, a1.Credential, a3.Credential)
		assert.Equal(t, target != "", a3.TargetFound)
	}

	// Data written before name:<folded> and trec:<tid> existed: the plain
	// reads miss them, the script reads the records and writes both,
	// with the same answers, and the plain reads find them from then on.
	base := s.orgBase("acme")
	mirrors := []string{base + "name:admin", base + "trec:" + a1.Credential.Token.ID}
	before := make([]string, len(mirrors))
	for i, k := range mirrors {
		before[i], err = c.Get(ctx, k).Result()
		require.NoError(t, err)
	}
	for _, list := range []bool{true, false} {
		require.NoError(t, c.Del(ctx, mirrors...).Err())
		target := ""
		if list {
			target = "admin"
		}
		a4, sent := read(target, list)
		assert.Equal(t, []string{"mget", "evalsha"}, sent)
		assert.Equal(t, a1.Credential, a4.Credential)
		for i, k := range mirrors {
			v, err := c.Get(ctx, k).Result()
			require.NoError(t, err)
			assert.Equal(t, before[i], v, "%s written again", k)
		}
		a4, sent = read(target, list)
		assert.Equal(t, []string{"mget"}, sent)
		assert.Equal(t, a1.Credential, a4.Credential)
	}

	// Another user with its tokens: the script finds that user's id, in
	// one round trip. Without its tokens: the plain reads, by its name.
	robots, sent := read("robot", true)
	assert.Equal(t, []string{"evalsha"}, sent)
	require.True(t, robots.TargetFound)
	assert.Equal(t, "robot", robots.Target.Username)
	require.Len(t, robots.Tokens, 1)
	assert.Equal(t, robotTok.ID, robots.Tokens[0].ID)
	robot, sent := read("robot", false)
	assert.Equal(t, []string{"mget"}, sent)
	assert.Equal(t, robots.Target, robot.Target)
	assert.Equal(t, a1.Credential, robot.Credential)
	assert.Nil(t, robot.Tokens)
	// A user no plain read finds: the script tells whether it exists.
	nobody, sent := read("nobody", false)
	assert.Equal(t, []string{"mget", "evalsha"}, sent)
	assert.False(t, nobody.TargetFound)
	assert.Equal(t, a1.Credential, nobody.Credential)
	// A user written by an earlier version: found by the script, which
	// writes its record by name.
	robotRecord, err := c.Get(ctx, base+"name:robot").Result()
	require.NoError(t, err)
	require.NoError(t, c.Del(ctx, base+"name:robot").Err())
	robot, sent = read("robot", false)
	assert.Equal(t, []string{"mget", "evalsha"}, sent)
	assert.Equal(t, robots.Target, robot.Target)
	v, err := c.Get(ctx, base+"name:robot").Result()
	require.NoError(t, err)
	assert.Equal(t, robotRecord, v)
	robot, sent = read("robot", false)
	assert.Equal(t, []string{"mget"}, sent)
	assert.Equal(t, robots.Target, robot.Target)

	// A token revoked through another process is refused at once, and
	// its location forgotten.
	_, err = svc.Authenticate(ctx, robotTok.Value)
	require.NoError(t, err)
	robotDigest := sha256.Sum256([]byte(robotTok.Value))
	_, known := s.locs.Get(robotDigest)
	require.True(t, known)
	require.NoError(t, otherSvc.DeleteToken(ctx, admin, "robot", robotTok.ID))
	_, err = svc.Authenticate(ctx, robotTok.Value)
	require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
	_, known = s.locs.Get(robotDigest)
	assert.False(t, known)

	// The same value seeded again for another user moves its pointer: the
	// script reads it afresh, and the new owner authenticates.
	const value = "seeded-token-value-0123456789"
	_, err = svc.SeedToken(ctx, "acme", "robot", orgadmin.SeedTokenInput{Value: value, CreateTokenInput: orgadmin.CreateTokenInput{Name: "s"}})
	require.NoError(t, err)
	caller, err := svc.Authenticate(ctx, value)
	require.NoError(t, err)
	assert.Equal(t, "robot", caller.Username())
	_, err = otherSvc.DeleteUser(ctx, admin, "robot")
	require.NoError(t, err)
	_, err = otherSvc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, value)
	require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "a deleted user's token")
	_, err = otherSvc.SeedToken(ctx, "acme", "admin", orgadmin.SeedTokenInput{Value: value, CreateTokenInput: orgadmin.CreateTokenInput{Name: "s"}})
	require.NoError(t, err)
	names.take()
	caller, err = svc.Authenticate(ctx, value)
	require.NoError(t, err)
	assert.Equal(t, "admin", caller.Username())
	assert.Contains(t, names.take(), "evalsha")

	// A user deleted through another process: its tokens are refused,
	// though their locations were known.
	_, err = svc.Authenticate(ctx, adminToken)
	require.NoError(t, err)
	_, err = otherSvc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "gone"})
	require.NoError(t, err)
	goneTok, err := otherSvc.CreateToken(ctx, admin, "gone", orgadmin.CreateTokenInput{Name: "g"})
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, goneTok.Value)
	require.NoError(t, err)
	_, err = otherSvc.DeleteUser(ctx, admin, "gone")
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, goneTok.Value)
	require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
}

// The Store remembers at most locs.max locations.
func TestLocationsBounded(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, miniClient(t), true)
	s.locs.Max = 2
	svc := orgadmin.New(s, orgadmin.Config{})
	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := svc.Authenticate(ctx, adminToken)
	require.NoError(t, err)
	values := []string{adminToken}
	for _, name := range []string{"a", "b", "c"} {
		tok, err := svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: name})
		require.NoError(t, err)
		values = append(values, tok.Value)
	}
	for range 2 {
		for _, v := range values {
			_, err := svc.Authenticate(ctx, v)
			require.NoError(t, err)
			assert.LessOrEqual(t, s.locs.Len(), 2)
		}
	}
	last := sha256.Sum256([]byte(values[len(values)-1]))
	_, known := s.locs.Get(last)
	assert.True(t, known, "the latest location is remembered")
}

// On a Cluster too, once a Store has authenticated a token it reads the
// token's records, after the pointer, with one MGET in the org's slot
// instead of the script, unless the request lists another user's tokens,
// with the same answers; records an earlier version wrote without their
// mirrors go through the script once, which writes them; and a token
// revoked or a user deleted through another process is refused at once.
func TestLocationsCluster(t *testing.T) {
	c := clusterClient(t)
	ctx := t.Context()
	w := newLocationsWorld(t, c, false)
	names, s, svc, otherSvc, adminToken, admin := w.names, w.s, w.svc, w.otherSvc, w.adminToken, w.admin
	robotTok, err := svc.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "r", TTL: orgadmin.Some(time.Hour)})
	require.NoError(t, err)

	d := sha256.Sum256([]byte(adminToken))
	s.locs.Forget(d)
	now := time.Now()
	read := func(digest [32]byte, target string, tokens bool) (storage.Access, []string) {
		t.Helper()
		names.take()
		a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: digest, Username: target, Tokens: tokens, LiveAt: now})
		require.NoError(t, err)
		return a, names.take()
	}

	first1, sent := read(d, "admin", true)
	assert.Equal(t, []string{"get", "evalsha"}, sent)
	for _, q := range []struct {
		target string
		tokens bool
	}{{"admin", true}, {"", false}, {"robot", false}} {
		a, sent := read(d, q.target, q.tokens)
		assert.Equal(t, []string{"get", "mget"}, sent, "%+v", q)
		assert.Equal(t, first1.Credential, a.Credential)
		if q.tokens {
			assert.Equal(t, first1.Tokens, a.Tokens)
		}
		if q.target == "robot" {
			assert.Equal(t, "robot", a.Target.Username)
		}
	}
	robots, sent := read(d, "robot", true)
	assert.Equal(t, []string{"get", "evalsha"}, sent, "another user's tokens: the script")
	require.Len(t, robots.Tokens, 1)

	// Without the mirrors an earlier version did not write: the script,
	// once, writes them back as they were, the token's to end with its
	// pointer.
	base := s.orgBase("acme")
	robotDigest := sha256.Sum256([]byte(robotTok.Value))
	_, sent = read(robotDigest, "", false)
	assert.Equal(t, []string{"get", "evalsha"}, sent)
	mirrors := []string{base + "name:robot", base + "trec:" + robotTok.ID}
	before := make([]string, len(mirrors))
	for i, k := range mirrors {
		before[i], err = c.Get(ctx, k).Result()
		require.NoError(t, err)
	}
	require.NoError(t, c.Del(ctx, mirrors[0]).Err())
	require.NoError(t, c.Del(ctx, mirrors[1]).Err())
	_, sent = read(robotDigest, "", false)
	assert.Equal(t, []string{"get", "mget", "evalsha"}, sent)
	for i, k := range mirrors {
		v, err := c.Get(ctx, k).Result()
		require.NoError(t, err)
		assert.Equal(t, before[i], v, k)
	}
	life, err := c.PTTL(ctx, mirrors[1]).Result()
	require.NoError(t, err)
	pointerLife, err := c.PTTL(ctx, s.prefix+"tok:"+hexDigest(robotDigest)).Result()
	require.NoError(t, err)
	assert.InDelta(t, pointerLife, life, float64(5*time.Second), "the token's record ends with its pointer")
	_, sent = read(robotDigest, "", false)
	assert.Equal(t, []string{"get", "mget"}, sent)

	// The user a request names, written by an earlier version: the
	// script finds it and writes its record by name, as it was.
	require.NoError(t, c.Del(ctx, mirrors[0]).Err())
	robot, sent := read(d, "robot", false)
	assert.Equal(t, []string{"get", "mget", "evalsha"}, sent)
	assert.Equal(t, "robot", robot.Target.Username)
	v, err := c.Get(ctx, mirrors[0]).Result()
	require.NoError(t, err)
	assert.Equal(t, before[0], v)
	_, sent = read(d, "robot", false)
	assert.Equal(t, []string{"get", "mget"}, sent)

	// Revoked, or its user deleted, through another process: refused at
	// once.
	require.NoError(t, otherSvc.DeleteToken(ctx, admin, "robot", robotTok.ID))
	_, err = svc.Authenticate(ctx, robotTok.Value)
	require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
	_, err = otherSvc.DeleteUser(ctx, admin, "robot")
	require.NoError(t, err)
	a, sent := read(d, "robot", false)
	assert.Equal(t, []string{"get", "mget", "evalsha"}, sent, "a user that is gone: the script says so")
	assert.False(t, a.TargetFound)
}

// locationsWorld is two Stores sharing c, the first's Service and the
// other's, with the org acme, its Admin (and token) and the service
// account robot, and a hook that records the commands sent.
type locationsWorld struct {
	names         *sent
	s             *Store
	svc, otherSvc *orgadmin.Service
	adminToken    string
	admin         orgadmin.Caller
}

func newLocationsWorld(t *testing.T, c redis.UniversalClient, single bool) locationsWorld {
	t.Helper()
	ctx := t.Context()
	w := locationsWorld{names: &sent{}}
	c.AddHook(w.names)
	first, other := storePair(t, c, single)
	w.s = first.(*Store)
	w.svc = orgadmin.New(w.s, orgadmin.Config{})
	w.otherSvc = orgadmin.New(other, orgadmin.Config{})
	var err error
	w.adminToken, err = w.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	w.admin, err = w.svc.Authenticate(ctx, w.adminToken)
	require.NoError(t, err)
	_, err = w.svc.CreateServiceAccount(ctx, w.admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	return w
}
