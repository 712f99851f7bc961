// Package testdb connects tests to the database servers they run on: an
// in-process miniredis and SQLite files always, and the real Redis server,
// Redis Cluster, MongoDB-wire server and PostgreSQL server that
// scripts/services.sh starts and names in the environment. A test whose server is not configured skips, saying which
// variable is unset, so that a plain go test passes without servers.
//
// It knows only the drivers, never the store adapters, so that the
// adapters' own tests can use it too.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The variables that name the test servers.
const (
	// RedisAddrEnv is host:port of a Redis server.
	RedisAddrEnv = "ORGADMIN_REDIS_ADDR"
	// RedisClusterEnv is the comma-separated host:port of Redis Cluster
	// masters.
	RedisClusterEnv = "ORGADMIN_REDIS_CLUSTER"
	// MongoURIEnv is the URI of a MongoDB-wire server.
	MongoURIEnv = "ORGADMIN_MONGO_URI"
)

// Timeout bounds each call the helpers make, and is the per-operation
// timeout the tests give their MongoDB clients: generous, as the race
// detector and a loaded test server slow everything.
const Timeout = 30 * time.Second

// SkipStandIn skips tb, a run on miniredis of what runs on a real Redis
// server and a real Cluster too, when the environment names both (as
// scripts/test.sh does): miniredis stands in for them in a plain go test.
func SkipStandIn(tb testing.TB) {
	tb.Helper()
	if os.Getenv(RedisAddrEnv) != "" && os.Getenv(RedisClusterEnv) != "" {
		tb.Skip("a Redis server and a Cluster are configured; miniredis stands in for them only where they are not")
	}
}

// Miniredis starts an in-process Redis for tb and returns a client of it;
// both are closed when tb ends.
func Miniredis(tb testing.TB) *redis.Client {
	tb.Helper()
	m := miniredis.RunT(tb)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisServer returns a client of the Redis server RedisAddrEnv names,
// closed when tb ends, or skips tb.
func RedisServer(tb testing.TB) *redis.Client {
	tb.Helper()
	addr := os.Getenv(RedisAddrEnv)
	if addr == "" {
		tb.Skip(RedisAddrEnv + " not set; scripts/test.sh starts a Redis server")
	}
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisCluster returns a client of the Redis Cluster RedisClusterEnv
// names, closed when tb ends, or skips tb.
func RedisCluster(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	addrs := os.Getenv(RedisClusterEnv)
	if addrs == "" {
		tb.Skip(RedisClusterEnv + " not set; scripts/test.sh starts a Redis Cluster")
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisPrefix returns a key prefix no other call returns, and deletes
// every key under it from c when tb ends.
func RedisPrefix(tb testing.TB, c redis.UniversalClient) string {
	tb.Helper()
	prefix := "test:" + RandomHex(8) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := DeleteRedisKeys(ctx, c, prefix); err != nil {
			tb.Errorf("delete keys under %s: %v", prefix, err)
		}
	})
	return prefix
}

// DeleteRedisKeys deletes every key under prefix, on every master of a
// Cluster.
func DeleteRedisKeys(ctx context.Context, c redis.UniversalClient, prefix string) error {
	return eachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := n.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	})
}

// RedisContents returns, for every key under prefix, one text holding the
// key, its type and every member, field and value it holds, in whatever
// order SCAN finds them.
func RedisContents(ctx context.Context, c redis.UniversalClient, prefix string) ([]string, error) {
	var (
		mu  sync.Mutex // a Cluster's masters are read concurrently
		out []string
	)
	err := eachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			s, err := redisValue(ctx, n, iter.Val())
			if err != nil {
				return fmt.Errorf("read %s: %w", iter.Val(), err)
			}
			mu.Lock()
			out = append(out, s)
			mu.Unlock()
		}
		return iter.Err()
	})
	return out, err
}

// redisValue returns the text of key: its name, type and contents.
func redisValue(ctx context.Context, n *redis.Client, key string) (string, error) {
	typ, err := n.Type(ctx, key).Result()
	if err != nil {
		return "", err
	}
	var v any
	switch typ {
	case "none": // expired since SCAN saw it
	case "string":
		v, err = n.Get(ctx, key).Result()
	case "hash":
		v, err = n.HGetAll(ctx, key).Result()
	case "list":
		v, err = n.LRange(ctx, key, 0, -1).Result()
	case "set":
		v, err = n.SMembers(ctx, key).Result()
	case "zset":
		v, err = n.ZRangeWithScores(ctx, key, 0, -1).Result()
	case "stream":
		v, err = n.XRange(ctx, key, "-", "+").Result()
	default:
		return "", fmt.Errorf("unexpected type %s", typ)
	}
	if err != nil && err != redis.Nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %q", key, typ, fmt.Sprint(v)), nil
}

// eachNode runs f on c, or on every master of a Cluster, concurrently.
func eachNode(ctx context.Context, c redis.UniversalClient, f func(context.Context, *redis.Client) error) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, f)
	case *redis.Client:
		return f(ctx, c)
	default:
		return fmt.Errorf("unsupported client %T", c)
	}
}

// MongoURI returns the URI MongoURIEnv holds, or skips tb.
func MongoURI(tb testing.TB) string {
	tb.Helper()
	uri := os.Getenv(MongoURIEnv)
	if uri == "" {
		tb.Skip(MongoURIEnv + " not set; scripts/test.sh starts a MongoDB-wire server")
	}
	return uri
}

// Mongo returns a client of the server MongoURIEnv names, with Timeout
// for each operation, disconnected when tb ends; or skips tb.
func Mongo(tb testing.TB) *mongo.Client {
	tb.Helper()
	uri := MongoURI(tb)
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(Timeout))
	if err != nil {
		tb.Fatalf("connect to %s: %v", uri, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// MongoDatabase returns a database of c no other call returns, dropped
// when tb ends.
func MongoDatabase(tb testing.TB, c *mongo.Client) *mongo.Database {
	tb.Helper()
	db := c.Database("orgadmin_test_" + RandomHex(8))
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			tb.Errorf("drop database %s: %v", db.Name(), err)
		}
	})
	return db
}

// MongoDatabases hands out empty databases of one client, each to one
// test until it ends: a database is emptied (every document of every
// collection deleted) when the test that had it ends, and handed out
// again, so that a test of many small fixtures does not pay for making a
// database and its collections and indexes each time (tens of
// milliseconds a store on FerretDB, where each is a SQLite table). The
// databases are dropped when owner ends.
type MongoDatabases struct {
	owner testing.TB
	c     *mongo.Client
	mu    sync.Mutex
	free  []*mongo.Database
}

// NewMongoDatabases returns a MongoDatabases of c whose databases are
// dropped when owner ends.
func NewMongoDatabases(owner testing.TB, c *mongo.Client) *MongoDatabases {
	return &MongoDatabases{owner: owner, c: c}
}

// Database returns an empty database that no other test holds until tb
// ends. A store opened on it must have stopped writing when tb ends.
func (p *MongoDatabases) Database(tb testing.TB) *mongo.Database {
	tb.Helper()
	p.mu.Lock()
	var db *mongo.Database
	if n := len(p.free); n > 0 {
		db, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if db == nil {
		db = MongoDatabase(p.owner, p.c)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := emptyMongo(ctx, db); err != nil {
			tb.Errorf("empty %s: %v", db.Name(), err)
			return
		}
		p.mu.Lock()
		p.free = append(p.free, db)
		p.mu.Unlock()
	})
	return db
}

// emptyMongo deletes every document of every collection of db.
func emptyMongo(ctx context.Context, db *mongo.Database) error {
	names, err := db.ListCollectionNames(ctx, map[string]any{})
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := db.Collection(name).DeleteMany(ctx, map[string]any{}); err != nil {
			return fmt.Errorf("empty %s: %w", name, err)
		}
	}
	return nil
}

// MongoContents returns every document of every collection of db, each
// twice: as the collection's name followed by the document in extended
// JSON, and as its raw BSON bytes.
func MongoContents(ctx context.Context, db *mongo.Database) ([]string, error) {
	names, err := db.ListCollectionNames(ctx, map[string]any{})
	if err != nil {
		return nil, fmt.Errorf("list collections of %s: %w", db.Name(), err)
	}
	var out []string
	for _, name := range names {
		cur, err := db.Collection(name).Find(ctx, map[string]any{})
		if err != nil {
			return nil, fmt.Errorf("find in %s: %w", name, err)
		}
		for cur.Next(ctx) {
			out = append(out, name+" "+cur.Current.String(), string(cur.Current))
		}
		err = cur.Err()
		_ = cur.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return out, nil
}

// RandomHex returns 2n random hex digits.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
