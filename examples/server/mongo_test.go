package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The server runs on MongoDB, and a second process on the same database
// starts without minting a second admin or failing (DESIGN §12).
func TestMongoStore(t *testing.T) {
	storeURI := mongoURI(t)
	const tok = "env-supplied-admin-token"
	env := map[string]string{"ORGADMIN_ADMIN_TOKEN": tok}
	base, _ := startServer(t, env, "-store", storeURI)
	st, body := call(t, "GET", base+"/healthz", "", "")
	require.Equal(t, 200, st, "healthz: %v", body)
	st, body = call(t, "POST", base+"/v1/users", tok, `{"username": "robot"}`)
	require.Equal(t, 200, st, "create service account: %v", body)

	again, _ := startServer(t, env, "-store", storeURI)
	st, body = call(t, "GET", again+"/v1/users", tok, "")
	require.Equal(t, 200, st, "list users: %v", body)
	assert.Equal(t, 2.0, body["total_count"], "admin and robot, once each")
}

func TestMongoStoreNeedsDatabase(t *testing.T) {
	err := run(context.Background(), []string{"-store", "mongodb://127.0.0.1:1"}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "name the database")
}

// mongoURI returns a mongodb:// URI of a fresh database on the test
// MongoDB-wire server, dropped when the test ends, or skips.
func mongoURI(t *testing.T) string {
	uri := os.Getenv("ORGADMIN_MONGO_URI")
	if uri == "" {
		t.Skip("ORGADMIN_MONGO_URI not set; scripts/test.sh starts a MongoDB-wire server")
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.Skipf("ORGADMIN_MONGO_URI is not a single-host URI: %v", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	u.Path = "/orgadmin_example_" + hex.EncodeToString(b[:])
	storeURI := u.String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := mongo.Connect(options.Client().ApplyURI(storeURI))
		require.NoError(t, err)
		defer func() { _ = c.Disconnect(ctx) }()
		require.NoError(t, c.Database(u.Path[1:]).Drop(ctx))
	})
	return storeURI
}
