package httpserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/instrumented"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// The examples' README counterparts ("Mounting", "Observability") are the
// code between the "// README" markers.

// exampleService returns a Service with the org "acme" and its Admin,
// and the Admin's token.
func exampleService() (*orgadmin.Service, string) {
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	token, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		panic(err)
	}
	return svc, token
}

// fetch sends GET url with the headers given as name, value pairs and
// returns the response.
func fetch(url string, headers ...string) *http.Response {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		panic(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	return resp
}

// serversOf returns the servers of the OpenAPI document resp carries.
func serversOf(resp *http.Response) string {
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	i := strings.Index(string(body), `"servers"`)
	j := strings.Index(string(body)[i:], `"description"`)
	return strings.Join(strings.Fields(string(body)[i:i+j]), " ")
}

// Beside the host's routes: the Handler at "/v1/" and "/ext/" of a
// ServeMux, with the document, the health check and the feedback where
// the host likes, and unclean paths sent to the Handler before the mux
// can redirect them to another route.
func Example_besideYourRoutes() {
	svc, token := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	api := httpserver.New(svc, httpserver.Config{Logger: logger})
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle("/ext/", api)                                        // the audit trail
	mux.Handle("GET /openapi.json", httpserver.OpenAPIHandler("/")) // the document, anywhere
	mux.Handle("GET /healthz", httpserver.Health(svc))
	mux.Handle("/docs/api/feedback/agent", httpserver.NewFeedback(svc, httpserver.FeedbackConfig{Logger: logger}))
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpserver.CleanPath(r.URL.EscapedPath()) {
			api.ServeHTTP(w, r) // a plain-text 404, never a redirect
			return
		}
		mux.ServeHTTP(w, r)
	})
	// README
	srv := httptest.NewServer(root)
	defer srv.Close()
	ctx := context.Background()
	if _, err := svc.CreateServiceAccount(ctx, orgadmin.Bearer(token), orgadmin.CreateServiceAccountInput{Username: "robot"}); err != nil {
		panic(err)
	}
	for _, p := range []string{"/v1/users", "/ext/audit/events", "/openapi.json", "/healthz"} {
		fmt.Println(p, fetch(srv.URL+p, "Authorization", "Bearer "+token).Status)
	}
	// A ServeMux alone would answer 307 to /v1/users/robot, and a client
	// that follows it would delete the user.
	req, err := http.NewRequest("DELETE", srv.URL+"/v1/users/robot/tokens/..", nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	_, err = svc.GetUser(ctx, "acme", "robot")
	fmt.Println("DELETE /v1/users/robot/tokens/..", resp.Status, err == nil)
	// Output:
	// /v1/users 200 OK
	// /ext/audit/events 200 OK
	// /openapi.json 200 OK
	// /healthz 200 OK
	// DELETE /v1/users/robot/tokens/.. 404 Not Found true
}

// Under a prefix with net/http: Config.Prefix, with the Handler mounted at
// "/admin/" of a ServeMux.
func Example_prefixWithServeMux() {
	svc, token := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	mux := http.NewServeMux()
	mux.Handle("/admin/", httpserver.New(svc, httpserver.Config{Prefix: "/admin", Logger: logger}))
	// README
	srv := httptest.NewServer(mux)
	defer srv.Close()
	fmt.Println(fetch(srv.URL+"/admin/v1/users", "Authorization", "Bearer "+token).Status)
	fmt.Println(serversOf(fetch(srv.URL + "/admin/docs/specs")))
	// Output:
	// 200 OK
	// "servers": [ { "url": "/admin",
}

// Under a prefix with http.StripPrefix: no Prefix; the document and the
// log still say /admin.
func Example_prefixWithStripPrefix() {
	svc, token := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", httpserver.New(svc, httpserver.Config{Logger: logger})))
	// README
	srv := httptest.NewServer(mux)
	defer srv.Close()
	fmt.Println(fetch(srv.URL+"/admin/v1/users", "Authorization", "Bearer "+token).Status)
	fmt.Println(serversOf(fetch(srv.URL + "/admin/docs/specs")))
	// Output:
	// 200 OK
	// "servers": [ { "url": "/admin",
}

// With chi: Mount keeps the path, so the Handler is told its prefix; chi's
// request id is the Handler's.
func Example_chi() {
	svc, token := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Route("/admin", func(r chi.Router) {
		r.Mount("/", httpserver.New(svc, httpserver.Config{
			Prefix:    "/admin",
			Logger:    logger,
			RequestID: func(r *http.Request) string { return middleware.GetReqID(r.Context()) },
		}))
	})
	// README
	srv := httptest.NewServer(r)
	defer srv.Close()
	resp := fetch(srv.URL+"/admin/v1/users", "Authorization", "Bearer "+token, "X-Request-Id", "lb-1234")
	fmt.Println(resp.Status, resp.Header.Get("X-Request-Id"))
	// Output:
	// 200 OK lb-1234
}

// The request id from upstream, in the response and every log line; a
// forged one is replaced.
func Example_requestID() {
	svc, token := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	logs := &strings.Builder{} // any io.Writer: in a program, os.Stderr or a file
	h := httpserver.New(svc, httpserver.Config{
		Logger:     logger,
		RequestLog: logs, // the request lines as JSON; without it, through Logger
		// RequestIDHeader: "X-Correlation-Id", // X-Request-Id unless set
	})
	// README
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, id := range []string{"4f1c2a9e-8d7b-4c2e-9a55", "two words"} {
		resp := fetch(srv.URL+"/v1/users", "Authorization", "Bearer "+token, "X-Request-Id", id)
		got := resp.Header.Get("X-Request-Id")
		fmt.Println(got == id, strings.Contains(logs.String(), `"request_id":"`+got+`"`))
	}
	// Output:
	// true true
	// false true
}

// An authentication hook: a gateway's header names the user; no header
// falls back to bearer tokens.
func ExampleConfig_authenticate() {
	svc, _ := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	sso := func(r *http.Request) (orgadmin.Caller, bool, error) {
		name := r.Header.Get("X-Forwarded-User") // set by your gateway, never by clients
		if name == "" {
			return orgadmin.Caller{}, false, nil // declined: bearer tokens decide
		}
		c, err := svc.ActAs(r.Context(), "acme", name)
		if errors.Is(err, orgadmin.ErrNotFound) {
			return orgadmin.Caller{}, false, orgadmin.ErrUnauthorized // 401
		}
		return c, err == nil, err // another error: 500
	}
	h := httpserver.New(svc, httpserver.Config{Authenticate: sso, Logger: logger})
	// README
	srv := httptest.NewServer(h)
	defer srv.Close()
	fmt.Println(fetch(srv.URL+"/v1/users", "X-Forwarded-User", "admin").Status)
	fmt.Println(fetch(srv.URL+"/v1/users", "X-Forwarded-User", "nobody").Status)
	fmt.Println(fetch(srv.URL + "/v1/users").Status)
	// Output:
	// 200 OK
	// 401 Unauthorized
	// 401 Unauthorized
}

// Prometheus metrics: a registry in the config, served where the host
// likes.
func Example_metrics() {
	_, token := exampleService()
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	reg := prometheus.NewRegistry()
	store, err := instrumented.New(memstore.New(), instrumented.Config{Metrics: reg})
	if err != nil {
		panic(err)
	}
	svc := orgadmin.New(store, orgadmin.Config{})
	api := httpserver.New(svc, httpserver.Config{Metrics: reg, Logger: logger})
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{}) // serve it on a listener of its own
	// README
	// Bootstrap reads the token too: a third ReadAccess.
	_, err = svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin", Token: token})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	fetch(srv.URL+"/v1/users/admin/tokens", "Authorization", "Bearer "+token)
	fetch(srv.URL+"/v1/users/bob/tokens", "Authorization", "Bearer "+token)
	msrv := httptest.NewServer(metrics)
	defer msrv.Close()
	resp := fetch(msrv.URL)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "http_server_request_duration_seconds_count") || strings.HasPrefix(l, "orgadmin_auth_attempts_total{outcome=\"success\",scheme=\"bearer\"}") ||
			strings.HasPrefix(l, "orgadmin_store_operation_duration_seconds_count{operation=\"ReadAccess\"}") {
			fmt.Println(l)
		}
	}
	// Output:
	// http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/v1/users/{username}/tokens"} 1
	// http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="404",http_route="/v1/users/{username}/tokens"} 1
	// orgadmin_auth_attempts_total{outcome="success",scheme="bearer"} 2
	// orgadmin_store_operation_duration_seconds_count{operation="ReadAccess"} 3
}

// Traces: a TracerProvider in the config, and the same in the store's
// wrapper, so that the store calls are the children of the request's
// span.
func Example_tracing() {
	spans := tracetest.NewSpanRecorder()    // in a program: an exporter, as examples/server does
	logger := slog.New(slog.DiscardHandler) // in a program: slog.New(slog.NewJSONHandler(os.Stderr, nil))
	// README
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	store, err := instrumented.New(memstore.New(), instrumented.Config{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	svc := orgadmin.New(store, orgadmin.Config{})
	api := httpserver.New(svc, httpserver.Config{TracerProvider: tp, Logger: logger})
	// README
	token, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	if err != nil {
		panic(err)
	}
	spans.Reset()
	srv := httptest.NewServer(api)
	defer srv.Close()
	fetch(srv.URL+"/v1/users/admin/tokens", "Authorization", "Bearer "+token, "X-Request-Id", "req-42")
	for _, s := range spans.Ended() {
		fmt.Print(s.Name(), " (", s.SpanKind(), ")")
		for _, kv := range s.Attributes() {
			if kv.Key == httpserver.RequestIDAttribute {
				fmt.Print(" ", kv.Key, "=", kv.Value.AsString())
			}
		}
		fmt.Println()
	}
	// Output:
	// store ReadAccess (internal)
	// GET /v1/users/{username}/tokens (server) orgadmin.request_id=req-42
}

// The line of each request off, the causes of 5xx still logged.
func ExampleConfig_disableRequestLog() {
	svc, token := exampleService()
	// README
	var out strings.Builder // in a program: os.Stderr
	h := httpserver.New(svc, httpserver.Config{
		Logger:            slog.New(slog.NewJSONHandler(&out, nil)), // 5xx causes only
		DisableRequestLog: true,                                     // your own access log writes the lines
	})
	// README
	srv := httptest.NewServer(h)
	defer srv.Close()
	fmt.Println(fetch(srv.URL+"/v1/users", "Authorization", "Bearer "+token).Status)
	fmt.Printf("%q\n", out.String())
	// Output:
	// 200 OK
	// ""
}
