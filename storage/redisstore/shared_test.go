package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

func TestSharedMiniredis(t *testing.T) {
	servicetest.RunShared(t, func(tb testing.TB) (storage.Store, storage.Store) { return storePair(tb, miniClient(tb), true) })
}

func TestSharedRedisServer(t *testing.T) {
	c := serverClient(t)
	servicetest.RunShared(t, func(tb testing.TB) (storage.Store, storage.Store) { return storePair(tb, c, true) })
}

func TestSharedRedisCluster(t *testing.T) {
	c := clusterClient(t)
	servicetest.RunShared(t, func(tb testing.TB) (storage.Store, storage.Store) { return storePair(tb, c, false) })
}

func TestServiceRacesMiniredis(t *testing.T) {
	testdb.SkipStandIn(t)
	servicetest.RunRaces(t, func(tb testing.TB) storage.Store { return newStore(tb, miniClient(tb), true) })
}

func TestServiceRacesRedisServer(t *testing.T) {
	c := serverClient(t)
	servicetest.RunRaces(t, func(tb testing.TB) storage.Store { return newStore(tb, c, true) })
}

func TestServiceRacesRedisCluster(t *testing.T) {
	c := clusterClient(t)
	servicetest.RunRaces(t, func(tb testing.TB) storage.Store { return newStore(tb, c, false) })
}

// storePair returns two Stores on c under one fresh prefix, as two
// processes sharing one Redis would hold them.
func storePair(tb testing.TB, c redis.UniversalClient, single bool) (storage.Store, storage.Store) {
	a := newStore(tb, c, single)
	b, err := New(c, Options{Prefix: a.prefix})
	require.NoError(tb, err)
	b.single = single
	return a, b
}
