package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const adminToken = "env-supplied-admin-token"

// metricsURL returns where the server that wrote stderr serves its
// metrics.
func metricsURL(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	m := regexp.MustCompile(`"msg":"metrics listening","addr":"([^"]+)"`).FindStringSubmatch(stderr.String())
	require.Len(t, m, 2, stderr.String())
	return "http://" + m[1] + "/metrics"
}

// scrape returns the text exposition of url.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// -metrics-addr serves the request, store and authentication metrics on
// a listener of its own, labelled by route pattern, never by path.
func TestMetricsAddrServesMetrics(t *testing.T) {
	base, stderr := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken}, "-metrics-addr", "127.0.0.1:0")
	st, _ := call(t, "GET", base+"/v1/users", adminToken, "")
	require.Equal(t, 200, st)
	st, _ = call(t, "GET", base+"/v1/users/someone_secret/tokens", adminToken, "")
	require.Equal(t, 404, st)
	st, _ = call(t, "GET", base+"/v1/users", "wrong-token-value", "")
	require.Equal(t, 401, st)
	st, _ = call(t, "GET", base+"/docs/api/feedback/agent?page_path=/docs&text=clear", "", "")
	require.Equal(t, 200, st)

	url := metricsURL(t, stderr)
	assert.NotContains(t, url, strings.TrimPrefix(base, "http://"), "a listener of its own")
	body := scrape(t, url)
	for _, want := range []string{
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/v1/users"} 1`,
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="404",http_route="/v1/users/{username}/tokens"} 1`,
		`http_server_request_duration_seconds_bucket{http_request_method="GET",http_response_status_code="401",http_route="/v1/users",le="0.005"}`,
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/docs/api/feedback/agent"} 1`,
		`http_server_active_requests{http_request_method="GET"} 0`,
		`orgadmin_auth_attempts_total{outcome="success",scheme="bearer"} 2`,
		`orgadmin_auth_attempts_total{outcome="unknown",scheme="bearer"} 1`,
		`orgadmin_store_operation_duration_seconds_count{operation="ReadAccess"} `,
		`orgadmin_store_errors_total{operation="ReadAccess"} 0`,
		`go_goroutines `,
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "someone_secret")
	assert.NotContains(t, body, adminToken)

	// Not on the API's listener.
	st, _ = call(t, "GET", base+"/metrics", "", "")
	assert.Equal(t, 404, st)
}

func TestMetricsOffByDefault(t *testing.T) {
	base, stderr := startServer(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken})
	st, _ := call(t, "GET", base+"/v1/users", adminToken, "")
	require.Equal(t, 200, st)
	assert.NotContains(t, stderr.String(), "metrics")
	assert.NotContains(t, stderr.String(), "spans")
}

// otlpReceiver is a plain OTLP/HTTP receiver: it keeps the spans of
// every POST to /v1/traces.
type otlpReceiver struct {
	mu    sync.Mutex
	posts int
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "POST" || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	var req collectorpb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.posts++
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			o.spans = append(o.spans, ss.GetSpans()...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// runUntilStopped runs the server with env and args, calls use with its
// base URL, then stops it and waits for its end.
func runUntilStopped(t *testing.T, env map[string]string, use func(base string), args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, stderr, func(a net.Addr) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		use("http://" + a.String())
	case err := <-done:
		t.Fatalf("server did not start: %v\n%s", err, stderr)
	}
	cancel()
	require.NoError(t, <-done)
	return stderr.String()
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, a request's spans reach the
// receiver over OTLP/HTTP: one server span with the request id, the store
// calls below it and the Redis commands below them, and no token value
// anywhere.
func TestOTLPExport(t *testing.T) {
	testOTLPExport(t, "redis://"+miniredis.RunT(t).Addr())
}

// On MongoDB, the commands are the children of the store calls too.
func TestOTLPExportMongo(t *testing.T) {
	testOTLPExport(t, mongoURI(t))
}

func testOTLPExport(t *testing.T, storeURI string) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	env := map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}
	stderr := runUntilStopped(t, env, func(base string) {
		req, err := http.NewRequest("GET", base+"/v1/users/admin/tokens", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		req.Header.Set("X-Request-Id", "otlp-check-1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "otlp-check-1", resp.Header.Get("X-Request-Id"))
	}, "-store", storeURI)
	assert.Contains(t, stderr, `"msg":"exporting spans","endpoint":"`+collector.URL+`/v1/traces"`)

	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Positive(t, recv.posts)
	var server *tracepb.Span
	byID := map[string]*tracepb.Span{}
	for _, s := range recv.spans {
		byID[hex.EncodeToString(s.GetSpanId())] = s
		if s.GetKind() == tracepb.Span_SPAN_KIND_SERVER {
			require.Nil(t, server, "one server span")
			server = s
		}
		for _, kv := range s.GetAttributes() {
			assert.NotContains(t, kv.GetValue().String(), adminToken)
		}
	}
	require.NotNil(t, server)
	assert.Equal(t, "GET /v1/users/{username}/tokens", server.GetName())
	attrs := map[string]string{}
	for _, kv := range server.GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	assert.Equal(t, "otlp-check-1", attrs["orgadmin.request_id"])

	var store, commands int
	for _, s := range recv.spans {
		if s == server || string(s.GetTraceId()) != string(server.GetTraceId()) {
			continue // the server's set-up is traced too
		}
		parent := byID[hex.EncodeToString(s.GetParentSpanId())]
		require.NotNil(t, parent, "span %s has its parent in the trace", s.GetName())
		if strings.HasPrefix(s.GetName(), "store ") {
			store++
			assert.Equal(t, server, parent, "a store call is a child of the request")
		} else {
			commands++
			assert.True(t, strings.HasPrefix(parent.GetName(), "store "), "the command %s is a child of a store call", s.GetName())
		}
	}
	assert.Positive(t, store)
	assert.Positive(t, commands)
}

// Without an endpoint, nothing is exported, nor set up.
func TestNoOTLPWithoutEndpoint(t *testing.T) {
	assert.Empty(t, otlpEndpoint(func(string) string { return "" }))
	assert.Equal(t, "http://c:4318/v1/traces", otlpEndpoint(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}[k]
	}))
	assert.Equal(t, "http://c:4318/base/v1/traces?k=v", otlpEndpoint(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/base?k=v"}[k]
	}), "to the path, not after the query")
	assert.Equal(t, "http://c:4318/custom", otlpEndpoint(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"}[k]
	}))
	stderr := runUntilStopped(t, map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken}, func(base string) {
		st, _ := call(t, "GET", base+"/v1/users", adminToken, "")
		assert.Equal(t, 200, st)
	})
	assert.NotContains(t, stderr, "exporting spans")
}

// The OTLP endpoint is logged as the store URI is shown: without the
// password of its user information or a secret in its query, which some
// collectors take there.
func TestOTLPEndpointSecretsAreNotLogged(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:hunter2@127.0.0.1:1/otlp?api_key=hunter3&region=eu"}
	_, stderr := startServer(t, env)
	assert.Contains(t, stderr.String(), `"msg":"exporting spans","endpoint":"http://u:xxxxx@127.0.0.1:1/otlp/v1/traces?api_key=xxxxx&region=eu"`)
	assert.Contains(t, stderr.String(), `"level":"WARN","msg":"the OTLP endpoint's user information and query are not sent: give credentials in OTEL_EXPORTER_OTLP_HEADERS"`)
	assert.NotContains(t, stderr.String(), "hunter")
}

// An export that fails (no collector) is logged as the server logs the
// rest, a JSON line, with the endpoint's secrets redacted; never as a
// plain line of the log package.
func TestOTLPExportFailureIsLoggedAsJSON(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10") // milliseconds: export at once
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	env := map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://u:hunter2@" + closed + "/otlp?api_key=hunter3"}
	base, stderr := startServer(t, env)
	req, err := http.NewRequest("GET", base+"/v1/users", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), `"msg":"exporting spans","err":`) },
		time.Minute, 10*time.Millisecond, "no export failure logged: %s", stderr)
	assert.NotContains(t, stderr.String(), "hunter")
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		assert.True(t, json.Valid([]byte(line)), "not a JSON line: %s", line)
	}
}
