package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// clusterAddrs splits -redis-cluster (HOST:PORT,HOST:PORT,...) into the
// addresses of the Cluster's nodes.
func clusterAddrs(list string) []string {
	return splitList(list)
}

// clusterStoreURI is the server's -store for the Cluster of addrs, as
// examples/server takes it: redis://HOST:PORT?addr=HOST2:PORT2&addr=...
// (a Cluster of one node names it twice: the addr parameter is what
// makes the URL a Cluster's).
func clusterStoreURI(addrs []string) string {
	more := addrs[1:]
	if len(more) == 0 {
		more = addrs
	}
	return "redis://" + addrs[0] + "?" + url.Values{"addr": more}.Encode()
}

// openCluster connects to the Cluster of -redis-cluster, which must hold
// no keys: a Cluster has database 0 only, so the harness empties the
// whole Cluster at the end. Both builds' stores share it, each with an
// organization of its own (see storeTarget), and so does the floor's key.
func (h *harness) openCluster(ctx context.Context) (*redis.ClusterClient, error) {
	addrs := clusterAddrs(h.opt.redisCluster)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	var keys atomic.Int64
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		keys.Add(n)
		return err
	})
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("redis cluster %s: %w", strings.Join(addrs, ","), err)
	}
	if n := keys.Load(); n != 0 {
		_ = c.Close()
		return nil, fmt.Errorf("redis cluster %s holds %d keys; the harness empties the Cluster at the end, so give it an empty one", strings.Join(addrs, ","), n)
	}
	return c, nil
}

// clusterFloor starts the floor of the Cluster store: one GET through a
// Cluster client, of a key the floor's token's digest names.
func (h *harness) clusterFloor(ctx context.Context) (*target, error) {
	if err := h.cluster.Set(ctx, h.redisKey+digestHex(h.floorToken), "admin", 0).Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", clusterName, err)
	}
	return h.floorTarget(ctx, clusterName, true, "-redis-cluster", h.opt.redisCluster, "-key", h.redisKey)
}

// emptyCluster removes every key of every master of the Cluster.
func emptyCluster(ctx context.Context, c *redis.ClusterClient) error {
	return c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.FlushDB(ctx).Err()
	})
}
