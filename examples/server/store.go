package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// openStore opens the store a -store value names and returns it with a
// function that releases it; log receives what the store does in the
// background.
func openStore(ctx context.Context, uri string, log *slog.Logger) (storage.Store, func(), error) {
	switch storeKind(uri) {
	case "memory":
		return memstore.New(), func() {}, nil
	case "mongodb", "mongodb+srv":
		return openMongo(ctx, uri, log)
	default:
		return nil, nil, fmt.Errorf("-store %q: unsupported store (want memory or mongodb://HOST:PORT/DB)", redact(uri))
	}
}

// storeKind returns the scheme of a -store value ("memory" for memory).
func storeKind(uri string) string {
	if uri == "memory" || uri == "" {
		return "memory"
	}
	// Not net/url: a MongoDB replica set's URI lists several hosts.
	scheme, _, ok := strings.Cut(uri, "://")
	if !ok {
		return "invalid"
	}
	return scheme
}

// redact hides a password in a store URI before it is shown.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparseable)"
	}
	return u.Redacted()
}
