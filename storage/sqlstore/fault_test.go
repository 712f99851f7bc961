package sqlstore

import (
	"net/url"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// faultTimeout is the faulty store's per-operation timeout: longer than
// RunFaults' default, as a write takes several round trips (a
// transaction's statements, and a connection's start-up when the pool
// dials again after a fault), and the test server is shared with the
// other packages' tests, which may hold the machine's CPUs then (a
// healthy write sent again after a fault once failed at 300 ms, under
// -race, in a full run).
const faultTimeout = time.Second

// The fault tests put a toxiproxy between the service and the PostgreSQL
// server. The faulty store reaches the server through the proxy with a
// short timeout; the direct one reads the same schema.
func TestFaultsPostgres(t *testing.T) {
	base, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	servicetest.RunFaults(t, servicetest.FaultTarget{
		Upstreams: []string{base.Host},
		Timeout:   faultTimeout,
		NewStores: func(tb testing.TB, proxied map[string]string) (storage.Store, storage.Store) {
			dsn := testdb.Postgres(tb)
			direct := openTest(tb, dsn)
			u, err := url.Parse(dsn)
			if err != nil {
				tb.Fatal(err)
			}
			u.Host = proxied[base.Host]
			faulty, err := Open(tb.Context(), u.String(), Options{Timeout: faultTimeout})
			if err != nil {
				tb.Fatalf("Open through the proxy: %v", err)
			}
			tb.Cleanup(faulty.Close)
			return faulty, direct
		},
	})
}
