// Command ferretdb serves the MongoDB wire protocol on a FerretDB v1 with
// its SQLite backend, for the tests of storage/mongostore: a real
// MongoDB-wire server that needs nothing but Go to build.
//
//	go run . -listen 127.0.0.1:27017 -dir /tmp/orgadmin-ferretdb
//
// It serves until SIGINT or SIGTERM. It lives in its own module so that the
// orgadmin module does not depend on FerretDB.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to serve the MongoDB wire protocol on")
	dir := flag.String("dir", "", "directory of the SQLite databases (created if missing)")
	logLevel := flag.String("log-level", "warn", "log level: debug, info, warn or error")
	flag.Parse()
	if err := run(*listen, *dir, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, dir, logLevel string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + abs + "/",
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	fmt.Fprintf(os.Stderr, "ferretdb: serving %s (SQLite in %s)\n", f.MongoDBURI(), abs)
	return <-done
}
