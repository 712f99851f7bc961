package redisstore

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
)

// The fault tests put a toxiproxy between the service and the real Redis
// server, or each master of the real Cluster. The clients under test have
// go-redis's defaults, retries included, as a deployment would.

func TestFaultsRedisServer(t *testing.T) {
	t.Parallel() // mostly waiting on timeouts, like the Cluster's
	addr := os.Getenv("ORGADMIN_REDIS_ADDR")
	if addr == "" {
		t.Skip("ORGADMIN_REDIS_ADDR not set; scripts/test.sh starts a Redis server")
	}
	servicetest.RunFaults(t, servicetest.FaultTarget{
		Upstreams: []string{addr},
		NewStores: func(tb testing.TB, proxied map[string]string) (storage.Store, storage.Store) {
			c := redis.NewClient(&redis.Options{Addr: proxied[addr], ContextTimeoutEnabled: true})
			tb.Cleanup(func() { _ = c.Close() })
			direct := newStore(tb, serverClient(tb), true)
			faulty, err := New(c, Options{Prefix: direct.prefix, Timeout: servicetest.FaultTimeout})
			require.NoError(tb, err)
			return faulty, direct
		},
	})
}

// On a Cluster every node is reached through a proxy of its own: the
// client dials the proxy of whatever address the Cluster names (its slot
// map and MOVED answers carry the nodes' real addresses).
func TestFaultsRedisCluster(t *testing.T) {
	t.Parallel()
	addrs := os.Getenv("ORGADMIN_REDIS_CLUSTER")
	if addrs == "" {
		t.Skip("ORGADMIN_REDIS_CLUSTER not set; scripts/test.sh starts a Redis Cluster")
	}
	masters := strings.Split(addrs, ",")
	servicetest.RunFaults(t, servicetest.FaultTarget{
		Upstreams: masters,
		NewStores: func(tb testing.TB, proxied map[string]string) (storage.Store, storage.Store) {
			var d net.Dialer
			c := redis.NewClusterClient(&redis.ClusterOptions{
				Addrs:                 masters,
				ContextTimeoutEnabled: true,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					p, ok := proxied[addr]
					if !ok {
						return nil, &net.AddrError{Err: "a Cluster node without a proxy", Addr: addr}
					}
					return d.DialContext(ctx, network, p)
				},
			})
			tb.Cleanup(func() { _ = c.Close() })
			direct := newStore(tb, clusterClient(tb), false)
			faulty, err := New(c, Options{Prefix: direct.prefix, Timeout: servicetest.FaultTimeout})
			require.NoError(tb, err)
			return faulty, direct
		},
	})
}
