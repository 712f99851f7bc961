package sqlstore

import (
	"net/url"
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

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
		NewStores: func(tb testing.TB, proxied map[string]string) (storage.Store, storage.Store) {
			dsn := testdb.Postgres(tb)
			direct := openTest(tb, dsn)
			u, err := url.Parse(dsn)
			if err != nil {
				tb.Fatal(err)
			}
			u.Host = proxied[base.Host]
			faulty, err := Open(tb.Context(), u.String(), Options{Timeout: servicetest.FaultTimeout})
			if err != nil {
				tb.Fatalf("Open through the proxy: %v", err)
			}
			tb.Cleanup(faulty.Close)
			return faulty, direct
		},
	})
}
