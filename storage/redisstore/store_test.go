package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

// The conformance suite runs on miniredis always, and on a real Redis
// server and a real Redis Cluster when scripts/test.sh has started them:
//
//	ORGADMIN_REDIS_ADDR     host:port of a Redis server
//	ORGADMIN_REDIS_CLUSTER  comma-separated host:port of Cluster masters

func TestMiniredis(t *testing.T) {
	storagetest.Run(t, func(tb testing.TB) storage.Store {
		return newStore(tb, miniClient(tb), true)
	})
}

// TestMiniredisClusterWrites runs the suite with the writes a Cluster
// makes (pointer keys reserved and removed around the org's script), on
// one server, so that path is tested by a plain go test too.
func TestMiniredisClusterWrites(t *testing.T) {
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

// miniClient starts a miniredis for tb and returns a client of it.
func miniClient(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	m := miniredis.RunT(tb)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// serverClient returns a client of the real Redis server, or skips.
func serverClient(tb testing.TB) *redis.Client {
	tb.Helper()
	addr := os.Getenv("ORGADMIN_REDIS_ADDR")
	if addr == "" {
		tb.Skip("ORGADMIN_REDIS_ADDR not set; scripts/test.sh starts a Redis server")
	}
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// clusterClient returns a client of the real Redis Cluster, or skips.
func clusterClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	addrs := os.Getenv("ORGADMIN_REDIS_CLUSTER")
	if addrs == "" {
		tb.Skip("ORGADMIN_REDIS_CLUSTER not set; scripts/test.sh starts a Redis Cluster")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// newStore returns a Store on c under a prefix of its own, whose keys are
// deleted when tb ends. single chooses how pointer keys are written.
func newStore(tb testing.TB, c redis.UniversalClient, single bool) *Store {
	tb.Helper()
	prefix := "test:" + randomHex(8) + ":"
	s, err := New(c, Options{Prefix: prefix})
	require.NoError(tb, err)
	s.single = single
	tb.Cleanup(func() { deleteKeys(tb, c, prefix) })
	return s
}

// deleteKeys deletes every key under prefix, on every master.
func deleteKeys(tb testing.TB, c redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, del)
	case *redis.Client:
		err = del(ctx, c)
	}
	if err != nil {
		tb.Errorf("delete keys under %s: %v", prefix, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
