package mongostore

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

// testTimeout is the per-operation timeout of the stores the tests use:
// generous, as the race detector and a loaded test server slow everything.
const testTimeout = testdb.Timeout

// testClient is the client every test of the package shares.
var testClient struct {
	once sync.Once
	c    *mongo.Client
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testClient.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = testClient.c.Disconnect(ctx)
		cancel()
	}
	os.Exit(code)
}

// testURI returns the server URI the tests use, or skips t; newDB returns
// a database of its own for t, dropped when t ends (internal/testdb).
var (
	testURI = testdb.MongoURI
	newDB   = testdb.MongoDatabase
)

// client returns the shared client, connected to the test server.
func client(t testing.TB) *mongo.Client {
	t.Helper()
	uri := testURI(t)
	testClient.once.Do(func() {
		testClient.c, testClient.err = mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(testTimeout))
	})
	if testClient.err != nil {
		t.Fatalf("connect to %s: %v", uri, testClient.err)
	}
	return testClient.c
}

// newTestStore returns a Store on a database of its own.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	return storeOn(t, newDB(t, client(t)))
}

// storeOn returns a Store on db.
func storeOn(t testing.TB, db *mongo.Database) *Store {
	t.Helper()
	s, err := New(t.Context(), db, Options{Timeout: testTimeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	testURI(t)
	t.Parallel() // each store has a database of its own
	// The suite's hundreds of stores share emptied databases, rather than
	// each making a database, its collections and its indexes.
	dbs := testdb.NewMongoDatabases(t, client(t))
	storagetest.Run(t, func(t testing.TB) storage.Store { return storeOn(t, dbs.Database(t)) }, suiteOptions(t)...)
}

// suiteOptions are the options of the conformance suite on the store:
// the size of its Model group (modelOps), and the subtests the store is
// known to fail: on any server, concurrent embed session creations can pass the limit
// (see CreateEmbedSession), and concurrent changes of one user can have
// their events in another order than the changes; on FerretDB v1, an update is a read of the
// document and then a write of it by id, so a compare-and-set racing
// another can pass its filter on a document the other is about to change,
// and both succeed.
func suiteOptions(t testing.TB) []storagetest.Option {
	known := []storagetest.Option{
		storagetest.KnownDefect{Test: "Concurrency/CreateEmbedSessionLimit", Why: sessionLimitWhy},
		storagetest.KnownDefect{Test: "Concurrency/SetInstancesEventsInTheirOrder", Why: "an audited change is written in two steps " +
			"(the event, the change, its confirmation): the events of changes made at once can be confirmed in another order than the changes"},
		modelOps,
	}
	if !newTestStore(t).byPointer { // a real mongod
		return known
	}
	return append(known, storagetest.KnownDefect{Test: "Concurrency/SetPrivilegesSameRead", Why: ferretUpdateWhy})
}

// modelOps sizes the conformance suite's Model group for FerretDB, which
// takes about 10 ms per operation under the race detector, more as the
// collections grow: some 10 s for each of the two suites.
const modelOps = storagetest.ModelOps(300)

// sessionLimitWhy is why concurrent embed session creations can pass the
// limit.
const sessionLimitWhy = "the live embed sessions of a user are counted before the insert, not with it: " +
	"concurrent creations can pass the limit by the number running at once (CreateEmbedSession, README, MongoDB)"

// ferretUpdateWhy is why FerretDB v1 fails the races of a write of a user.
const ferretUpdateWhy = "FerretDB v1 runs an update as a read of the document and a write of it whole: " +
	"a write of a user racing another write of it can be lost (README, MongoDB)"

// TestConformanceOtherLookup runs the suite with the way of finding users
// by name that New did not choose for the test server (by name on
// FerretDB, through name pointers on MongoDB), so that both ways pass it
// on whichever server the tests use: the groups whose operations find a
// user by name or keep the names' pointers (a user's creation, change
// and deletion, ReadAccess, GetEmbedTarget, the events' confirmation),
// and the Model and Concurrency groups, which mix them all.
func TestConformanceOtherLookup(t *testing.T) {
	testURI(t)
	t.Parallel()
	dbs := testdb.NewMongoDatabases(t, client(t))
	opts := append(suiteOptions(t), storagetest.Groups{"Users", "DeleteUser", "Tokens", "ReadAccess", "Revoked",
		"EmbedSessions", "Events", "Concurrency", "Model"})
	if newTestStore(t).byPointer { // FerretDB v1, run as MongoDB is
		opts = append(opts, storagetest.KnownDefect{Test: "Concurrency/DeleteTokenSameToken",
			Why: "a token is taken with findAndModify where filters use indexes, which FerretDB v1 runs as a read and then a delete (takeToken)"})
	}
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s := storeOn(t, dbs.Database(t))
		s.byPointer = !s.byPointer
		return s
	}, opts...)
}

// Processes started together on one empty database each open a store:
// they make the same collections and indexes at once, and none fails for
// another's.
func TestNewConcurrentlyOnAnEmptyDatabase(t *testing.T) {
	for range 3 {
		db := newDB(t, client(t))
		errs := make(chan error, 4)
		for range cap(errs) {
			c := testdb.Mongo(t) // a process of its own
			go func() {
				_, err := New(t.Context(), c.Database(db.Name()), Options{Timeout: testTimeout})
				errs <- err
			}()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}
