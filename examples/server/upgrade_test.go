package main

import (
	"crypto/sha256"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/redisstore"
)

// earlierToken is the token of the Admin "Μαρία" that writeEarlierFold
// stores.
const earlierToken = "earlier-fold-admin-token-0001"

// writeEarlierFold writes into s what an earlier version left: the org
// acme whose users are keyed under the fold of that version, which gave
// "Μ" the micro sign: the Admin "Μαρία" under "µαρία" (listed before
// "Ángel" then), with a token, and "Ángel" under "ángel".
func writeEarlierFold(t *testing.T, s storage.Store) {
	ctx := t.Context()
	at := time.Now().Truncate(time.Millisecond)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: at}, nil))
	for _, u := range []storage.User{
		{ID: "u-maria", Org: "acme", Username: "Μαρία", FoldedUsername: "\u00B5\u03B1\u03C1\u03AF\u03B1", Role: "Admin", CreatedAt: at},
		{ID: "u-angel", Org: "acme", Username: "Ángel", FoldedUsername: "ángel", Role: "Member", IsServiceAccount: true, CreatedAt: at},
	} {
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
	}
	tok := storage.Token{ID: "11111111-1111-4111-8111-111111111111", Org: "acme", UserID: "u-maria",
		Digest: sha256.Sum256([]byte(earlierToken)), Name: "t", Type: "read_write", CreatedAt: at}
	require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
}

// checkEarlierFold checks, on the server at base started on the store
// writeEarlierFold wrote, that its users are found and ordered by today's
// fold: "Μαρία" by any case of her name, after "Ángel", and taken.
func checkEarlierFold(t *testing.T, base string) {
	st, body := call(t, "GET", base+"/v1/users", earlierToken, "")
	require.Equal(t, 200, st, body)
	var names []any
	for _, u := range body["users"].([]any) {
		names = append(names, u.(map[string]any)["username"])
	}
	assert.Equal(t, []any{"Ángel", "Μαρία"}, names)
	for _, name := range []string{"Μαρία", "μαρία", "ΜΑΡΊΑ"} {
		st, body = call(t, "GET", base+"/v1/users/"+url.PathEscape(name)+"/instances", earlierToken, "")
		assert.Equal(t, 200, st, "%s: %v", name, body)
	}
	st, body = call(t, "POST", base+"/v1/users", earlierToken, `{"username": "μαρία"}`)
	assert.Equal(t, 400, st, body)
	assert.Contains(t, body["issues"], map[string]any{"code": "already_exists", "message": "Username is already taken", "path": []any{"username"}})
}

// emptySeed is a seed file that loads nothing, so that a start on a store
// makes no Admin of its own.
func emptySeed(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"organizations": []}`), 0o600))
	return p
}

// A server started on a Redis that an earlier version wrote re-keys its
// users under today's fold before it serves.
func TestStartRekeysUsersOfAnEarlierVersionOnRedis(t *testing.T) {
	uri := redisURI(t)
	c := redis.NewClient(&redis.Options{Addr: os.Getenv("ORGADMIN_REDIS_ADDR"), DB: 1, ContextTimeoutEnabled: true})
	defer c.Close()
	s, err := redisstore.New(c, redisstore.Options{})
	require.NoError(t, err)
	writeEarlierFold(t, s)
	base, _ := startServer(t, nil, "-store", uri, "-seed", emptySeed(t))
	checkEarlierFold(t, base)
}
