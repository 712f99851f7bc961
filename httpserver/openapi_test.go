package httpserver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
)

// The OpenAPI document, loaded once for the whole suite. Every request
// doRequest sends and every response it receives is checked against it
// (checkExchange), so that the document and the handlers cannot drift.
var openAPI = sync.OnceValues(func() (*openapi3.T, error) {
	// The document says "format: uuid"; JSON Schema leaves formats to the
	// validator, so name what a uuid is (RFC 9562: any case on input).
	openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(
		`^(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`))
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpserver.OpenAPI())
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(loader.Context)
})

var openAPIRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openAPI()
	if err != nil {
		return nil, err
	}
	return gorillamux.NewRouter(doc)
})

// bearerPresent accepts, for request validation, any Authorization header
// of the bearer form; whether the token is any good is the server's
// business (and a 401 is then a documented answer).
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	h := in.RequestValidationInput.Request.Header
	if _, ok := bearerModel(h.Get("Authorization")); !ok || len(h.Values("Authorization")) != 1 {
		return errors.New("no bearer credential")
	}
	return nil
}

// checkExchange checks one request and the response to it against the
// OpenAPI document:
//
//   - a request the document has no operation for (an unknown path, or a
//     known path with another method: the plain-text 404 and 405) is not
//     checked;
//   - every response must be one the document describes for its operation
//     and status, error envelopes included;
//   - a request the document calls invalid (bad parameters, body or
//     credential) must not succeed: its answer is an error. Requests the document allows may still
//     fail with a 4xx for rules a schema cannot say (a taken username, a
//     cooldown on a pulse instance).
func checkExchange(tb testing.TB, req *http.Request, reqBody []byte, res response) {
	tb.Helper()
	doc, err := openAPI()
	require.NoError(tb, err, "the OpenAPI document loads and validates")
	router, err := openAPIRouter()
	require.NoError(tb, err)

	// A fresh copy of the request, with its body readable again.
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, pathParams, err := router.FindRoute(vreq)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		return
	}
	require.NoError(tb, err)
	// The router matches on the escaped path and hands the parameters over
	// still escaped; the server sees them unescaped.
	for k, v := range pathParams {
		if u, err := url.PathUnescape(v); err == nil {
			pathParams[k] = u
		}
	}
	reqInput := &openapi3filter.RequestValidationInput{
		Request:    vreq,
		PathParams: pathParams,
		Route:      route,
		Options: &openapi3filter.Options{
			AuthenticationFunc: bearerPresent,
			MultiError:         true,
		},
	}
	// The message of a refusal is costly to build (a third of a fuzz
	// input's time): build it only for a failure.
	if reqErr := openapi3filter.ValidateRequest(context.Background(), reqInput); reqErr != nil && res.status < 400 {
		assert.Failf(tb, "a refused request succeeded",
			"%s %s: the document refuses the request (%v) but the server answered %s", req.Method, req.URL.Path, clip(reqErr.Error(), 500), res)
	}
	resInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 res.status,
		Header:                 res.header,
		Body:                   io.NopCloser(bytes.NewReader(res.body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	require.NoError(tb, openapi3filter.ValidateResponse(context.Background(), resInput),
		"%s %s: the response breaks the OpenAPI document of %s: %s", req.Method, req.URL.Path, doc.Info.Title, res)
}

// clip shortens s to at most n bytes for a failure message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---------------------------------------------------------------------------
// The document itself.

func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, err := openAPI()
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", doc.Info.Version, "SPEC: the interface description is version 1.0.0")
	assert.True(t, strings.HasPrefix(doc.OpenAPI, "3.0."), "OpenAPI 3.0: %s", doc.OpenAPI)
	scheme := doc.Components.SecuritySchemes["bearerAuth"]
	require.NotNil(t, scheme)
	assert.Equal(t, "http", scheme.Value.Type)
	assert.Equal(t, "bearer", scheme.Value.Scheme)
}

// SPEC: the operation names of the endpoints. (SPEC names no operation for
// list users and feedback; the document's names are ours.)
var operationIDs = map[string]string{
	"GET /v1/users/{username}/instances":            "instances-getInstanceConfigForUser",
	"PUT /v1/users/{username}/instances":            "instances-setInstanceConfigForUser",
	"GET /v1/active_accounts":                       "instances-getActiveAccounts",
	"POST /v1/users":                                "users-createServiceAccount",
	"GET /v1/users":                                 "users-list",
	"DELETE /v1/users/{username}":                   "users-delete",
	"POST /v1/users/{username}/tokens":              "users-createToken",
	"GET /v1/users/{username}/tokens":               "users-listTokens",
	"DELETE /v1/users/{username}/tokens/{token_id}": "users-deleteToken",
	"POST /v1/dives/{dive_id}/embed-session":        "dashboards-createEmbedSession",
	"GET /docs/api/feedback/agent":                  "feedback-submitFeedback",
	// An extension, outside the hosted API's /v1.
	"GET /ext/audit/events": "audit-listEvents",
}

func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	doc, err := openAPI()
	require.NoError(t, err)
	got := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			got[method+" "+path] = op.OperationID
			t.Run(method+" "+path, func(t *testing.T) {
				assert.NotEmpty(t, op.Description)
				assert.Contains(t, op.Responses.Map(), "200")
				wantErrors := []string{"400", "401", "403", "404", "500"}
				if path == "/docs/api/feedback/agent" {
					wantErrors = []string{"400", "429", "500"}
					require.NotNil(t, op.Security, "feedback needs no bearer")
					assert.Empty(t, *op.Security, "feedback needs no bearer")
				} else {
					assert.Nil(t, op.Security, "the document-wide bearer requirement applies")
				}
				for _, status := range wantErrors {
					assert.Contains(t, op.Responses.Map(), status)
				}
			})
		}
	}
	assert.Equal(t, operationIDs, got)
}

// DESIGN §3: the document is served without credentials at /docs/specs.
func TestOpenAPIServedAtDocsSpecs(t *testing.T) {
	t.Parallel()
	w := newWorld(t, orgadmin.Config{})
	r := w.do("GET", httpserver.OpenAPIPath, "", nil)
	require.Equal(t, http.StatusOK, r.status, "response: %s", r)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t, httpserver.OpenAPI(), r.body)
	doc, err := openapi3.NewLoader().LoadFromData(r.body)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))

	etag := r.header.Get("ETag")
	require.NotEmpty(t, etag)
	req, err := http.NewRequestWithContext(t.Context(), "GET", w.srv.URL+httpserver.OpenAPIPath, nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", etag)
	res, err := testHTTP.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotModified, res.StatusCode)

	head := w.do("HEAD", httpserver.OpenAPIPath, "", nil)
	assert.Equal(t, http.StatusOK, head.status)
	assert.Empty(t, head.body)
	assert.Equal(t, http.StatusMethodNotAllowed, w.do("POST", httpserver.OpenAPIPath, "", "{}").status)
}

// The validation wrapper itself: a response the document does not describe
// is caught.
func TestCheckExchangeCatchesDrift(t *testing.T) {
	t.Parallel()
	doc, err := openAPI()
	require.NoError(t, err)
	require.NotNil(t, doc)
	req, err := http.NewRequest("GET", "http://example.test/v1/active_accounts", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer x")
	for _, tc := range []struct {
		status    int
		body      string
		requestID string
	}{
		{200, `{"accounts":[{"username":"a","ducklings":[{"id":"rw","type":"read_write","status":"asleep"}]}]}`, ""},
		{200, `{"accounts":[],"extra":1}`, ""},
		{404, `{"message":"Not Found","code":"BAD_REQUEST"}`, ""},
		{418, `{"message":"Not Found","code":"NOT_FOUND"}`, ""},
		{200, `{"accounts":[]}`, "two words"},
		{401, `{"message":"Invalid Credentials","code":"UNAUTHORIZED"}`, strings.Repeat("x", httpserver.MaxRequestIDLen+1)},
	} {
		header := http.Header{"Content-Type": {"application/json"}}
		if tc.requestID != "" {
			header.Set(httpserver.DefaultRequestIDHeader, tc.requestID)
		}
		ft := &failRecorder{TB: t}
		func() {
			defer func() { _ = recover() }()
			checkExchange(ft, req, nil, response{status: tc.status, header: header, body: []byte(tc.body)})
		}()
		assert.True(t, ft.failed, "%d %s (request id %q) passed", tc.status, tc.body, tc.requestID)
	}
	// The same answers with a well-formed id pass.
	checkExchange(t, req, nil, response{status: 200, header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"0123456789abcdef"}}, body: []byte(`{"accounts":[]}`)})
}

// failRecorder is a testing.TB that records failure instead of failing.
type failRecorder struct {
	testing.TB
	failed bool
}

func (f *failRecorder) Helper()                      {}
func (f *failRecorder) Errorf(string, ...any)        { f.failed = true }
func (f *failRecorder) FailNow()                     { f.failed = true; panic(f) }
func (f *failRecorder) Fatalf(string, ...any)        { f.FailNow() }
func (f *failRecorder) Logf(format string, a ...any) { _ = fmt.Sprintf(format, a...) }

// The username pattern of the document is the rule of the root package.
func TestOpenAPIUsernamePatternIsTheRule(t *testing.T) {
	t.Parallel()
	doc, err := openAPI()
	require.NoError(t, err)
	p := doc.Components.Schemas["CreateServiceAccountRequest"].Value.Properties["username"].Value.Pattern
	re := regexp.MustCompile(p)
	for _, name := range []string{"a", "Émile", "ab_1", "a٣", "_a", "1a", "a-b", "a b", "日本", "a\u0301", "ǅx", "x²"} {
		assert.Equal(t, orgadmin.ValidUsername(name), re.MatchString(name), "%q", name)
	}
}

// Every answer of the API carries the request's id in X-Request-Id (the
// client reads it into Error.RequestID): the document says so for every
// response of every operation, with the form of the ids the Handler
// gives, so that checkExchange checks the header of every answer.
func TestOpenAPIDocumentsTheRequestIDHeader(t *testing.T) {
	t.Parallel()
	doc, err := openAPI()
	require.NoError(t, err)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, res := range op.Responses.Map() {
				h := res.Value.Headers[httpserver.DefaultRequestIDHeader]
				if !assert.NotNil(t, h, "%s %s %s: no %s header", method, path, status, httpserver.DefaultRequestIDHeader) {
					continue
				}
				s := h.Value.Schema.Value
				require.NotNil(t, s.MaxLength, "%s %s %s", method, path, status)
				assert.EqualValues(t, httpserver.MaxRequestIDLen, *s.MaxLength, "%s %s %s", method, path, status)
				re := regexp.MustCompile(s.Pattern)
				for _, id := range []string{"0123456789abcdef", "req-1", "a.b~c:d/e+f=g@h;i_j", "x y", `x"y`, "é", ""} {
					assert.Equal(t, httpserver.ValidRequestID(id), re.MatchString(id), "%s %s %s: %q", method, path, status, id)
				}
			}
		}
	}
}

// DESIGN §8: a Duckling is rw, or rs.N for 0 ≤ N < flock_size, and
// flock_size is at most 64: the document's pattern takes exactly those ids.
func TestOpenAPIDucklingIDPattern(t *testing.T) {
	t.Parallel()
	doc, err := openAPI()
	require.NoError(t, err)
	re := regexp.MustCompile(doc.Components.Schemas["Duckling"].Value.Properties["id"].Value.Pattern)
	assert.True(t, re.MatchString("rw"))
	for n := range orgadmin.MaxFlockSize {
		assert.True(t, re.MatchString(fmt.Sprintf("rs.%d", n)), "rs.%d", n)
	}
	for _, id := range []string{"rs.64", "rs.99", "rs.100", "rs.00", "rs.01", "rs.-1", "rs.", "rs", "ro", "rw.0", " rw", "rs.1 "} {
		assert.False(t, re.MatchString(id), "%q", id)
	}
}
