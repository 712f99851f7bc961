package mongostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

// uriEnv names the variable that points the tests at a MongoDB-wire server.
const uriEnv = "ORGADMIN_MONGO_URI"

// testTimeout is the per-operation timeout of the stores the tests use:
// generous, as the race detector and a loaded test server slow everything.
const testTimeout = 30 * time.Second

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

// testURI returns the server URI the tests use, or skips t.
func testURI(t testing.TB) string {
	t.Helper()
	uri := os.Getenv(uriEnv)
	if uri == "" {
		t.Skip(uriEnv + " not set; scripts/test.sh starts a MongoDB-wire server")
	}
	return uri
}

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

// newDB returns a database of its own for t, dropped when t ends.
func newDB(t testing.TB, c *mongo.Client) *mongo.Database {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	db := c.Database("orgadmin_test_" + hex.EncodeToString(b[:]))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			t.Errorf("drop database %s: %v", db.Name(), err)
		}
	})
	return db
}

// newTestStore returns a Store on a database of its own.
func newTestStore(t testing.TB) *Store {
	t.Helper()
	db := newDB(t, client(t))
	s, err := New(t.Context(), db, Options{Timeout: testTimeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	testURI(t)
	storagetest.Run(t, func(t testing.TB) storage.Store { return newTestStore(t) })
}
