package baseline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hexDigest(token string) string {
	d := sha256.Sum256([]byte(token))
	return hex.EncodeToString(d[:])
}

func TestBare(t *testing.T) {
	h := Bare(sha256.Sum256([]byte("secret-token")), []byte(`{"tokens":[]}`))
	for token, want := range map[string]int{"secret-token": 200, "other": 401, "": 401} {
		req := httptest.NewRequest("GET", "/v1/users/admin/tokens", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, want, rec.Code, token)
		if want == 200 {
			assert.Equal(t, `{"tokens":[]}`, rec.Body.String())
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		}
	}
}

func TestOneGetMakesOneGet(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	require.NoError(t, c.Ping(context.Background()).Err(), "connect before counting")
	mr.Set("p:"+hexDigest("secret-token"), `{"tokens":[]}`)
	h := OneGet(c, "p:")
	for token, want := range map[string]int{"secret-token": 200, "other": 401} {
		req := httptest.NewRequest("GET", "/v1/users/admin/tokens", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		before := mr.CommandCount()
		h.ServeHTTP(rec, req)
		assert.Equal(t, want, rec.Code, token)
		assert.Equal(t, 1, mr.CommandCount()-before, "one command per request")
		if want == http.StatusOK {
			assert.Equal(t, `{"tokens":[]}`, rec.Body.String())
		}
	}
	mr.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Authorization", "Bearer secret-token")
	h.ServeHTTP(rec, req)
	assert.Equal(t, 500, rec.Code)
}
