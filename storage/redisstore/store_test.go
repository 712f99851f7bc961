package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

// The conformance suite runs on a real Redis server and a real Redis
// Cluster when scripts/test.sh has started them, and on miniredis when it
// has not (testdb.SkipStandIn):
//
//	ORGADMIN_REDIS_ADDR     host:port of a Redis server
//	ORGADMIN_REDIS_CLUSTER  comma-separated host:port of Cluster masters

func TestMiniredis(t *testing.T) {
	testdb.SkipStandIn(t)
	storagetest.Run(t, func(tb testing.TB) storage.Store {
		return newStore(tb, miniClient(tb), true)
	})
}

// TestMiniredisClusterWrites runs the suite with the writes a Cluster
// makes (pointer keys reserved and removed around the org's script), on
// one server, so that path is tested by a plain go test too.
func TestMiniredisClusterWrites(t *testing.T) {
	testdb.SkipStandIn(t)
	storagetest.Run(t, func(tb testing.TB) storage.Store {
		return newStore(tb, miniClient(tb), false)
	})
}

func TestRedisServer(t *testing.T) {
	c := serverClient(t)
	storagetest.Run(t, func(tb testing.TB) storage.Store { return newStore(tb, c, true) })
}

func TestRedisCluster(t *testing.T) {
	c := clusterClient(t)
	storagetest.Run(t, func(tb testing.TB) storage.Store { return newStore(tb, c, false) })
}

// The test servers, from internal/testdb: miniClient starts a miniredis
// for tb; serverClient and clusterClient return clients of the real Redis
// server and Cluster, or skip.
var (
	miniClient    = testdb.Miniredis
	serverClient  = testdb.RedisServer
	clusterClient = testdb.RedisCluster
)

// newStore returns a Store on c under a prefix of its own, whose keys are
// deleted when tb ends. single chooses how pointer keys are written.
func newStore(tb testing.TB, c redis.UniversalClient, single bool) *Store {
	tb.Helper()
	s, err := New(c, Options{Prefix: testdb.RedisPrefix(tb, c)})
	require.NoError(tb, err)
	s.single = single
	return s
}

// assertNoKey asserts that s's Redis holds no key named key.
func assertNoKey(t testing.TB, s *Store, key string, msgAndArgs ...any) {
	t.Helper()
	n, err := s.c.Exists(t.Context(), key).Result()
	require.NoError(t, err)
	assert.Zero(t, n, msgAndArgs...)
}
