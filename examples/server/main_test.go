package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage/redisstore"
)

// syncBuffer is a log destination safe for the server's concurrent writes.
type syncBuffer = testdb.SyncBuffer

// startServer runs the server with args on a free port until the test ends
// and returns its base URL and its standard error.
func startServer(t *testing.T, env map[string]string, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncBuffer{}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, stderr, func(a net.Addr) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		t.Cleanup(func() {
			cancel()
			require.NoError(t, <-done, "graceful shutdown")
		})
		return "http://" + a.String(), stderr
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v\n%s", err, stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not start in time")
	}
	return "", nil
}

// call sends one request and returns the status and decoded JSON body.
func call(t *testing.T, method, url, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	}
	return resp.StatusCode, out
}

// TestReadmeTour runs the five-minute tour of README.md against the sample
// fixture.
func TestReadmeTour(t *testing.T) {
	testReadmeTour(t)
}

// The same tour on a real Redis server and a Redis Cluster, when
// scripts/test.sh has started them.
func TestReadmeTourRedis(t *testing.T) {
	testReadmeTour(t, "-store", redisURI(t))
}

func TestReadmeTourRedisCluster(t *testing.T) {
	testReadmeTour(t, "-store", redisClusterURI(t))
}

// redisURI returns a redis:// URI of database 1 of the test Redis server,
// emptied first, or skips.
func redisURI(t *testing.T) string {
	addr := os.Getenv("ORGADMIN_REDIS_ADDR")
	if addr == "" {
		t.Skip("ORGADMIN_REDIS_ADDR not set; scripts/test.sh starts a Redis server")
	}
	c := redis.NewClient(&redis.Options{Addr: addr, DB: 1})
	defer c.Close()
	require.NoError(t, c.FlushDB(context.Background()).Err())
	return "redis://" + addr + "/1"
}

// redisClusterURI returns the Cluster form of -store for the test Cluster,
// with the server's keys deleted first, or skips.
func redisClusterURI(t *testing.T) string {
	addrs := os.Getenv("ORGADMIN_REDIS_CLUSTER")
	if addrs == "" {
		t.Skip("ORGADMIN_REDIS_CLUSTER not set; scripts/test.sh starts a Redis Cluster")
	}
	list := strings.Split(addrs, ",")
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: list})
	defer c.Close()
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, redisstore.DefaultPrefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return err
			}
		}
		return iter.Err()
	})
	require.NoError(t, err)
	return "redis://" + list[0] + "?addr=" + strings.Join(list[1:], "&addr=")
}

// Restarting on a persistent store neither fails nor makes a second
// Admin nor accumulates tokens: each start prints a token that replaces
// the one before; a start that cannot listen changes nothing.
func TestRestartsOnRedis(t *testing.T) {
	testRestarts(t, redisURI(t))
}

func TestRestartsOnMongo(t *testing.T) {
	testRestarts(t, mongoURI(t))
}

func testRestarts(t *testing.T, storeURI string) {
	tokenLine := regexp.MustCompile(`\(shown once\): (oat_\w+)`)
	var tokens []string
	for i := range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		stderr := &syncBuffer{}
		done := make(chan error, 1)
		ready := make(chan net.Addr, 1)
		go func() {
			done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-store", storeURI}, func(string) string { return "" }, stderr, func(a net.Addr) { ready <- a })
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("start %d: %v\n%s", i, err, stderr)
		}
		cancel()
		require.NoError(t, <-done)
		m := tokenLine.FindStringSubmatch(stderr.String())
		require.Len(t, m, 2, "start %d: %s", i, stderr)
		tokens = append(tokens, m[1])
	}

	// A start that cannot listen fails before it touches the store.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	var out syncBuffer
	err = run(context.Background(), []string{"-addr", taken.Addr().String(), "-store", storeURI}, func(string) string { return "" }, &out, nil)
	require.Error(t, err)
	assert.NotContains(t, out.String(), "shown once")

	// Served from a seed that holds nothing (no bootstrap): only the last
	// token works, and it is the Admin's only one.
	empty := filepath.Join(t.TempDir(), "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte(`{"organizations": []}`), 0o600))
	base, _ := startServer(t, nil, "-store", storeURI, "-seed", empty)
	last := tokens[len(tokens)-1]
	for i, tok := range tokens[:len(tokens)-1] {
		st, _ := call(t, "GET", base+"/v1/users", tok, "")
		assert.Equal(t, 401, st, "the token of start %d", i)
	}
	st, body := call(t, "GET", base+"/v1/users", last, "")
	require.Equal(t, 200, st, body)
	assert.Equal(t, 1.0, body["total_count"], "a second Admin was made")
	st, body = call(t, "GET", base+"/v1/users/admin/tokens", last, "")
	require.Equal(t, 200, st, body)
	assert.Len(t, body["tokens"], 1)
}

// Loading the same seed again, in a second process, brings back no token
// revoked since: the first process refuses it too.
func TestReseedOnRedis(t *testing.T) {
	testReseed(t, redisURI(t))
}

func TestReseedOnMongo(t *testing.T) {
	testReseed(t, mongoURI(t))
}

func testReseed(t *testing.T, storeURI string) {
	const admin, member = "dev-admin-token-change-me", "dev-member-token-change-me"
	first, _ := startServer(t, nil, "-store", storeURI, "-seed", "../seed.json")
	st, body := call(t, "GET", first+"/v1/users/bob/tokens", admin, "")
	require.Equal(t, 200, st, body)
	require.Len(t, body["tokens"], 1)
	id := body["tokens"].([]any)[0].(map[string]any)["id"].(string)
	st, body = call(t, "DELETE", first+"/v1/users/bob/tokens/"+id, admin, "")
	require.Equal(t, 200, st, body)
	st, body = call(t, "DELETE", first+"/v1/users/dashboards", admin, "")
	require.Equal(t, 200, st, body)

	second, _ := startServer(t, nil, "-store", storeURI, "-seed", "../seed.json")
	for _, base := range []string{first, second} {
		st, _ := call(t, "GET", base+"/v1/users", member, "")
		assert.Equal(t, 401, st, "a revoked seeded token")
		st, body := call(t, "GET", base+"/v1/users", admin, "")
		require.Equal(t, 200, st, body)
		assert.Equal(t, 2.0, body["total_count"], "alice and bob; dashboards stays deleted")
	}
}

func testReadmeTour(t *testing.T, args ...string) {
	base, _ := startServer(t, nil, append([]string{"-seed", "../seed.json"}, args...)...)
	const admin = "dev-admin-token-change-me"

	st, body := call(t, "POST", base+"/v1/users", admin, `{"username": "reporter", "description": "nightly reports"}`)
	require.Equal(t, 200, st, body)
	assert.Equal(t, map[string]any{"username": "reporter", "description": "nightly reports"}, body)

	st, body = call(t, "POST", base+"/v1/users/reporter/tokens", admin, `{"name": "ci", "ttl": 3600}`)
	require.Equal(t, 200, st, body)
	token := body["token"].(string)
	assert.Regexp(t, `^oat_[0-9A-Za-z]{49}$`, token)

	st, body = call(t, "PUT", base+"/v1/users/reporter/instances", token,
		`{"config": {"read_write": {"instance_size": "jumbo"}, "read_scaling": {"instance_size": "standard", "flock_size": 2}}}`)
	require.Equal(t, 200, st, body)
	assert.Equal(t, map[string]any{
		"read_write":   map[string]any{"instance_size": "jumbo", "cooldown_seconds": 60.0},
		"read_scaling": map[string]any{"instance_size": "standard", "flock_size": 2.0, "cooldown_seconds": 60.0},
	}, body)

	st, body = call(t, "GET", base+"/v1/users?limit=2", admin, "")
	require.Equal(t, 200, st, body)
	assert.Equal(t, 4.0, body["total_count"])
	assert.Len(t, body["users"], 2)
	assert.NotNil(t, body["next_page_token"])

	st, body = call(t, "GET", base+"/v1/active_accounts", admin, "")
	require.Equal(t, 200, st, body)
	assert.Equal(t, map[string]any{"accounts": []any{map[string]any{"username": "dashboards", "ducklings": []any{
		map[string]any{"id": "rw", "type": "read_write", "status": "active"},
		map[string]any{"id": "rs.0", "type": "read_scaling", "status": "cooldown"},
	}}}}, body)

	st, body = call(t, "POST", base+"/v1/dives/0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b/embed-session", admin,
		`{"username": "dashboards", "session_name": "lobby"}`)
	require.Equal(t, 200, st, body)
	assert.Regexp(t, `^oas_`, body["session"])

	st, _ = call(t, "GET", base+"/healthz", "", "")
	assert.Equal(t, 200, st)
	st, body = call(t, "GET", base+"/docs/specs", "", "")
	assert.Equal(t, 200, st)
	assert.Equal(t, "3.0.3", body["openapi"])
	st, body = call(t, "GET", base+"/docs/api/feedback/agent?page_path=%2Fdocs&text=great", "", "")
	assert.Equal(t, 200, st, body)
}

func TestBootstrapPrintsTokenOnce(t *testing.T) {
	base, stderr := startServer(t, nil)
	m := regexp.MustCompile(`shown once\): (oat_\S+)`).FindStringSubmatch(stderr.String())
	require.Len(t, m, 2, stderr.String())
	st, body := call(t, "GET", base+"/v1/users", m[1], "")
	require.Equal(t, 200, st, body)
	assert.Equal(t, 1.0, body["total_count"])
}

func TestBootstrapUsesEnvToken(t *testing.T) {
	const tok = "env-supplied-admin-token"
	base, stderr := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": tok})
	assert.NotContains(t, stderr.String(), "shown once")
	st, _ := call(t, "GET", base+"/v1/users", tok, "")
	assert.Equal(t, 200, st)
}

func TestLogsNeverHoldTokens(t *testing.T) {
	const tok = "env-supplied-admin-token"
	base, stderr := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": tok})
	st, body := call(t, "POST", base+"/v1/users/admin/tokens", tok, `{"name": "x"}`)
	require.Equal(t, 200, st)
	st, _ = call(t, "GET", base+"/v1/users?page_token=abc", body["token"].(string), "")
	assert.Equal(t, 400, st)
	// Request lines are written within logFlushDelay.
	assert.Eventually(t, func() bool { return strings.Contains(stderr.String(), `"path":"/v1/users","status":400`) },
		5*time.Second, 10*time.Millisecond, stderr.String())
	assert.NotContains(t, stderr.String(), tok)
	assert.NotContains(t, stderr.String(), body["token"].(string))
}

func TestBadSeedStopsServerNamingEntry(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"organizations":[{"id":"acme","users":[{"username":"ok"},{"username":"9lives"}]}]}`), 0o600))
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-seed", file}, func(string) string { return "" }, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `users[1] ("9lives")`)
}

// A misspelt key stops the server too, named by its path; the message
// names the file once and says "seed" once.
func TestSeedWithUnknownKeyStopsServer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "seed.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"organizations":[{"id":"acme","users":[{"username":"ok","rol":"Admin"}]}]}`), 0o600))
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-seed", file}, func(string) string { return "" }, io.Discard, nil)
	require.EqualError(t, err, file+": seed: organizations[0].users[0].rol: unknown key")
	file = filepath.Join(t.TempDir(), "seed.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"organizations":[{"id":"acme","users":[{"username":"9lives"}]}]}`), 0o600))
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0", "-seed", file}, func(string) string { return "" }, io.Discard, nil)
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "seed:"), err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), file), err.Error())
}

// -max-users-per-org bounds the users of an organization: one more is a
// 400 naming the username.
func TestMaxUsersPerOrgFlag(t *testing.T) {
	const tok = "env-supplied-admin-token"
	base, _ := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": tok}, "-max-users-per-org", "2")
	st, body := call(t, "POST", base+"/v1/users", tok, `{"username": "robot"}`)
	require.Equal(t, 200, st, body)
	st, body = call(t, "POST", base+"/v1/users", tok, `{"username": "other"}`)
	assert.Equal(t, 400, st)
	assert.Equal(t, map[string]any{"message": "Bad Request", "code": "BAD_REQUEST", "issues": []any{map[string]any{
		"message": "The organization holds the maximum number of users", "path": []any{"username"}, "code": "too_big"}}}, body)

	err := run(context.Background(), []string{"-max-users-per-org", "many"}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "-max-users-per-org")
}

// -max-embed-sessions-per-user bounds the live embed sessions of a
// service account: one more is a 400.
func TestMaxEmbedSessionsPerUserFlag(t *testing.T) {
	const admin = "dev-admin-token-change-me" // examples/seed.json
	base, _ := startServer(t, nil, "-seed", "../seed.json", "-max-embed-sessions-per-user", "1")
	mint := base + "/v1/dives/0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b/embed-session"
	st, body := call(t, "POST", mint, admin, `{"username": "dashboards"}`)
	require.Equal(t, 200, st, body)
	st, body = call(t, "POST", mint, admin, `{"username": "dashboards"}`)
	assert.Equal(t, 400, st)
	assert.Equal(t, map[string]any{"message": "Bad Request", "code": "BAD_REQUEST", "issues": []any{map[string]any{
		"message": "The service account holds the maximum number of embed sessions", "path": []any{}, "code": "too_big"}}}, body)

	err := run(context.Background(), []string{"-max-embed-sessions-per-user", "many"}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "-max-embed-sessions-per-user")
}

// -audit-log writes each audit event as a JSON line on standard error;
// without it, none is written.
func TestAuditLogFlag(t *testing.T) {
	const tok = "env-supplied-admin-token"
	base, stderr := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": tok}, "-audit-log")
	st, body := call(t, "POST", base+"/v1/users", tok, `{"username": "robot"}`)
	require.Equal(t, 200, st, body)
	st, body = call(t, "GET", base+"/ext/audit/events?action=user.create&target_username=robot", tok, "")
	require.Equal(t, 200, st, body)
	events := body["events"].([]any)
	require.Len(t, events, 1)
	id := events[0].(map[string]any)["id"].(string)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), `"id":"`+id+`"`) }, 10*time.Second, 10*time.Millisecond,
		"the event is logged: %s", stderr)
	assert.Contains(t, stderr.String(), `"msg":"audit"`)
	assert.NotContains(t, stderr.String(), tok)

	base, stderr = startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": tok})
	st, body = call(t, "POST", base+"/v1/users", tok, `{"username": "robot"}`)
	require.Equal(t, 200, st, body)
	st, _ = call(t, "GET", base+"/healthz", "", "")
	require.Equal(t, 200, st)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), `"path":"/healthz"`) }, 10*time.Second, 10*time.Millisecond,
		"the lines before are written: %s", stderr)
	assert.NotContains(t, stderr.String(), `"msg":"audit"`)
}

// What go-redis reports on its own (a pool that cannot dial) is a JSON
// line of the server's log, as every other line is, not a plain-text
// line on the process's standard error.
func TestRedisClientMessagesAreLogLines(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	stderr := &syncBuffer{}
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0", "-store", "redis://" + addr + "/0"}, func(string) string { return "" }, stderr, nil)
	require.ErrorContains(t, err, "connection refused")
	found := false
	for line := range strings.Lines(stderr.String()) {
		var entry struct{ Level, Msg, Error string }
		require.NoError(t, json.Unmarshal([]byte(line), &entry), "a line that is not JSON: %q", line)
		if entry.Msg == "redis" && strings.Contains(entry.Error, "failed to dial") {
			assert.Equal(t, "WARN", entry.Level)
			found = true
		}
	}
	assert.True(t, found, "go-redis's message is not in the log: %s", stderr)
}

// A Redis Cluster has database 0 only: a -store naming another is
// refused before anything is written, rather than using database 0.
func TestRedisClusterWithDatabaseIsRefused(t *testing.T) {
	for _, uri := range []string{"redis://127.0.0.1:1/1?addr=127.0.0.1:2", "redis://127.0.0.1:1/x?addr=127.0.0.1:2"} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-store", uri}, func(string) string { return "" }, io.Discard, nil)
		require.ErrorContains(t, err, "a Redis Cluster has database 0 only", uri)
	}
}

// A Redis URL without a host is refused rather than dialing the default
// address.
func TestRedisWithoutHostIsRefused(t *testing.T) {
	for _, uri := range []string{"redis:///3", "rediss:///", "redis://?addr=127.0.0.1:2"} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-store", uri}, func(string) string { return "" }, io.Discard, nil)
		require.ErrorContains(t, err, "no HOST:PORT", uri)
	}
}

// One node of a Cluster named as a single server would answer every
// command with MOVED: the start says how to name the Cluster instead.
func TestRedisClusterNodeAsServerIsRefused(t *testing.T) {
	cluster := redisClusterURI(t)
	node := strings.TrimSuffix(strings.SplitN(cluster, "?", 2)[0], "/")
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-store", node}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "the server is a node of a Redis Cluster: name the Cluster as redis://HOST:PORT?addr=HOST2:PORT2 (an addr for each other node)")
}

// A seed whose loading outlasts the set-up limit stops the start saying
// so, and the next start loads the rest.
func TestSeedPastTheSetupLimitSaysSo(t *testing.T) {
	old := setupLimit
	t.Cleanup(func() { setupLimit = old })
	setupLimit = time.Nanosecond
	store := "sqlite:" + filepath.Join(t.TempDir(), "db")
	args := []string{"-addr", "127.0.0.1:0", "-store", store, "-seed", "../seed.json"}
	err := run(context.Background(), args, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "(loading the seed took longer than 1ns; start again to load the rest)")
	setupLimit = old
	base, _ := startServer(t, nil, "-store", store, "-seed", "../seed.json")
	st, body := call(t, "GET", base+"/v1/users", "dev-admin-token-change-me", "")
	require.Equal(t, 200, st, body)
	assert.Equal(t, 3.0, body["total_count"], "every user of the seed")
}

// A Redis database that is not a number from 0 is refused (go-redis
// read -1 as database 0).
func TestRedisBadDatabaseIsRefused(t *testing.T) {
	for _, uri := range []string{"redis://127.0.0.1:1/-1", "redis://127.0.0.1:1/x", "redis://127.0.0.1:1/01", "redis://127.0.0.1:1/1/2"} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-store", uri}, func(string) string { return "" }, io.Discard, nil)
		require.ErrorContains(t, err, "the database must be a number from 0", uri)
	}
}

// -seed with an empty path is refused: it would bootstrap, and print a
// token, where a fixture was meant.
func TestEmptySeedPathIsRefused(t *testing.T) {
	for _, args := range [][]string{{"-seed", ""}, {"-seed="}} {
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"-addr", "127.0.0.1:0"}, args...), func(string) string { return "" }, &stderr, nil)
		require.EqualError(t, err, `-seed: empty path (leave the flag out to bootstrap org "default")`, "%q", args)
		assert.NotContains(t, stderr.String(), "admin token", "%q", args)
	}
}

func TestUnknownStoreIsRefused(t *testing.T) {
	err := run(context.Background(), []string{"-store", "cassandra://x"}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "unsupported store")
}

func TestPprofOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:6060", "example.com:6060", "nonsense"} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-pprof", addr}, func(string) string { return "" }, io.Discard, nil)
		require.ErrorContains(t, err, "-pprof", addr)
	}
}

func TestPprofServesProfiles(t *testing.T) {
	_, stderr := startServer(t, nil, "-pprof", "127.0.0.1:0")
	m := regexp.MustCompile(`"msg":"pprof listening","addr":"([^"]+)"`).FindStringSubmatch(stderr.String())
	require.Len(t, m, 2, stderr.String())
	resp, err := http.Get("http://" + m[1] + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(body), "goroutine profile:")
}

func TestPprofOffByDefault(t *testing.T) {
	_, stderr := startServer(t, nil)
	assert.NotContains(t, stderr.String(), "pprof")
}

// -h prints the flags and stops with flag.ErrHelp, which main takes as
// no failure.
func TestHelpPrintsFlags(t *testing.T) {
	var stderr strings.Builder
	err := run(context.Background(), []string{"-h"}, func(string) string { return "" }, &stderr, nil)
	require.ErrorIs(t, err, flag.ErrHelp)
	assert.Contains(t, stderr.String(), "-addr")
	assert.Contains(t, stderr.String(), "-store")
}

// A bad flag is one line, main's "server: ..." (README), with no usage
// printed before it.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{{"-nosuchflag"}, {"-max-users-per-org", "many"}, {"-addr"}} {
		var stderr strings.Builder
		err := run(context.Background(), args, func(string) string { return "" }, &stderr, nil)
		require.Error(t, err, "%q", args)
		require.NotErrorIs(t, err, flag.ErrHelp)
		assert.Contains(t, err.Error(), strings.TrimPrefix(args[0], "-"), "%q", args)
		assert.Empty(t, stderr.String(), "%q", args)
	}
}

// ORGADMIN_ADMIN_TOKEN names the bootstrap Admin's token, which -seed
// does not make: the server says so rather than ignore it silently.
func TestAdminTokenIgnoredWithSeedIsSaid(t *testing.T) {
	tok := "oa_ignored_with_seed_0123456789"
	base, stderr := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": tok}, "-seed", "../seed.json")
	req, err := http.NewRequest(http.MethodGet, base+"/v1/users", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	// Log lines are written within logFlushDelay.
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "ORGADMIN_ADMIN_TOKEN is ignored with -seed") },
		10*time.Second, 10*time.Millisecond, "the warning")
	assert.NotContains(t, stderr.String(), tok)
}

// A store URI is shown in the error that stops the server, with its
// secrets hidden: a password in the user information or in a query
// parameter (PostgreSQL's password and sslpassword, MongoDB's
// tlsCertificateKeyFilePassword and authMechanismProperties), which the
// operator's logs would otherwise keep.
func TestStoreURISecretsAreNotShown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ uri, shown string }{
		{"postgres://u@127.0.0.1:1/db?password=hunter2&sslmode=disable", `"postgres://u@127.0.0.1:1/db?password=xxxxx&sslmode=disable"`},
		{"postgres://u:hunter2@127.0.0.1:1/db?sslpassword=hunter3&connect_timeout=1", `"postgres://u:xxxxx@127.0.0.1:1/db?sslpassword=xxxxx&connect_timeout=1"`},
		{"postgresql://u@127.0.0.1:1/db?PASSWORD=hunter2", `"postgresql://u@127.0.0.1:1/db?PASSWORD=xxxxx"`},
		{"mongodb://127.0.0.1:1/db?serverSelectionTimeoutMS=100&authMechanismProperties=AWS_SESSION_TOKEN:hunter2&tlsCertificateKeyFilePassword=hunter3",
			`"mongodb://127.0.0.1:1/db?serverSelectionTimeoutMS=100&authMechanismProperties=xxxxx&tlsCertificateKeyFilePassword=xxxxx"`},
		{"cassandra://u@x/?pass%77ord=hunter2", `"cassandra://u@x/?pass%77ord=xxxxx"`},
	} {
		err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-store", tc.uri}, func(string) string { return "" }, io.Discard, nil)
		require.Error(t, err, tc.uri)
		assert.NotContains(t, err.Error(), "hunter", tc.uri)
		assert.Contains(t, err.Error(), "-store "+tc.shown, tc.uri)
	}
}
