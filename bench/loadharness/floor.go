package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/internal/baseline"
)

// maxAnswers bounds the answers a floor reads on its standard input.
const maxAnswers = 16 << 20

// runFloor serves a floor until SIGTERM (baseline.Floor): the route of
// each workload, whose answer, captured from the server, it reads as a
// JSON object of workload name to baseline.Answer on its standard input
// (a created token's answer holds a token value, which the harness
// never writes to a file). It looks the bearer's digest up in a map
// (-digest), with one Redis GET (-redis, or -redis-cluster through a
// Cluster client), one MongoDB find by _id
// (-mongo) or one SQL query by primary key (-sql). It runs as a process
// of its own, pinned like the server, so both pay the same HTTP costs.
func runFloor(args []string, stdin io.Reader) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "address to listen on")
	digest := fs.String("digest", "", "hex SHA-256 of the one token it knows, in a map (without -redis, -redis-cluster, -mongo and -sql)")
	redisAddr := fs.String("redis", "", "Redis address: the digest is known when the key prefix+hex(digest) exists (one GET)")
	redisDB := fs.Int("redis-db", 0, "Redis database")
	cluster := fs.String("redis-cluster", "", "Redis Cluster nodes HOST:PORT,...: the digest is known when the key prefix+hex(digest) exists (one GET through a Cluster client)")
	key := fs.String("key", "", "Redis key prefix (-redis, -redis-cluster)")
	mongoURI := fs.String("mongo", "", "MongoDB URI: the digest is known when -mongo-db's -mongo-collection holds a document whose _id is hex(digest) (one FindOne)")
	mongoDB := fs.String("mongo-db", "", "MongoDB database")
	mongoColl := fs.String("mongo-collection", "floor", "MongoDB collection")
	sqlDSN := fs.String("sql", "", "postgres://… or sqlite:PATH: the digest is known when the table floor_digests holds it (one query by primary key)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxAnswers+1))
	if err != nil {
		return fmt.Errorf("reading the answers: %w", err)
	}
	if len(b) > maxAnswers {
		return fmt.Errorf("the answers on standard input exceed %d bytes", maxAnswers)
	}
	var answers map[string]baseline.Answer
	if err := json.Unmarshal(b, &answers); err != nil {
		return fmt.Errorf("the answers on standard input: %w", err)
	}
	if len(answers) == 0 {
		return errors.New("no answers on standard input")
	}

	var lookup baseline.Lookup
	switch {
	case *redisAddr != "":
		c := redis.NewClient(&redis.Options{Addr: *redisAddr, DB: *redisDB, ContextTimeoutEnabled: true})
		defer c.Close()
		lookup = baseline.RedisLookup(c, *key)
	case *cluster != "":
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs(*cluster), ContextTimeoutEnabled: true})
		defer c.Close()
		lookup = baseline.RedisLookup(c, *key)
	case *mongoURI != "":
		if *mongoDB == "" {
			return errors.New("-mongo needs -mongo-db")
		}
		// As examples/server connects its store.
		c, err := mongo.Connect(options.Client().ApplyURI(*mongoURI).
			SetServerSelectionTimeout(5 * time.Second).SetConnectTimeout(5 * time.Second).SetTimeout(10 * time.Second))
		if err != nil {
			return fmt.Errorf("mongodb: %w", err)
		}
		defer func() { _ = c.Disconnect(context.Background()) }()
		lookup = baseline.MongoLookup(c.Database(*mongoDB).Collection(*mongoColl))
	case *sqlDSN != "":
		db, query, err := openLookup(*sqlDSN, true)
		if err != nil {
			return err
		}
		defer db.Close()
		if lookup, err = baseline.SQLLookup(db, query); err != nil {
			return err
		}
	default:
		sum, err := hex.DecodeString(*digest)
		if err != nil || len(sum) != sha256.Size {
			return fmt.Errorf("-digest %q: want 64 hex digits", *digest)
		}
		lookup = baseline.MapLookup([sha256.Size]byte(sum))
	}
	handler, err := baseline.Floor(answers, lookup)
	if err != nil {
		return err
	}

	// The same timeouts as the server's, which cost a deadline per request.
	srv := &http.Server{
		Addr:              *addr,
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		log.Print(err)
	}
	return nil
}
