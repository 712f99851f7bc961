package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/sharedtest"
	"github.com/orgadmin/orgadmin/storage"
)

func TestSharedMiniredis(t *testing.T) {
	sharedtest.Run(t, func(tb testing.TB) (storage.Store, storage.Store) { return storePair(tb, miniClient(tb), true) })
}

func TestSharedRedisServer(t *testing.T) {
	c := serverClient(t)
	sharedtest.Run(t, func(tb testing.TB) (storage.Store, storage.Store) { return storePair(tb, c, true) })
}

func TestSharedRedisCluster(t *testing.T) {
	c := clusterClient(t)
	sharedtest.Run(t, func(tb testing.TB) (storage.Store, storage.Store) { return storePair(tb, c, false) })
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
