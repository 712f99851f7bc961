package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// openStore opens the store a -store value names and returns it with a
// function that releases it.
func openStore(_ context.Context, uri string) (storage.Store, func(), error) {
	switch storeKind(uri) {
	case "memory":
		return memstore.New(), func() {}, nil
	default:
		return nil, nil, fmt.Errorf("-store %q: unsupported store (want memory)", redact(uri))
	}
}

// storeKind returns the scheme of a -store value ("memory" for memory).
func storeKind(uri string) string {
	if uri == "memory" || uri == "" {
		return "memory"
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "invalid"
	}
	return u.Scheme
}

// redact hides a password in a store URI before it is shown.
func redact(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparseable)"
	}
	return u.Redacted()
}
