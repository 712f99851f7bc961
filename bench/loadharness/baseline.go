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
	"strings"
	"syscall"
	"time"

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

	handler := bareHandler([sha256.Size]byte(sum), body)
	if *redisAddr != "" {
		c := redis.NewClient(&redis.Options{Addr: *redisAddr, DB: *redisDB, ContextTimeoutEnabled: true})
		defer c.Close()
		handler = redisHandler(c, *key)
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

// bareHandler answers body to the token whose SHA-256 is digest, and 401
// to any other.
func bareHandler(digest [sha256.Size]byte, body []byte) http.Handler {
	known := map[[sha256.Size]byte][]byte{digest: body}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		b, found := known[sha256.Sum256([]byte(tok))]
		if !ok || !found {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}

// redisHandler answers the value of prefix+hex(SHA-256 of the token), read
// with one GET, and 401 when there is none.
func redisHandler(c *redis.Client, prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		d := sha256.Sum256([]byte(tok))
		b, err := c.Get(r.Context(), prefix+hex.EncodeToString(d[:])).Bytes()
		switch {
		case err == redis.Nil:
			w.WriteHeader(http.StatusUnauthorized)
			return
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
}
