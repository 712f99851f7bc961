package baseline

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The workloads of the load harness, each the route a floor serves.
const (
	ListTokens  = "list-tokens"
	GetConfig   = "get-config"
	SetConfig   = "set-config"
	CreateToken = "create-token"
	ListUsers   = "list-users"
)

// Routes are the method and path shape of each workload, as net/http
// ServeMux patterns: the server's own routes.
var Routes = map[string]string{ // #nosec G101 -- route patterns that name token routes, no credentials
	ListTokens:  "GET /v1/users/{username}/tokens",
	GetConfig:   "GET /v1/users/{username}/instances",
	SetConfig:   "PUT /v1/users/{username}/instances",
	CreateToken: "POST /v1/users/{username}/tokens",
	ListUsers:   "GET /v1/users",
}

// MaxBody bounds the request body a floor reads (and discards), as the
// server bounds it.
const MaxBody = 1 << 20

// Answer is one answer of the server, captured to be written again
// byte for byte.
type Answer struct {
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        []byte `json:"body"`
}

// Lookup finds the SHA-256 digest of a bearer token in one step of its
// store (a map lookup, one Redis GET, one MongoDB find, one SQL query) and
// reports whether the store knows it; it returns the store's error when
// the store fails.
type Lookup func(ctx context.Context, digest [sha256.Size]byte) (bool, error)

// Floor returns the least a server can do for each workload of answers:
// route the request by method and path (Routes), read and discard its
// body (at most MaxBody bytes; a longer one is a 400), parse the bearer,
// SHA-256 it, make one lookup, and write the workload's Answer. It
// answers 401 to a missing or unknown bearer and 500 when the lookup
// fails, and a path that matches no route as ServeMux does (404, or 405
// for another method). It returns an error for a workload it does not
// know or an answer whose status is not one of HTTP's.
func Floor(answers map[string]Answer, lookup Lookup) (http.Handler, error) {
	mux := http.NewServeMux()
	for w, a := range answers {
		pattern, ok := Routes[w]
		if !ok {
			return nil, fmt.Errorf("baseline: unknown workload %q", w)
		}
		if a.Status < 100 || a.Status > 999 {
			return nil, fmt.Errorf("baseline: %s: status %d", w, a.Status)
		}
		mux.Handle(pattern, floorRoute(a, lookup))
	}
	return mux, nil
}

func floorRoute(a Answer, lookup Lookup) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxBody)); err != nil {
			http.Error(w, "request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		found, err := lookup(r.Context(), sha256.Sum256([]byte(tok)))
		switch {
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			return
		case !found:
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if a.ContentType != "" {
			w.Header().Set("Content-Type", a.ContentType)
		}
		w.WriteHeader(a.Status)
		_, _ = w.Write(a.Body) // #nosec G705 -- the server's own answer, captured, with its Content-Type
	}
}

// MapLookup knows the digests given, in a map.
func MapLookup(digests ...[sha256.Size]byte) Lookup {
	known := make(map[[sha256.Size]byte]struct{}, len(digests))
	for _, d := range digests {
		known[d] = struct{}{}
	}
	return func(_ context.Context, d [sha256.Size]byte) (bool, error) {
		_, ok := known[d]
		return ok, nil
	}
}

// RedisLookup knows a digest when the key prefix+hex(digest) exists, read
// with one GET.
func RedisLookup(c redis.UniversalClient, prefix string) Lookup {
	return func(ctx context.Context, d [sha256.Size]byte) (bool, error) {
		err := c.Get(ctx, prefix+hex.EncodeToString(d[:])).Err()
		switch {
		case errors.Is(err, redis.Nil):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}

// MongoLookup knows a digest when coll holds a document whose _id is
// hex(digest), read with one FindOne.
func MongoLookup(coll *mongo.Collection) Lookup {
	return func(ctx context.Context, d [sha256.Size]byte) (bool, error) {
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: hex.EncodeToString(d[:])}}).Err()
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}
}

// FloorTable is the table SQLLookup reads, in PostgreSQL's and SQLite's
// spelling alike but for the digest's type (BYTEA or BLOB).
const FloorTable = "CREATE TABLE floor_digests (digest %s PRIMARY KEY, username TEXT NOT NULL)"

// SQLLookup knows a digest when query, one lookup by primary key of the
// table FloorTable makes with the digest's bytes as its one parameter,
// returns a row. It prepares query once, and returns the error of
// preparing it.
func SQLLookup(db *sql.DB, query string) (Lookup, error) {
	st, err := db.Prepare(query)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, d [sha256.Size]byte) (bool, error) {
		var username string
		err := st.QueryRowContext(ctx, d[:]).Scan(&username)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return false, nil
		case err != nil:
			return false, err
		}
		return true, nil
	}, nil
}
