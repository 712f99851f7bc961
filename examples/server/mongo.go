package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/mongostore"
)

// cleanupEvery is how often the server removes expired tokens and
// sessions, and finishes interrupted user deletes, on MongoDB.
const cleanupEvery = 10 * time.Minute

// openMongo connects to the MongoDB database a mongodb://HOST:PORT/DB
// store value names (any MongoDB connection-string option may follow) and
// runs the store's Cleanup every cleanupEvery until released; tp, when not
// nil, receives a span of each command.
func openMongo(ctx context.Context, uri string, log *slog.Logger, tp trace.TracerProvider) (storage.Store, func(), error) {
	// A replica set's URI lists several hosts, which net/url refuses.
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
	}
	dbName := cs.Database
	if dbName == "" {
		return nil, nil, fmt.Errorf("-store %q: name the database, as in mongodb://HOST:PORT/DB", redact(uri))
	}
	// Bounded waits everywhere, so that a server that is down fails a
	// request instead of hanging it; the store bounds each operation too.
	opts := options.Client().ApplyURI(uri).
		SetServerSelectionTimeout(5 * time.Second).
		SetConnectTimeout(5 * time.Second).
		SetTimeout(10 * time.Second)
	if tp != nil {
		opts.SetMonitor(mongoTracing(tp))
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
	}
	disconnect := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = client.Disconnect(ctx)
	}
	store, err := mongostore.New(ctx, client.Database(dbName), mongostore.Options{})
	if err != nil {
		disconnect()
		return nil, nil, fmt.Errorf("-store %q: %w", redact(uri), err)
	}

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // #nosec G118 -- the cleanup lives as long as the store, not a request; stop ends it
		defer close(done)
		tick := time.NewTicker(cleanupEvery)
		defer tick.Stop()
		for {
			if _, err := store.Cleanup(context.Background(), time.Now()); err != nil {
				log.Warn("store cleanup", "err", err)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return store, func() {
		close(stop)
		<-done
		disconnect()
	}, nil
}
