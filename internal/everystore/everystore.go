// Package everystore runs a test on every kind of store: memory and a
// SQLite file always; a real Redis server, a Redis Cluster, a
// MongoDB-wire server and a PostgreSQL server when the environment names
// them (see internal/testdb); and miniredis, which stands in for the
// Redis server and Cluster unless it names both (testdb.SkipStandIn).
// Each kind opens fresh stores of its own and can show everything a store
// holds, so that a test can look for what must never be stored.
package everystore

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
	"github.com/orgadmin/orgadmin/storage/mongostore"
	"github.com/orgadmin/orgadmin/storage/redisstore"
	"github.com/orgadmin/orgadmin/storage/sqlstore"
)

// Kind is one kind of store, with the server it runs on (if any)
// connected.
type Kind struct {
	// Name is the kind's subtest name: memory, miniredis, redis,
	// cluster, mongo, sqlite or postgres.
	Name string
	// Slow is true for MongoDB, which tests run on FerretDB: every
	// operation costs milliseconds there, and every query but an id
	// lookup scans its whole collection. Tests that send many requests
	// send fewer to a slow kind.
	Slow bool

	open func(tb testing.TB) Opened
}

// Open returns an empty store of the kind, which no other Open shares,
// removed (its keys deleted, its database dropped) when tb ends.
func (k Kind) Open(tb testing.TB) Opened {
	tb.Helper()
	return k.open(tb)
}

// Opened is a store opened by Kind.Open.
type Opened struct {
	// Store is the store as its adapter made it, not wrapped, so that it
	// has every optional capability the adapter has.
	Store    storage.Store
	contents func(ctx context.Context) ([]string, error)
}

// Contents returns everything the store holds, as texts: each key of a
// Redis with its type and values, each document of a MongoDB database (as
// extended JSON and as raw BSON), each row of every SQL table (and a
// SQLite database's file and write-ahead log, whole), and for memory every string, byte and
// number reachable from the Store value. It fails tb when the store cannot
// be read.
func (o Opened) Contents(tb testing.TB) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testdb.Timeout)
	defer cancel()
	out, err := o.contents(ctx)
	if err != nil {
		tb.Fatalf("read the store's contents: %v", err)
	}
	return out
}

// Run runs test once per kind of store, each in a subtest named after the
// kind; the kinds whose server is not configured skip with a one-line
// reason. The subtests run one after another; test may make its own
// subtests parallel.
func Run(t *testing.T, test func(t *testing.T, k Kind)) {
	t.Run("memory", func(t *testing.T) { test(t, Kind{Name: "memory", open: openMemory}) })
	t.Run("miniredis", func(t *testing.T) {
		testdb.SkipStandIn(t)
		test(t, redisKind("miniredis", testdb.Miniredis(t)))
	})
	t.Run("redis", func(t *testing.T) { test(t, redisKind("redis", testdb.RedisServer(t))) })
	t.Run("cluster", func(t *testing.T) { test(t, redisKind("cluster", testdb.RedisCluster(t))) })
	t.Run("mongo", func(t *testing.T) {
		dbs := testdb.NewMongoDatabases(t, testdb.Mongo(t))
		test(t, Kind{Name: "mongo", Slow: true, open: func(tb testing.TB) Opened { return openMongo(tb, dbs) }})
	})
	t.Run("sqlite", func(t *testing.T) {
		pool := &sqlStores{owner: t, newDSN: testdb.SQLite}
		test(t, Kind{Name: "sqlite", open: pool.open})
	})
	t.Run("postgres", func(t *testing.T) {
		testdb.PostgresURL(t)
		pool := &sqlStores{owner: t, newDSN: testdb.Postgres}
		test(t, Kind{Name: "postgres", open: pool.open})
	})
}

// sqlStores hands out the Stores of one kind's test on a SQL database,
// each on a database of its own (a SQLite file, a PostgreSQL schema) that
// newDSN makes: a Store's database is emptied when the test that had it
// ends, and the Store handed out again, so that a test of many small
// fixtures does not pay for making tables, connecting and preparing
// statements each time (tens of milliseconds a Store, and much more for
// SQLite under the race detector). They are closed, and their databases
// removed, when owner ends. A Store caches nothing, so an emptied one is
// as fresh as a new one.
type sqlStores struct {
	owner  testing.TB
	newDSN func(testing.TB) string
	mu     sync.Mutex
	free   []sqlStore
}

type sqlStore struct {
	dsn string
	s   *sqlstore.Store
}

// open returns an empty Store of tb's own until tb ends.
func (p *sqlStores) open(tb testing.TB) Opened {
	tb.Helper()
	p.mu.Lock()
	var e sqlStore
	if n := len(p.free); n > 0 {
		e, p.free = p.free[n-1], p.free[:n-1]
	}
	p.mu.Unlock()
	if e.s == nil {
		e.dsn = p.newDSN(p.owner)
		ctx, cancel := context.WithTimeout(context.Background(), testdb.Timeout)
		defer cancel()
		s, err := sqlstore.Open(ctx, e.dsn, sqlstore.Options{Timeout: testdb.Timeout, MaxConns: 4})
		if err != nil {
			tb.Fatalf("sqlstore.Open: %v", err)
		}
		p.owner.Cleanup(s.Close)
		e.s = s
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testdb.Timeout)
		defer cancel()
		if err := testdb.EmptySQL(ctx, e.dsn); err != nil {
			tb.Errorf("empty %s: %v", e.dsn, err)
			return
		}
		p.mu.Lock()
		p.free = append(p.free, e)
		p.mu.Unlock()
	})
	return Opened{Store: e.s, contents: func(ctx context.Context) ([]string, error) {
		return testdb.SQLContents(ctx, e.dsn)
	}}
}

func openMemory(testing.TB) Opened {
	s := memstore.New()
	return Opened{Store: s, contents: func(ctx context.Context) ([]string, error) {
		// A read under the Store's lock orders every earlier write before
		// the walk, for the race detector.
		_, _ = s.GetOrg(ctx, "")
		return []string{walk(s)}, nil
	}}
}

// redisKind is a kind whose stores live on c, each under a key prefix of
// its own.
func redisKind(name string, c redis.UniversalClient) Kind {
	return Kind{Name: name, open: func(tb testing.TB) Opened {
		tb.Helper()
		prefix := testdb.RedisPrefix(tb, c)
		s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, Timeout: testdb.Timeout})
		if err != nil {
			tb.Fatalf("redisstore.New: %v", err)
		}
		return Opened{Store: s, contents: func(ctx context.Context) ([]string, error) {
			return testdb.RedisContents(ctx, c, prefix)
		}}
	}}
}

// openMongo returns a store on an empty database of its own until tb
// ends.
func openMongo(tb testing.TB, dbs *testdb.MongoDatabases) Opened {
	tb.Helper()
	db := dbs.Database(tb)
	s, err := mongostore.New(tb.Context(), db, mongostore.Options{Timeout: testdb.Timeout})
	if err != nil {
		tb.Fatalf("mongostore.New: %v", err)
	}
	return Opened{Store: s, contents: func(ctx context.Context) ([]string, error) {
		return testdb.MongoContents(ctx, db)
	}}
}
