package mongostore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
)

// faultTimeout is the faulty store's per-operation timeout: longer than
// RunFaults' default, as an operation by username takes up to three round
// trips on FerretDB (name pointers) and the test server is shared with the
// other packages' tests.
const faultTimeout = time.Second

// The fault tests put a toxiproxy between the service and the test server.
func TestFaults(t *testing.T) {
	target := serverAddr(t)
	servicetest.RunFaults(t, servicetest.FaultTarget{Upstreams: []string{target}, Timeout: faultTimeout, NewStores: func(tb testing.TB, proxied map[string]string) (storage.Store, storage.Store) {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + proxied[target] + "/?directConnection=true"))
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = c.Disconnect(context.Background()) })
		// The direct store creates the indexes, with the tests' generous
		// timeout; the faulty one finds them there.
		db := newDB(tb, client(tb))
		direct, err := New(tb.Context(), db, Options{Timeout: testTimeout})
		require.NoError(tb, err)
		faulty, err := New(tb.Context(), c.Database(db.Name()), Options{Timeout: faultTimeout})
		require.NoError(tb, err)
		return faulty, direct
	}})
}
