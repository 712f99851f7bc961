package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/orgadmin/orgadmin/internal/baseline"
	"github.com/redis/go-redis/v9"
)

// runBaseline serves the bare baseline until SIGTERM: parse the bearer,
// SHA-256 it, look the digest up (in a map, or with one Redis GET), and
// write the same JSON body the server answers. It runs as a process of its
// own, pinned like the server, so both pay the same HTTP costs.
func runBaseline(args []string) error {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "address to listen on")
	digest := fs.String("digest", "", "hex SHA-256 of the one token it knows")
	bodyFile := fs.String("body", "", "file holding the JSON body it answers")
	redisAddr := fs.String("redis", "", "Redis address: look the digest up there with one GET instead of in a map")
	redisDB := fs.Int("redis-db", 0, "Redis database")
	key := fs.String("key", "", "Redis key prefix; the body is stored under prefix+digest")
	sqlDSN := fs.String("sql", "", "postgres://… or sqlite:PATH: look the digest up there, in the table bare, with one query by primary key instead of in a map")
	if err := fs.Parse(args); err != nil {
		return err
	}
	body, err := os.ReadFile(*bodyFile)
	if err != nil {
		return err
	}
	sum, err := hex.DecodeString(*digest)
	if err != nil || len(sum) != sha256.Size {
		return fmt.Errorf("-digest %q: want 64 hex digits", *digest)
	}

	handler := baseline.Bare([sha256.Size]byte(sum), body)
	if *redisAddr != "" {
		c := redis.NewClient(&redis.Options{Addr: *redisAddr, DB: *redisDB, ContextTimeoutEnabled: true})
		defer c.Close()
		handler = baseline.OneGet(c, *key)
	}
	if *sqlDSN != "" {
		db, query, err := openLookup(*sqlDSN, true)
		if err != nil {
			return err
		}
		defer db.Close()
		if handler, err = baseline.OneLookup(db, query); err != nil {
			return err
		}
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
