package baseline

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/orgadmin/orgadmin/internal/testdb"
)

const floorToken = "floor-secret-token"

// floorAnswers are an answer of each workload, each of its own, one with
// a status other than 200 and one with a Content-Type other than JSON's,
// so that a floor writing the wrong one, or a fixed one, is seen.
var floorAnswers = map[string]Answer{
	ListTokens:  {Status: 200, ContentType: "application/json", Body: []byte(`{"tokens":[{"id":"t1"}]}`)},
	GetConfig:   {Status: 200, ContentType: "application/json", Body: []byte(`{"read_write":{"instance_size":"standard"}}`)},
	SetConfig:   {Status: 200, ContentType: "application/json; charset=utf-8", Body: []byte(`{"read_write":{"instance_size":"jumbo"}}`)},
	CreateToken: {Status: 201, ContentType: "application/json", Body: []byte(`{"token":"oat_x","id":"t2"}`)},
	ListUsers:   {Status: 200, ContentType: "application/json", Body: []byte(`{"users":[],"total_count":1,"next_page_token":null}`)},
}

// floorRequests are a request of each workload, as the load harness sends
// them.
var floorRequests = map[string]struct{ method, path, body string }{
	ListTokens:  {"GET", "/v1/users/admin/tokens", ""},
	GetConfig:   {"GET", "/v1/users/sa00001/instances", ""},
	SetConfig:   {"PUT", "/v1/users/sa00002/instances", `{"config":{"read_write":{"instance_size":"jumbo"}}}`},
	CreateToken: {"POST", "/v1/users/sa00003/tokens", `{"name":"load","ttl":86400}`},
	ListUsers:   {"GET", "/v1/users?limit=100&page_token=abc", ""},
}

// send makes one request of a real HTTP client to srv and returns the
// status, Content-Type and body.
func send(tb testing.TB, srv *httptest.Server, method, path, token, body string) Answer {
	tb.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(tb, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return Answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}
}

// testFloor checks that the floor of lookup serves each workload's route
// with the workload's answer to the known bearer, and 401 to another; it
// calls lookups, when not nil, to count the store's lookups per request.
func testFloor(t *testing.T, lookup Lookup, lookups func() int64) {
	t.Helper()
	h, err := Floor(floorAnswers, lookup)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for w, r := range floorRequests {
		var before int64
		if lookups != nil {
			before = lookups()
		}
		got := send(t, srv, r.method, r.path, floorToken, r.body)
		want := floorAnswers[w]
		assert.Equal(t, want.Status, got.Status, w)
		assert.Equal(t, want.ContentType, got.ContentType, w)
		assert.Equal(t, string(want.Body), string(got.Body), w)
		if lookups != nil {
			assert.Equal(t, int64(1), lookups()-before, "%s: one lookup per request", w)
		}
		for _, token := range []string{"another-token", ""} {
			got := send(t, srv, r.method, r.path, token, r.body)
			assert.Equal(t, http.StatusUnauthorized, got.Status, "%s with bearer %q", w, token)
			assert.Empty(t, got.Body, w)
		}
	}
	req, err := http.NewRequest("GET", srv.URL+"/v1/users/admin/tokens", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic "+floorToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "another scheme")
}

func TestFloorMap(t *testing.T) {
	testFloor(t, MapLookup(sha256.Sum256([]byte("other")), sha256.Sum256([]byte(floorToken))), nil)
}

func TestFloorRoutesOnlyTheWorkloads(t *testing.T) {
	h, err := Floor(floorAnswers, MapLookup(sha256.Sum256([]byte(floorToken))))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	assert.Equal(t, http.StatusNotFound, send(t, srv, "GET", "/v1/active_accounts", floorToken, "").Status)
	assert.Equal(t, http.StatusNotFound, send(t, srv, "GET", "/v1/users/a/b/tokens", floorToken, "").Status)
	assert.Equal(t, http.StatusMethodNotAllowed, send(t, srv, "DELETE", "/v1/users/admin/tokens", floorToken, "").Status)
	assert.Equal(t, http.StatusMethodNotAllowed, send(t, srv, "POST", "/v1/users", floorToken, "{}").Status)

	// Only the workloads it has answers for.
	h, err = Floor(map[string]Answer{GetConfig: floorAnswers[GetConfig]}, MapLookup(sha256.Sum256([]byte(floorToken))))
	require.NoError(t, err)
	one := httptest.NewServer(h)
	defer one.Close()
	assert.Equal(t, http.StatusOK, send(t, one, "GET", "/v1/users/sa00001/instances", floorToken, "").Status)
	assert.Equal(t, http.StatusMethodNotAllowed, send(t, one, "PUT", "/v1/users/sa00001/instances", floorToken, "{}").Status)
	assert.Equal(t, http.StatusNotFound, send(t, one, "GET", "/v1/users", floorToken, "").Status)
}

func TestFloorBoundsTheBody(t *testing.T) {
	h, err := Floor(floorAnswers, MapLookup(sha256.Sum256([]byte(floorToken))))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	ok := send(t, srv, "POST", "/v1/users/sa00001/tokens", floorToken, strings.Repeat(" ", MaxBody))
	assert.Equal(t, floorAnswers[CreateToken].Status, ok.Status, "a body of MaxBody bytes is read")
	big := send(t, srv, "POST", "/v1/users/sa00001/tokens", floorToken, strings.Repeat(" ", MaxBody+1))
	assert.Equal(t, http.StatusBadRequest, big.Status)
	assert.Contains(t, string(big.Body), "request body")
}

func TestFloorRefusesWhatItCannotServe(t *testing.T) {
	lookup := MapLookup()
	_, err := Floor(map[string]Answer{"delete-user": {Status: 200}}, lookup)
	assert.ErrorContains(t, err, `unknown workload "delete-user"`)
	_, err = Floor(map[string]Answer{ListTokens: {Status: 0}}, lookup)
	assert.ErrorContains(t, err, "list-tokens: status 0")
}

func TestFloorRedisGet(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	require.NoError(t, c.Ping(context.Background()).Err(), "connect before counting")
	require.NoError(t, mr.Set("p:"+hexDigest(floorToken), "admin"))
	require.NoError(t, mr.Set(hexDigest("another-token"), "admin"), "outside the prefix")
	testFloor(t, RedisLookup(c, "p:"), func() int64 { return int64(mr.CommandCount()) })

	// A Redis that fails is a 500.
	h, err := Floor(floorAnswers, RedisLookup(c, "p:"))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	mr.Close()
	assert.Equal(t, http.StatusInternalServerError, send(t, srv, "GET", "/v1/users", floorToken, "").Status)
}

func TestFloorSQLLookup(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "floor.db"))
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(fmt.Sprintf(FloorTable, "BLOB"))
	require.NoError(t, err)
	d := sha256.Sum256([]byte(floorToken))
	_, err = db.Exec("INSERT INTO floor_digests (digest, username) VALUES (?1, ?2)", d[:], "admin")
	require.NoError(t, err)
	lookup, err := SQLLookup(db, "SELECT username FROM floor_digests WHERE digest = ?1")
	require.NoError(t, err)
	testFloor(t, lookup, nil)

	h, err := Floor(floorAnswers, lookup)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	require.NoError(t, db.Close())
	assert.Equal(t, http.StatusInternalServerError, send(t, srv, "GET", "/v1/users", floorToken, "").Status, "a database that fails")
	_, err = SQLLookup(db, "SELECT username FROM floor_digests WHERE digest = ?1")
	assert.Error(t, err, "a closed database")
}

// TestFloorMongoFind runs on the MongoDB-wire server of
// ORGADMIN_MONGO_URI, and counts the find commands the floor sends.
func TestFloorMongoFind(t *testing.T) {
	uri := testdb.MongoURI(t)
	var finds atomic.Int64
	monitor := &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		if e.CommandName == "find" {
			finds.Add(1)
		}
	}}
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(testdb.Timeout).SetMonitor(monitor))
	require.NoError(t, err)
	// Registered first, so it runs after MongoDatabase's drop.
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	coll := testdb.MongoDatabase(t, c).Collection("floor")
	_, err = coll.InsertOne(t.Context(), bson.D{{Key: "_id", Value: hexDigest(floorToken)}, {Key: "username", Value: "admin"}})
	require.NoError(t, err)
	testFloor(t, MongoLookup(coll), finds.Load)
}
