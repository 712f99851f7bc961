package httpserver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// api is a Service on a memory store with the org "acme" and its Admin
// "admin", whose token is token.
type api struct {
	svc   *orgadmin.Service
	token string
}

func newAPI(tb testing.TB) *api {
	tb.Helper()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	tok, err := svc.Bootstrap(tb.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(tb, err)
	return &api{svc: svc, token: tok}
}

// get sends GET path to h with the headers given as name, value pairs,
// over a real transport, and returns the response with its body read.
func get(tb testing.TB, h http.Handler, path string, headers ...string) (*http.Response, string) {
	tb.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(tb.Context(), "GET", srv.URL+path, nil)
	require.NoError(tb, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := testHTTP.Do(req)
	require.NoError(tb, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb, err)
	return resp, string(body)
}

// logLines decodes the JSON lines of buf.
func logLines(tb testing.TB, buf *bytes.Buffer) []map[string]any {
	tb.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		require.NoError(tb, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	return lines
}

// serverURL returns the URL of the first server of an OpenAPI document.
func serverURL(tb testing.TB, doc string) string {
	tb.Helper()
	var d struct {
		Servers []struct{ URL string } `json:"servers"`
	}
	require.NoError(tb, json.Unmarshal([]byte(doc), &d))
	require.Len(tb, d.Servers, 1)
	return d.Servers[0].URL
}

// Under a prefix, however mounted, the API answers there and only there,
// its document says where it is, and the log shows the path the client
// asked for.
func TestMountedUnderAPrefix(t *testing.T) {
	a := newAPI(t)
	var lines bytes.Buffer
	cfg := httpserver.Config{RequestLog: &lines, Logger: discardLogger()}
	withPrefix := cfg
	withPrefix.Prefix = "/admin"

	netMux := http.NewServeMux()
	netMux.Handle("/admin/", httpserver.New(a.svc, withPrefix))
	stripped := http.NewServeMux()
	stripped.Handle("/admin/", http.StripPrefix("/admin", httpserver.New(a.svc, cfg)))
	chiRouter := chi.NewRouter()
	chiRouter.Route("/admin", func(r chi.Router) { r.Mount("/", httpserver.New(a.svc, withPrefix)) })
	chiRouter.Get("/hello", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hi") })

	for name, h := range map[string]http.Handler{"ServeMux and Prefix": netMux, "StripPrefix": stripped, "chi and Prefix": chiRouter} {
		t.Run(name, func(t *testing.T) {
			lines.Reset()
			resp, body := get(t, h, "/admin/v1/users?limit=1", "Authorization", "Bearer "+a.token)
			require.Equal(t, 200, resp.StatusCode, body)
			assert.Contains(t, body, `"username":"admin"`)
			l := logLines(t, &lines)
			require.Len(t, l, 1)
			assert.Equal(t, "/admin/v1/users", l[0]["path"])

			resp, body = get(t, h, "/admin/docs/specs")
			require.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "/admin", serverURL(t, body))
			assert.NotEmpty(t, resp.Header.Get("ETag"))
			// However the client escapes the document's path.
			for _, p := range []string{"/admin/%64ocs/specs", "/admin/docs/spec%73", "/admin/%64ocs/%73pecs"} {
				resp, body = get(t, h, p)
				require.Equal(t, 200, resp.StatusCode, p)
				assert.Equal(t, "/admin", serverURL(t, body), p)
			}

			resp, _ = get(t, h, "/v1/users", "Authorization", "Bearer "+a.token)
			assert.Equal(t, 404, resp.StatusCode, "not outside the prefix")

			// The absolute form of a request line (as sent to a proxy)
			// names the same path.
			lines.Reset()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "http://example.com/admin/v1/users?limit=1", nil)
			req.Header.Set("Authorization", "Bearer "+a.token)
			h.ServeHTTP(rec, req)
			require.Equal(t, 200, rec.Code, rec.Body.String())
			l = logLines(t, &lines)
			require.Len(t, l, 1)
			assert.Equal(t, "/admin/v1/users", l[0]["path"])
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "http://example.com/admin/docs/specs", nil))
			require.Equal(t, 200, rec.Code)
			assert.Equal(t, "/admin", serverURL(t, rec.Body.String()))
		})
	}
	resp, body := get(t, chiRouter, "/hello")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "hi", body)

	// chi's Mount keeps the path: without Prefix nothing matches.
	r := chi.NewRouter()
	r.Route("/admin", func(r chi.Router) { r.Mount("/", httpserver.New(a.svc, cfg)) })
	resp, _ = get(t, r, "/admin/v1/users", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 404, resp.StatusCode)

	// At the root, the document's server is "/", its bytes as OpenAPI()'s.
	resp, body = get(t, httpserver.New(a.svc, cfg), "/docs/specs")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, string(httpserver.OpenAPI()), body)
}

func TestPrefixMustBeCleanPath(t *testing.T) {
	for _, p := range []string{"admin", "/admin/", "/a//b", "/a/../b"} {
		assert.PanicsWithValue(t, fmt.Sprintf("httpserver: Config.Prefix %q is not a clean path starting with / and not ending with one", p),
			func() { httpserver.New(newAPI(t).svc, httpserver.Config{Prefix: p}) }, p)
	}
	assert.PanicsWithValue(t, `httpserver: Config.Prefix "/": leave it "" to serve at the root`,
		func() { httpserver.New(newAPI(t).svc, httpserver.Config{Prefix: "/"}) }, "the root is the empty prefix")
}

// A Handler of no Service is a mistake found where it is made, not at the
// first request that authenticates.
func TestNilServiceIsRefusedAtOnce(t *testing.T) {
	assert.PanicsWithValue(t, "httpserver: New: nil Service", func() { httpserver.New(nil, httpserver.Config{}) })
	assert.PanicsWithValue(t, "httpserver: Health: nil Service", func() { httpserver.Health(nil) })
}

// OpenAPIHandler serves the document anywhere, naming the server given.
func TestOpenAPIHandler(t *testing.T) {
	a := newAPI(t)
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpserver.New(a.svc, httpserver.Config{Logger: discardLogger()}))
	mux.Handle("/openapi.json", httpserver.OpenAPIHandler(""))
	mux.Handle("/api/openapi.json", httpserver.OpenAPIHandler("/api"))
	resp, body := get(t, mux, "/openapi.json")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, "/", serverURL(t, body))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(httpserver.OpenAPI(), &doc))
	resp, body = get(t, mux, "/api/openapi.json")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "/api", serverURL(t, body))
	var served map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &served))
	doc["servers"].([]any)[0].(map[string]any)["url"] = "/api"
	assert.Equal(t, doc, served, "the same document but its server")

	srv := httptest.NewServer(mux)
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/openapi.json", nil)
	require.NoError(t, err)
	post, err := testHTTP.Do(req)
	require.NoError(t, err)
	post.Body.Close()
	assert.Equal(t, 405, post.StatusCode)
	assert.Equal(t, "GET, HEAD", post.Header.Get("Allow"))
}

// A request's id comes from upstream when it is a valid id, and is then
// the one in the response, the log line and RequestID of the context;
// anything else gets a new id.
func TestRequestIDFromUpstream(t *testing.T) {
	a := newAPI(t)
	var lines bytes.Buffer
	var seen string
	cfg := httpserver.Config{RequestLog: &lines, Logger: discardLogger(),
		// The hook sees the request's context, as the Service does.
		Authenticate: func(r *http.Request) (orgadmin.Caller, bool, error) {
			seen = httpserver.RequestID(r.Context())
			return orgadmin.Caller{}, false, nil
		}}
	h := httpserver.New(a.svc, cfg)
	for _, tc := range []struct {
		sent string
		kept bool
	}{
		{"4f1c2a9e-8d7b-4c2e-9a55-0d1e2f3a4b5c", true},
		{"host-01/AbCdEf-000042", true}, // chi's form
		{"Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1", true},
		{strings.Repeat("a", httpserver.MaxRequestIDLen), true},
		{strings.Repeat("a", httpserver.MaxRequestIDLen+1), false},
		{`x","level":"ERROR`, false},
		{"with space", false},
		{"caf\u00e9", false},
	} {
		lines.Reset()
		resp, body := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token, "X-Request-Id", tc.sent)
		require.Equal(t, 200, resp.StatusCode, body)
		id := resp.Header.Get("X-Request-Id")
		if tc.kept {
			assert.Equal(t, tc.sent, id)
		} else {
			assert.Regexp(t, `^[0-9a-f]{16}$`, id, tc.sent)
		}
		assert.Equal(t, id, seen)
		l := logLines(t, &lines)
		require.Len(t, l, 1)
		assert.Equal(t, id, l[0]["request_id"])
	}

	// Another header, when configured; X-Request-Id is then ignored.
	cfg.RequestIDHeader = "x-correlation-id"
	h = httpserver.New(a.svc, cfg)
	resp, _ := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token, "X-Correlation-Id", "corr-1", "X-Request-Id", "req-1")
	assert.Equal(t, "corr-1", resp.Header.Get("X-Correlation-Id"))
	assert.Empty(t, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "corr-1", seen)
}

// With chi's RequestID middleware in front, the Handler takes its id
// through Config.RequestID: one id per request, everywhere.
func TestRequestIDFromChiMiddleware(t *testing.T) {
	a := newAPI(t)
	var lines bytes.Buffer
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	var hostSaw string
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hostSaw = middleware.GetReqID(r.Context())
			next.ServeHTTP(w, r)
		})
	})
	r.Mount("/", httpserver.New(a.svc, httpserver.Config{RequestLog: &lines, Logger: discardLogger(),
		RequestID: func(r *http.Request) string { return middleware.GetReqID(r.Context()) }}))
	resp, body := get(t, r, "/v1/users", "Authorization", "Bearer "+a.token)
	require.Equal(t, 200, resp.StatusCode, body)
	require.NotEmpty(t, hostSaw)
	assert.Equal(t, hostSaw, resp.Header.Get("X-Request-Id"))
	assert.Equal(t, hostSaw, logLines(t, &lines)[0]["request_id"])

	// chi takes the upstream X-Request-Id itself, and so the Handler.
	resp, _ = get(t, r, "/v1/users", "Authorization", "Bearer "+a.token, "X-Request-Id", "from-the-balancer")
	assert.Equal(t, "from-the-balancer", resp.Header.Get("X-Request-Id"))
}

// AssignRequestID gives the host's middleware the id the Handler then
// logs; the Handler still writes the request's line.
func TestAssignRequestIDForHostMiddleware(t *testing.T) {
	a := newAPI(t)
	var lines bytes.Buffer
	cfg := httpserver.Config{RequestLog: &lines, Logger: discardLogger()}
	var hostSaw []string
	host := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hostSaw = append(hostSaw, httpserver.RequestID(r.Context()))
			next.ServeHTTP(w, r)
		})
	}
	h := httpserver.AssignRequestID(cfg, host(httpserver.New(a.svc, cfg)))
	for _, sent := range []string{"", "upstream-7"} {
		lines.Reset()
		resp, _ := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token, "X-Request-Id", sent)
		id := resp.Header.Get("X-Request-Id")
		assert.Equal(t, []string{id}, resp.Header.Values("X-Request-Id"))
		if sent != "" {
			assert.Equal(t, sent, id)
		}
		assert.Equal(t, id, hostSaw[len(hostSaw)-1])
		l := logLines(t, &lines)
		require.Len(t, l, 1)
		assert.Equal(t, id, l[0]["request_id"])
	}
}

// Without the request line, the cause of a 5xx is still logged.
func TestDisableRequestLogKeepsCauses(t *testing.T) {
	a := newAPI(t)
	var logged bytes.Buffer
	h := httpserver.New(a.svc, httpserver.Config{
		Logger:            slog.New(slog.NewJSONHandler(&logged, nil)),
		DisableRequestLog: true,
		Authenticate: func(r *http.Request) (orgadmin.Caller, bool, error) {
			if r.Header.Get("X-Fail") != "" {
				return orgadmin.Caller{}, false, errors.New("directory down")
			}
			return orgadmin.Caller{}, false, nil
		},
	})
	resp, _ := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token, "X-Request-Id", "r-1")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "r-1", resp.Header.Get("X-Request-Id"))
	assert.Empty(t, logged.String())

	resp, _ = get(t, h, "/v1/users", "Authorization", "Bearer "+a.token, "X-Fail", "1", "X-Request-Id", "r-2")
	assert.Equal(t, 500, resp.StatusCode)
	l := logLines(t, &logged)
	require.Len(t, l, 1)
	assert.Equal(t, "internal error", l[0]["msg"])
	assert.Equal(t, "ERROR", l[0]["level"])
	assert.Equal(t, "r-2", l[0]["request_id"])
	assert.Contains(t, l[0]["error"], "directory down")
}

// ssoHook is the authentication of a host that knows its users by a
// header its gateway sets (X-SSO-User): a user of org, acted as through
// the Service; no header declines.
func ssoHook(svc *orgadmin.Service, org string) func(*http.Request) (orgadmin.Caller, bool, error) {
	return func(r *http.Request) (orgadmin.Caller, bool, error) {
		name := r.Header.Get("X-SSO-User")
		if name == "" {
			return orgadmin.Caller{}, false, nil
		}
		c, err := svc.ActAs(r.Context(), org, name)
		if errors.Is(err, orgadmin.ErrNotFound) {
			return orgadmin.Caller{}, false, orgadmin.ErrUnauthorized
		}
		return c, err == nil, err
	}
}

// The authentication hook maps a request to a Caller, or declines to the
// bearer token; the Service still decides every operation.
func TestAuthenticateHook(t *testing.T) {
	a := newAPI(t)
	ctx := t.Context()
	_, err := a.svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "mia"})
	require.NoError(t, err)
	require.NoError(t, a.svc.CreateOrg(ctx, "globex"))
	_, err = a.svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "gus", Role: orgadmin.RoleAdmin})
	require.NoError(t, err)
	h := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(), Authenticate: ssoHook(a.svc, "acme")})

	// Mapped: the admin by SSO, without a token.
	resp, body := get(t, h, "/v1/users", "X-SSO-User", "admin")
	require.Equal(t, 200, resp.StatusCode, body)
	assert.Contains(t, body, `"username":"mia"`)
	assert.NotContains(t, body, "gus", "only the hook's org")
	// A Member by SSO is a Member: 403 where the Service says so, its own
	// instances allowed.
	resp, body = get(t, h, "/v1/users", "X-SSO-User", "mia")
	assert.Equal(t, 403, resp.StatusCode, body)
	resp, body = get(t, h, "/v1/users/mia/instances", "X-SSO-User", "mia")
	assert.Equal(t, 200, resp.StatusCode, body)
	resp, _ = get(t, h, "/v1/users/admin/instances", "X-SSO-User", "mia")
	assert.Equal(t, 403, resp.StatusCode)
	// A user of another org is unknown to the hook built for acme.
	resp, body = get(t, h, "/v1/users", "X-SSO-User", "gus")
	assert.Equal(t, 401, resp.StatusCode, body)
	assert.JSONEq(t, `{"message":"Invalid Credentials","code":"UNAUTHORIZED"}`, body)
	// Refused by the hook, a valid bearer token is not tried: no wider.
	resp, _ = get(t, h, "/v1/users", "X-SSO-User", "nobody", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 401, resp.StatusCode)

	// Declined: the bearer token decides.
	resp, _ = get(t, h, "/v1/users", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 200, resp.StatusCode)
	resp, _ = get(t, h, "/v1/users")
	assert.Equal(t, 401, resp.StatusCode)
	resp, _ = get(t, h, "/v1/users", "Authorization", "Bearer not-a-token")
	assert.Equal(t, 401, resp.StatusCode)
}

// A failing hook is a 500 whose cause is logged, never a fallback to the
// token; a hook's Caller the Service did not make (Caller{}: its fields
// cannot be set elsewhere) is a 401.
func TestAuthenticateHookCannotWidenAccess(t *testing.T) {
	a := newAPI(t)
	ctx := t.Context()
	mia, err := a.svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "mia"})
	require.NoError(t, err)
	require.NoError(t, a.svc.CreateOrg(ctx, "globex"))
	_, err = a.svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "gus"})
	require.NoError(t, err)
	var logged bytes.Buffer
	hooks := map[string]func(*http.Request) (orgadmin.Caller, bool, error){
		"fails": func(*http.Request) (orgadmin.Caller, bool, error) {
			return orgadmin.Caller{}, false, errors.New("sso backend unreachable")
		},
		"fails and answers": func(*http.Request) (orgadmin.Caller, bool, error) {
			c, _ := a.svc.ActAs(ctx, "acme", "admin")
			return c, true, errors.New("half done")
		},
		"made by hand": func(*http.Request) (orgadmin.Caller, bool, error) {
			return orgadmin.Caller{}, true, nil
		},
	}
	for name, hook := range hooks {
		t.Run(name, func(t *testing.T) {
			logged.Reset()
			h := httpserver.New(a.svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&logged, nil)), Authenticate: hook})
			resp, body := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token)
			if strings.HasPrefix(name, "fails") {
				require.Equal(t, 500, resp.StatusCode, body)
				assert.JSONEq(t, `{"message":"Internal Error","code":"INTERNAL_SERVER_ERROR"}`, body)
				assert.Contains(t, logged.String(), "authenticate hook")
				return
			}
			require.Equal(t, 401, resp.StatusCode, body)
			resp, _ = get(t, h, "/v1/users/gus/instances", "Authorization", "Bearer "+a.token)
			assert.Equal(t, 401, resp.StatusCode)
		})
	}
	// A hook's Caller has the authority its user has, whatever token the
	// request also carries: the Member mia can neither list users nor
	// read another user's configuration (403), though the request bears
	// the Admin's token.
	h := httpserver.New(a.svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(&logged, nil)),
		Authenticate: func(r *http.Request) (orgadmin.Caller, bool, error) {
			c, err := a.svc.ActAs(r.Context(), "acme", mia.Username)
			return c, true, err
		}})
	resp, body := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 403, resp.StatusCode, body)
	resp, body = get(t, h, "/v1/users/admin/instances", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 403, resp.StatusCode, body)
	resp, body = get(t, h, "/v1/users/mia/instances", "Authorization", "Bearer "+a.token)
	assert.Equal(t, 200, resp.StatusCode, body)
}

// A hook's error is a 401 when it is an orgadmin error (the hook refuses
// the request), a 500 when it is anything else (the hook failed), and
// the bearer token is never tried after it.
func TestAuthenticateHookErrorsByCode(t *testing.T) {
	a := newAPI(t)
	for _, c := range []struct {
		err    error
		status int
	}{
		{orgadmin.ErrUnauthorized, 401},
		{orgadmin.ErrNotFound, 401},
		{orgadmin.ErrForbidden, 401},
		{orgadmin.ErrBadRequest, 401},
		{orgadmin.ErrInternal, 500},
		{errors.New("ldap: connection refused"), 500},
	} {
		h := httpserver.New(a.svc, httpserver.Config{Logger: discardLogger(),
			Authenticate: func(*http.Request) (orgadmin.Caller, bool, error) { return orgadmin.Caller{}, false, c.err }})
		resp, body := get(t, h, "/v1/users", "Authorization", "Bearer "+a.token)
		assert.Equal(t, c.status, resp.StatusCode, "%v: %s", c.err, body)
	}
}
