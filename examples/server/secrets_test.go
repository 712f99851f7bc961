package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/everystore"
)

// Nothing the server writes holds a token or session value, in clear, hex
// or base64, whole or as a run of everystore.MinLeak characters: not after
// loading a seed with token values, minting tokens of every kind and embed
// sessions, revoking some, nor when values are offered where they are
// refused.
func TestOutputHoldsNoSecret(t *testing.T) {
	base, stderr := startServer(t, nil, "-seed", "../seed.json")
	const admin, member = "dev-admin-token-change-me", "dev-member-token-change-me"
	secrets := []string{admin, member}
	requests := 0
	ok := func(method, path, token, body string) map[string]any {
		t.Helper()
		requests++
		st, out := call(t, method, base+path, token, body)
		require.Equal(t, 200, st, "%s %s: %v", method, path, out)
		return out
	}
	refused := func(method, path, auth string, want int) {
		t.Helper()
		requests++
		require.Equal(t, want, statusOf(t, method, base+path, auth), "%s %s", method, path)
	}

	ok("POST", "/v1/users", admin, `{"username": "robot"}`)
	mint := func(user, token, body string) (value, id string) {
		t.Helper()
		out := ok("POST", "/v1/users/"+user+"/tokens", token, body)
		return out["token"].(string), out["id"].(string)
	}
	rw, rwID := mint("robot", admin, `{"name": "rw", "ttl": 3600}`)
	rs, _ := mint("robot", admin, `{"name": "rs", "token_type": "read_scaling"}`)
	forever, _ := mint("robot", admin, `{"name": "forever", "description": "no expiry"}`)
	own, _ := mint("bob", member, `{"name": "own"}`)
	secrets = append(secrets, rw, rs, forever, own)

	ok("GET", "/v1/users/robot/instances", forever, "")
	ok("GET", "/v1/users", own, "")
	const embed = "/v1/dives/0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b/embed-session"
	for _, body := range []string{
		`{"username": "dashboards", "session_name": "lobby"}`,
		`{"username": "robot", "initial_state": {"tab": 1}}`,
	} {
		secrets = append(secrets, ok("POST", embed, admin, body)["session"].(string))
	}

	ok("DELETE", "/v1/users/robot/tokens/"+rwID, admin, "")
	refused("GET", "/v1/users", "Bearer "+rw, 401)
	refused("GET", "/v1/users", "Basic "+forever, 401)
	refused("GET", "/v1/users", "Bearer "+rs, 403)
	refused("GET", "/v1/users?page_token="+url.QueryEscape(own), "Bearer "+admin, 400)
	ok("DELETE", "/v1/users/robot", admin, "")
	refused("GET", "/v1/users/robot/tokens", "Bearer "+forever, 401)
	ok("GET", "/healthz", "", "")
	ok("GET", "/docs/api/feedback/agent?page_path=%2Fdocs&text=fine", "", "")

	// Request lines are written within logFlushDelay.
	require.Eventually(t, func() bool { return strings.Count(stderr.String(), `"msg":"request"`) >= requests },
		5*time.Second, 10*time.Millisecond, "one log line per request:\n%s", stderr)
	out := stderr.String()
	assert.Empty(t, everystore.Leaks(secrets, []string{out}), "secret values in the server's output")
}

// statusOf sends a request with the whole Authorization header auth and
// returns the status.
func statusOf(t *testing.T, method, url, auth string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}
