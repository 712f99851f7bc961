// Package baseline holds the bare net/http handlers that the benchmarks
// and the load harness compare the server with: the least a handler can
// do for the same answer. Bare and OneGet answer the token listing of the
// Go benchmarks on any path, after a map lookup or one Redis GET. Floor
// serves the route of each workload of the load harness with that
// workload's answer, captured from the server, after one lookup of the
// bearer's digest: in a map (MapLookup), with one Redis GET
// (RedisLookup), one MongoDB find by _id (MongoLookup) or one SQL query
// by primary key (SQLLookup).
package baseline

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Bare answers body to the token whose SHA-256 is digest (parse the
// bearer, hash it, one map lookup, write the bytes), and 401 to any other.
func Bare(digest [sha256.Size]byte, body []byte) http.Handler {
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

// OneGet answers the value of prefix+hex(SHA-256 of the token), read with
// one Redis GET; 401 when there is none, 500 when Redis fails.
func OneGet(c redis.UniversalClient, prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		d := sha256.Sum256([]byte(tok))
		b, err := c.Get(r.Context(), prefix+hex.EncodeToString(d[:])).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			w.WriteHeader(http.StatusUnauthorized)
			return
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b) // #nosec G705 -- the JSON answer the benchmark stored, sent as application/json
	})
}
