package httpserver_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/instrumented"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// series returns the series of the metric name in reg, each as its
// labels ("k=v,k=v", sorted) and its value (a counter's or gauge's value,
// a histogram's count).
func series(tb testing.TB, reg *prometheus.Registry, name string) map[string]float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	require.NoError(tb, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[labels(m)] = value(mf.GetType(), m)
		}
	}
	return out
}

func labels(m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(ls)
	return strings.Join(ls, ",")
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

// The request metrics follow the HTTP semantic conventions: labelled by
// method, route pattern (never the path: a username is no label) and
// status; authentication outcomes are counted by scheme and outcome.
func TestRequestMetrics(t *testing.T) {
	a := newAPI(t)
	reg := prometheus.NewRegistry()
	h := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Metrics: reg, Prefix: "/admin",
		Authenticate: ssoHook(a.svc, "acme")})

	for _, name := range []string{"alice", "bob", "carol"} {
		resp, _ := get(t, h, "/admin/v1/users/"+name+"/tokens", "Authorization", "Bearer "+a.token)
		assert.Equal(t, 404, resp.StatusCode)
	}
	resp, _ := get(t, h, "/admin/v1/users/admin/tokens", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 200, resp.StatusCode)
	get(t, h, "/admin/v1/users")                                           // missing
	get(t, h, "/admin/v1/users", "Authorization", "Bearer nope-nope-nope") // unknown
	get(t, h, "/admin/v1/users", "X-SSO-User", "admin")                    // hook
	get(t, h, "/admin/v1/users", "X-SSO-User", "ghost")                    // hook refuses
	get(t, h, "/admin/no/such/route")
	get(t, h, "/admin/docs/specs")

	assert.Equal(t, map[string]float64{
		"http_request_method=GET,http_response_status_code=404,http_route=/admin/v1/users/{username}/tokens": 3,
		"http_request_method=GET,http_response_status_code=200,http_route=/admin/v1/users/{username}/tokens": 1,
		"http_request_method=GET,http_response_status_code=401,http_route=/admin/v1/users":                   3,
		"http_request_method=GET,http_response_status_code=200,http_route=/admin/v1/users":                   1,
		"http_request_method=GET,http_response_status_code=404,http_route=":                                  1,
		"http_request_method=GET,http_response_status_code=200,http_route=/admin/docs/specs":                 1,
	}, series(t, reg, "http_server_request_duration_seconds"))
	assert.Equal(t, map[string]float64{"http_request_method=GET": 0}, series(t, reg, "http_server_active_requests"))
	assert.Equal(t, map[string]float64{
		"outcome=success,scheme=bearer": 4, // the 404s authenticated
		"outcome=missing,scheme=bearer": 1,
		"outcome=unknown,scheme=bearer": 1,
		"outcome=expired,scheme=bearer": 0,
		"outcome=revoked,scheme=bearer": 0,
		"outcome=success,scheme=hook":   1,
		"outcome=unknown,scheme=hook":   1,
		"outcome=refused,scheme=hook":   0,
		"outcome=error,scheme=hook":     0,
	}, series(t, reg, "orgadmin_auth_attempts_total"))

	// A method HTTP does not define is _OTHER, not a series of its own.
	srvResp := doMethod(t, h, "BREW", "/admin/v1/users")
	assert.Equal(t, 405, srvResp)
	assert.Contains(t, series(t, reg, "http_server_request_duration_seconds"), "http_request_method=_OTHER,http_response_status_code=405,http_route=")
}

// doMethod sends method path to h and returns the status.
func doMethod(tb testing.TB, h http.Handler, method, path string) int {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, path, nil)
	require.NoError(tb, err)
	w := &statusWriter{header: http.Header{}}
	h.ServeHTTP(w, req)
	return w.status
}

type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	return len(b), nil
}
func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}

// An expired token is counted as expired.
func TestAuthMetricsExpired(t *testing.T) {
	clock := newFakeClock()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{Now: clock.Now})
	tok, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := svc.Authenticate(t.Context(), tok)
	require.NoError(t, err)
	short, err := svc.CreateToken(t.Context(), admin, "admin", orgadmin.CreateTokenInput{Name: "short", TTL: orgadmin.Some(orgadmin.MinTokenTTL)})
	require.NoError(t, err)
	clock.Advance(10 * time.Minute)
	reg := prometheus.NewRegistry()
	h := httpserver.New(svc, httpserver.Config{Logger: discardLogger(), Metrics: reg})
	resp, _ := get(t, h, "/v1/users", "Authorization", "Bearer "+short.Value)
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, 1.0, series(t, reg, "orgadmin_auth_attempts_total")["outcome=expired,scheme=bearer"])
}

// A revoked token is counted as revoked, once, and answered exactly as an
// unknown one is: the body says nothing of why.
func TestAuthMetricsRevoked(t *testing.T) {
	a := newAPI(t)
	reg := prometheus.NewRegistry()
	h := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Metrics: reg})
	admin, err := a.svc.Authenticate(t.Context(), a.token)
	require.NoError(t, err)
	tok, err := a.svc.CreateToken(t.Context(), admin, "admin", orgadmin.CreateTokenInput{Name: "gone"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, srv.URL+"/v1/users/admin/tokens/"+tok.ID, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := testHTTP.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, 200, resp.StatusCode)

	var revokedBody string
	resp, revokedBody = get(t, h, "/v1/users", "Authorization", "Bearer "+tok.Value)
	assert.Equal(t, 401, resp.StatusCode)
	resp, unknownBody := get(t, h, "/v1/users", "Authorization", "Bearer oat_never-issued-never-issued")
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, `{"message":"Invalid Credentials","code":"UNAUTHORIZED"}`, strings.TrimSpace(revokedBody))
	assert.Equal(t, unknownBody, revokedBody, "a revoked token is answered as an unknown one")

	s := series(t, reg, "orgadmin_auth_attempts_total")
	assert.Equal(t, 1.0, s["outcome=revoked,scheme=bearer"])
	assert.Equal(t, 1.0, s["outcome=unknown,scheme=bearer"])
	assert.Equal(t, 1.0, s["outcome=success,scheme=bearer"], "the revocation itself")
}

// A hook that fails, or whose Caller the Service did not issue, is
// counted so.
func TestAuthMetricsHookFailures(t *testing.T) {
	a := newAPI(t)
	reg := prometheus.NewRegistry()
	h := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Metrics: reg,
		Authenticate: func(r *http.Request) (orgadmin.Caller, bool, error) {
			if r.Header.Get("X-Fail") != "" {
				return orgadmin.Caller{}, false, assert.AnError
			}
			return orgadmin.Caller{}, true, nil
		}})
	resp, _ := get(t, h, "/v1/users", "X-Fail", "1")
	assert.Equal(t, 500, resp.StatusCode)
	resp, _ = get(t, h, "/v1/users")
	assert.Equal(t, 401, resp.StatusCode)
	s := series(t, reg, "orgadmin_auth_attempts_total")
	assert.Equal(t, 1.0, s["outcome=error,scheme=hook"])
	assert.Equal(t, 1.0, s["outcome=refused,scheme=hook"])
}

// Handlers and Feedback handlers given one registry share its metrics:
// their requests are counted in the same series, each under its route.
// Another collector of one of their names is refused loudly.
func TestMetricsSharedByHandlersOfOneRegistry(t *testing.T) {
	a := newAPI(t)
	reg := prometheus.NewRegistry()
	first := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Metrics: reg})
	second := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Metrics: reg})
	feedback := httpserver.NewFeedback(a.svc, httpserver.FeedbackConfig{Logger: discardLogger(), Metrics: reg})
	for _, h := range []http.Handler{first, second} {
		resp, _ := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token)
		assert.Equal(t, 200, resp.StatusCode)
	}
	resp, _ := get(t, feedback, "/anywhere?page_path=/docs&text=good")
	assert.Equal(t, 200, resp.StatusCode)
	resp, _ = get(t, feedback, "/anywhere?page_path=/docs")
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, map[string]float64{
		"http_request_method=GET,http_response_status_code=200,http_route=/v1/users":                  2,
		"http_request_method=GET,http_response_status_code=200,http_route=" + httpserver.FeedbackPath: 1,
		"http_request_method=GET,http_response_status_code=400,http_route=" + httpserver.FeedbackPath: 1,
	}, series(t, reg, "http_server_request_duration_seconds"))
	assert.Equal(t, 2.0, series(t, reg, "orgadmin_auth_attempts_total")["outcome=success,scheme=bearer"])

	// Mounted elsewhere, the feedback handler is labelled where it is.
	other := prometheus.NewRegistry()
	feedback = httpserver.NewFeedback(a.svc, httpserver.FeedbackConfig{Logger: discardLogger(), Metrics: other, Route: "/feedback"})
	get(t, feedback, "/feedback?page_path=/docs&text=fine")
	assert.Equal(t, map[string]float64{
		"http_request_method=GET,http_response_status_code=200,http_route=/feedback": 1,
	}, series(t, other, "http_server_request_duration_seconds"))

	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "http_server_active_requests", Help: "not ours"}))
	assert.Panics(t, func() { httpserver.New(a.svc, httpserver.Config{Metrics: clash}) })
}

// The feedback handler makes a server span of its request, named after
// its route, with the request id.
func TestFeedbackSpan(t *testing.T) {
	a := newAPI(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := httpserver.NewFeedback(a.svc, httpserver.FeedbackConfig{Logger: discardLogger(), TracerProvider: tp})
	resp, body := get(t, h, "/docs/api/feedback/agent?page_path=/x&text=ok", "X-Request-Id", "fb-1")
	require.Equal(t, 200, resp.StatusCode, body)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, "GET "+httpserver.FeedbackPath, spans[0].Name())
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range spans[0].Attributes() {
		attrs[kv.Key] = kv.Value
	}
	assert.Equal(t, "fb-1", attrs[httpserver.RequestIDAttribute].AsString())
	assert.Equal(t, httpserver.FeedbackPath, attrs["http.route"].AsString())
}

// One request is one server span, named after its route, with the
// request id; the store calls are its children; no token value is in
// any attribute. A traceparent header continues the caller's trace.
func TestRequestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	store, err := instrumented.New(memstore.New(), instrumented.Config{TracerProvider: tp})
	require.NoError(t, err)
	svc := orgadmin.New(store, orgadmin.Config{})
	tok, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	rec.Reset()
	h := httpserver.New(svc, httpserver.Config{Logger: discardLogger(), TracerProvider: tp})

	resp, body := get(t, h, "/v1/users/admin/tokens", "Authorization", "Bearer "+tok, "X-Request-Id", "trace-me-1")
	require.Equal(t, 200, resp.StatusCode, body)
	spans := rec.Ended()
	var server []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindServer {
			server = append(server, s)
		}
	}
	require.Len(t, server, 1)
	srv := server[0]
	assert.Equal(t, "GET /v1/users/{username}/tokens", srv.Name())
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range srv.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	assert.Equal(t, "trace-me-1", attrs[httpserver.RequestIDAttribute].AsString())
	assert.Equal(t, "/v1/users/{username}/tokens", attrs["http.route"].AsString())
	assert.EqualValues(t, 200, attrs["http.response.status_code"].AsInt64())
	require.Greater(t, len(spans), 1, "store spans")
	for _, s := range spans {
		if s == srv {
			continue
		}
		assert.True(t, strings.HasPrefix(s.Name(), "store "), s.Name())
		assert.Equal(t, srv.SpanContext().SpanID(), s.Parent().SpanID(), "%s is a child of the server span", s.Name())
		assert.Equal(t, srv.SpanContext().TraceID(), s.SpanContext().TraceID())
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.String(), tok, "attribute %s of %s", kv.Key, s.Name())
		}
		for _, ev := range s.Events() {
			for _, kv := range ev.Attributes {
				assert.NotContains(t, kv.Value.String(), tok)
			}
		}
	}

	// Behind a router that sets a pattern of its own, the span is still
	// named after the Handler's route.
	rec.Reset()
	outer := http.NewServeMux()
	outer.Handle("/", h)
	get(t, outer, "/v1/users/admin/instances", "Authorization", "Bearer "+tok)
	for _, s := range rec.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			assert.Equal(t, "GET /v1/users/{username}/instances", s.Name())
		}
	}
	// A request the Handler has no route for has no route in its span
	// either (as in its metrics), not the router's pattern.
	for _, c := range []struct{ method, path string }{{"GET", "/v1/nope"}, {"DELETE", "/v1/users"}} {
		rec.Reset()
		r := httptest.NewRequest(c.method, c.path, nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		outer.ServeHTTP(w, r)
		require.Contains(t, []int{404, 405}, w.Code)
		var names []string
		for _, s := range rec.Ended() {
			if s.SpanKind() != trace.SpanKindServer {
				continue
			}
			names = append(names, s.Name())
			for _, kv := range s.Attributes() {
				assert.NotEqual(t, attribute.Key("http.route"), kv.Key, "%s %s: route %s", c.method, c.path, kv.Value.AsString())
			}
		}
		assert.Equal(t, []string{c.method}, names)
	}

	// Continued from the caller's trace.
	rec.Reset()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	get(t, h, "/v1/users", "Authorization", "Bearer "+tok, "Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	spans = rec.Ended()
	require.NotEmpty(t, spans)
	for _, s := range spans {
		assert.Equal(t, traceID, s.SpanContext().TraceID().String())
	}
}

// Below an outer LogRequests, which gives the id and writes the one
// line, the Handler still measures the request.
func TestMetricsBelowOuterLogRequests(t *testing.T) {
	a := newAPI(t)
	reg := prometheus.NewRegistry()
	var lines strings.Builder
	h := httpserver.LogRequestsTo(&lines, discardLogger(), httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Metrics: reg}))
	resp, _ := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token, "X-Request-Id", "outer-1")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, []string{"outer-1"}, resp.Header.Values("X-Request-Id"))
	assert.Equal(t, 1, strings.Count(lines.String(), `"request_id":"outer-1"`))
	assert.Equal(t, map[string]float64{"http_request_method=GET,http_response_status_code=200,http_route=/v1/users": 1},
		series(t, reg, "http_server_request_duration_seconds"))
}
