package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseResultReadsTheDoneLine(t *testing.T) {
	out := []byte(`Running 2s test @ http://127.0.0.1:1234
  1 threads and 32 connections
loadharness-result requests=20000 duration_us=2000000 p50_us=1500 p99_us=9000 status_errors=3 connect_errors=1 read_errors=2 write_errors=0 timeouts=4
`)
	s, err := parseResult(out)
	require.NoError(t, err)
	assert.Equal(t, sample{
		Requests: 20000, Duration: 2 * time.Second,
		P50: 1500 * time.Microsecond, P99: 9 * time.Millisecond,
		StatusErrors: 3, SocketErrors: 7,
	}, s)
	assert.Equal(t, 10000.0, s.RPS())
}

func TestParseResultRefusesMissingOrBrokenLines(t *testing.T) {
	for name, out := range map[string]string{
		"no line":       "Running 2s test\n",
		"missing field": "loadharness-result requests=1 duration_us=2\n",
		"bad number":    "loadharness-result requests=x duration_us=1 p50_us=1 p99_us=1 status_errors=0 connect_errors=0 read_errors=0 write_errors=0 timeouts=0\n",
		"no equals":     "loadharness-result requests\n",
	} {
		_, err := parseResult([]byte(out))
		assert.Error(t, err, name)
	}
}

func TestLuaStringEscapes(t *testing.T) {
	assert.Equal(t, `"plain /v1/users?limit=100"`, luaString("plain /v1/users?limit=100"))
	assert.Equal(t, `"{\"a\":\"b\\\\c\"}\010\255"`, luaString("{\"a\":\"b\\\\c\"}\n\xff"))
}

func TestWrkSecondsRoundsUp(t *testing.T) {
	assert.Equal(t, "1s", wrkSeconds(0))
	assert.Equal(t, "1s", wrkSeconds(300*time.Millisecond))
	assert.Equal(t, "2s", wrkSeconds(2*time.Second))
	assert.Equal(t, "3s", wrkSeconds(2100*time.Millisecond))
}

// recordingServer answers 200 {} (404 on /missing) and counts each
// request by method, URI, bearer, content type and body.
func recordingServer(t *testing.T) (*httptest.Server, func() map[string]int) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("Content-Type")+" "+string(body)]++
		mu.Unlock()
		if r.URL.Path == "/missing" {
			w.WriteHeader(404)
			return
		}
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// TestWrkRunsTheScript drives a test server with real wrk, when it is
// installed: every request of a cycling script arrives with its method,
// body and bearer, and the result line parses.
func TestWrkRunsTheScript(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("wrk not installed (apt-get install wrk)")
	}
	w := &wrkRunner{Threads: 2, Connections: 4, Timeout: 5 * time.Second, Dir: t.TempDir()}

	srv, seen := recordingServer(t)
	s, err := w.run(context.Background(), srv.URL, script{Token: "tok", Requests: []request{
		{Method: "GET", Path: "/v1/users?limit=100&page_token=a%2Bb"},
		{Method: "PUT", Path: "/v1/users/sa1/instances", Body: `{"config":{}}`},
		{Method: "POST", Path: "/v1/users/sa2/tokens", Body: `{"name":"load"}`},
	}}, time.Second)
	require.NoError(t, err)
	got := seen()
	assert.Len(t, got, 3, got)
	assert.Positive(t, got["GET /v1/users?limit=100&page_token=a%2Bb Bearer tok  "])
	assert.Positive(t, got[`PUT /v1/users/sa1/instances Bearer tok application/json {"config":{}}`])
	assert.Positive(t, got[`POST /v1/users/sa2/tokens Bearer tok application/json {"name":"load"}`])
	assert.Positive(t, s.Requests)
	assert.Zero(t, s.StatusErrors)

	srv, seen = recordingServer(t)
	s, err = w.run(context.Background(), srv.URL, script{Token: "tok", Requests: []request{{Method: "GET", Path: "/missing"}}}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /missing Bearer tok  "}, keys(seen()))
	assert.Equal(t, s.Requests, s.StatusErrors, "every 404 is counted")
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSingleRequestScriptIsStatic(t *testing.T) {
	lua := script{Token: "t", Requests: []request{{Method: "GET", Path: "/x"}}}.lua()
	assert.NotContains(t, lua, "request = function")
	assert.True(t, strings.Contains(lua, `wrk.path = "/x"`))
}

func TestParseStat(t *testing.T) {
	st, ok := parseStat("29862 (a (weird) name) R 29698 4242 30146 0 -1 4194304 100 0 0 0 150 25 0 0 20 0 1 0 727366\n")
	require.True(t, ok)
	assert.Equal(t, stat{ppid: 29698, pgrp: 4242, ticks: 175}, st)
	_, ok = parseStat("garbage")
	assert.False(t, ok)
}

func TestCPUPerRequest(t *testing.T) {
	assert.Equal(t, 50*time.Microsecond, sample{Requests: 20000, CPU: time.Second}.CPUPerRequest())
	assert.Zero(t, sample{CPU: time.Second}.CPUPerRequest())
}

func TestScanFailures(t *testing.T) {
	log := `{"time":"x","level":"INFO","msg":"listening","addr":"127.0.0.1:1"}
{"time":"x","level":"INFO","msg":"request","request_id":"a","method":"GET","path":"/v1/users","status":200,"bytes":10}
{"time":"x","level":"ERROR","msg":"internal error","request_id":"b","method":"PUT","path":"/v1/users/sa1/instances","error":"set instances: mongostore: context deadline \"exceeded\""}
{"time":"x","level":"INFO","msg":"request","request_id":"b","method":"PUT","path":"/v1/users/sa1/instances","status":500,"bytes":10}
{"time":"x","level":"ERROR","msg":"internal error","request_id":"c","error":"second"}
{"time":"x","level":"INFO","msg":"request","request_id":"c","status":500,"bytes":10}
{"time":"x","level":"INFO","msg":"request","request_id":"d","status":400,"bytes":10}
`
	counts, cause := scanFailures(strings.NewReader(log))
	assert.Equal(t, map[int]int{500: 2, 400: 1}, counts)
	assert.Equal(t, `set instances: mongostore: context deadline \"exceeded\"`, cause)
	assert.Equal(t, "(400×1, 500×2)", fmtStatuses(counts))
}

func TestDatabasePIDs(t *testing.T) {
	t.Setenv("LOADHARNESS_DATABASE_PIDS", " 12  345 ")
	pids, err := databasePIDs()
	require.NoError(t, err)
	assert.Equal(t, []int{12, 345}, pids)
	t.Setenv("LOADHARNESS_DATABASE_PIDS", "")
	pids, err = databasePIDs()
	require.NoError(t, err)
	assert.Empty(t, pids)
	t.Setenv("LOADHARNESS_DATABASE_PIDS", "12 x")
	_, err = databasePIDs()
	require.ErrorContains(t, err, `"x" is not a process id`)
}

func TestPIDsCPU(t *testing.T) {
	start := time.Now()
	for time.Since(start) < 50*time.Millisecond { // burn some CPU
	}
	assert.Positive(t, pidsCPU([]int{os.Getpid()}), "this process has used CPU")
	assert.Zero(t, pidsCPU([]int{1 << 30}), "no such process")
}

// TestTreeTicks: a database's CPU time is its own and that of every
// process under it (PostgreSQL's backends), and of no other.
func TestTreeTicks(t *testing.T) {
	stats := map[int]stat{
		1:  {ppid: 0, ticks: 1000}, // init
		10: {ppid: 1, ticks: 5},    // postmaster
		11: {ppid: 10, ticks: 7},   // a backend
		12: {ppid: 11, ticks: 11},  // its child
		20: {ppid: 1, ticks: 3},    // redis-server
		30: {ppid: 1, ticks: 100},  // something else
		40: {ppid: 41, ticks: 1},   // a parent loop, which /proc never shows,
		41: {ppid: 40, ticks: 1},   // ends
	}
	assert.Equal(t, int64(5+7+11), treeTicks(stats, []int{10}))
	assert.Equal(t, int64(5+7+11+3), treeTicks(stats, []int{10, 20}))
	assert.Equal(t, int64(11), treeTicks(stats, []int{12}))
	assert.Zero(t, treeTicks(stats, []int{99}))
	assert.Zero(t, treeTicks(stats, nil))
}

func TestWaitIdle(t *testing.T) {
	busy := 3 // calls that still see the CPU time grow
	var used time.Duration
	cpu := func() time.Duration {
		if busy > 0 {
			busy--
			used += time.Second
		}
		return used
	}
	waitIdle(t.Context(), cpu, nil, time.Minute)
	assert.Zero(t, busy, "it waited until the CPU time stopped growing")

	// A process that never idles: it returns at the limit (or the test
	// would never end).
	always := func() time.Duration { used += time.Second; return used }
	waitIdle(t.Context(), always, nil, 500*time.Millisecond)
}
