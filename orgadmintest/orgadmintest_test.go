package orgadmintest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

// get sends GET path with a bearer token ("" sends none) and returns the
// status and body.
func get(tb testing.TB, srv *orgadmintest.Server, path, token string) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), "GET", srv.URL()+path, nil)
	require.NoError(tb, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := srv.Client().Do(req)
	require.NoError(tb, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	return res.StatusCode, body
}

func TestNewServerDefaults(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	assert.Equal(t, "default", srv.Org())
	assert.Equal(t, "admin", srv.Admin())
	status, body := get(t, srv, "/v1/users", srv.AdminToken())
	require.Equal(t, 200, status, "%s", body)
	assert.Contains(t, string(body), `"username":"admin"`)
	status, _ = get(t, srv, "/healthz", "")
	assert.Equal(t, 200, status)
	status, _ = get(t, srv, "/docs/specs", "")
	assert.Equal(t, 200, status)

	now := srv.Now()
	assert.WithinDuration(t, time.Now(), now, time.Minute, "the clock starts at the real time")
	time.Sleep(2 * time.Millisecond)
	assert.Equal(t, now, srv.Now(), "and stands still")
	srv.FastForward(time.Hour)
	assert.Equal(t, now.Add(time.Hour), srv.Now())
	u, ok := srv.User("ADMIN")
	require.True(t, ok)
	assert.Equal(t, orgadmin.RoleAdmin, u.Role)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := orgadmintest.NewServer(t,
		orgadmintest.WithOrg("acme"), orgadmintest.WithAdmin("root"),
		orgadmintest.WithAdminToken("fixed-admin-token-0001"), orgadmintest.WithStart(start),
		orgadmintest.WithSeedFile("../examples/seed.json"),
		orgadmintest.WithConfig(orgadmin.Config{MaxTokensPerUser: 1, Now: time.Now}))
	assert.Equal(t, "fixed-admin-token-0001", srv.AdminToken())
	assert.Equal(t, start, srv.Now(), "WithConfig does not replace the clock")
	var names []string
	for _, u := range srv.Users() {
		names = append(names, u.Username)
	}
	assert.Equal(t, []string{"alice", "bob", "dashboards", "root"}, names)
	status, _ := get(t, srv, "/v1/users", "dev-admin-token-change-me")
	assert.Equal(t, 200, status, "a seeded token works")
	_, err := srv.Service().CreateToken(t.Context(), mustActAs(t, srv, "root"), "dashboards", orgadmin.CreateTokenInput{Name: "x"})
	require.NoError(t, err)
	_, err = srv.Service().CreateToken(t.Context(), mustActAs(t, srv, "root"), "dashboards", orgadmin.CreateTokenInput{Name: "y"})
	assert.ErrorIs(t, err, orgadmin.ErrBadRequest, "MaxTokensPerUser: 1")
}

// Reset puts a shared Server back as NewServer left it: its users,
// tokens, clock, faults and journal, with the same URL and Admin token
// and the Options' fixtures loaded again.
func TestReset(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := orgadmintest.NewServer(t, orgadmintest.WithStart(start), orgadmintest.WithSeedFile("../examples/seed.json"))
	names := func() []string {
		var names []string
		for _, u := range srv.Users() {
			names = append(names, u.Username)
		}
		return names
	}
	fresh := names()
	url, token := srv.URL(), srv.AdminToken()
	old := srv.Service()

	srv.CreateServiceAccount("robot")
	robotToken := srv.CreateToken("robot", orgadmin.CreateTokenInput{})
	srv.InOrg("other").CreateServiceAccount("elsewhere")
	srv.FastForward(time.Hour)
	status, _ := get(t, srv, "/v1/users", token)
	require.Equal(t, 200, status)
	srv.InjectFault(orgadmintest.Fault{Status: 503})

	srv.Reset()
	assert.Empty(t, srv.Journal(), "the journal is emptied")
	assert.Equal(t, fresh, names(), "the fixtures, and nothing made since")
	assert.Equal(t, start, srv.Now(), "the clock is back at its start")
	assert.Equal(t, url, srv.URL())
	assert.Equal(t, token, srv.AdminToken())
	_, ok := srv.InOrg("other").User("elsewhere")
	assert.False(t, ok, "every organization is emptied")
	status, body := get(t, srv, "/v1/users", token)
	require.Equal(t, 200, status, "no fault is left, and the Admin's token works: %s", body)
	assert.NotContains(t, string(body), "robot")
	status, _ = get(t, srv, "/v1/users/robot/tokens", robotToken)
	assert.Equal(t, 401, status, "a token made before is gone")
	status, _ = get(t, srv, "/v1/users", "dev-admin-token-change-me")
	assert.Equal(t, 200, status, "a seeded token works again")
	assert.Len(t, srv.Journal(), 3)

	_, err := old.GetUser(t.Context(), srv.Org(), "robot")
	assert.NoError(t, err, "a Service got before keeps the old state")
	_, err = srv.Service().GetUser(t.Context(), srv.Org(), "robot")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
}

func mustActAs(tb testing.TB, srv *orgadmintest.Server, username string) orgadmin.Caller {
	tb.Helper()
	c, err := srv.Service().ActAs(tb.Context(), srv.Org(), username)
	require.NoError(tb, err)
	return c
}

func TestSeedAndInspect(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.SeedJSON(`{"organizations": [{"id": "default", "users": [
		{"username": "robot", "is_service_account": true,
		 "tokens": [{"name": "ci", "value": "robot-token-000001", "ttl": 600}],
		 "instances": {"read_write": {"instance_size": "mega"},
		               "read_scaling": {"instance_size": "standard", "flock_size": 2}},
		 "ducklings": [{"id": "rw", "status": "cooldown"}, {"id": "rs.1", "status": "active"}]}]}]}`)
	toks := srv.Tokens("robot")
	require.Len(t, toks, 1)
	assert.Equal(t, "ci", toks[0].Name)
	assert.True(t, srv.Now().Add(10*time.Minute).Truncate(time.Millisecond).Equal(toks[0].ExpireAt), "ttl counts from the clock")
	assert.Equal(t, orgadmin.SizeMega, srv.InstanceConfig("robot").ReadWrite.Size)

	assert.Equal(t, []orgadmin.ActiveAccount{{Username: "robot", Ducklings: []orgadmin.Duckling{
		{ID: "rw", Type: "read_write", Status: "cooldown"}, {ID: "rs.1", Type: "read_scaling", Status: "active"},
	}}}, srv.ActiveAccounts())
	srv.FastForward(5 * time.Minute) // mega cools down for 300 s
	assert.Equal(t, []orgadmin.Duckling{{ID: "rs.1", Type: "read_scaling", Status: "active"}}, srv.ActiveAccounts()[0].Ducklings)
	srv.MarkDucklingIdle("robot", "rs.1")
	srv.FastForward(time.Minute)
	assert.Empty(t, srv.ActiveAccounts())

	srv.Seed(orgadmin.Seed{Organizations: []orgadmin.SeedOrg{{ID: "other", Users: []orgadmin.SeedUser{{Username: "x"}}}}})
	_, ok := srv.User("x")
	assert.False(t, ok, "another organization's users are not Org's")
}

// The scenario of the issue, over plain HTTP: a token stops working when
// its ttl runs out on the Server's clock.
func TestFastForwardExpiresTokens(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.CreateServiceAccount("robot")
	token := srv.CreateToken("robot", orgadmin.CreateTokenInput{TTL: orgadmin.Some(300 * time.Second)})
	status, _ := get(t, srv, "/v1/users/robot/tokens", token)
	assert.Equal(t, 200, status)
	srv.FastForward(299 * time.Second)
	status, _ = get(t, srv, "/v1/users/robot/tokens", token)
	assert.Equal(t, 200, status)
	srv.FastForward(time.Second)
	status, body := get(t, srv, "/v1/users/robot/tokens", token)
	assert.Equal(t, 401, status)
	assert.Contains(t, string(body), `"code":"UNAUTHORIZED"`)
}

func TestDivesAndHumans(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.CreateUser(orgadmin.NewUser{Username: "carol", FirstName: "Carol"})
	srv.GrantPrivilege("carol", orgadmin.PrivilegeViewAllMembers)
	carol := srv.CreateToken("carol", orgadmin.CreateTokenInput{})
	status, _ := get(t, srv, "/v1/users", carol)
	assert.Equal(t, 200, status, "a human user's token, with the privilege")

	const dive = "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60"
	srv.RegisterDive(orgadmin.Dive{ID: dive, Title: "Sales"})
	srv.CreateServiceAccount("viewer")
	value, err := srv.Service().CreateEmbedSession(t.Context(), mustActAs(t, srv, "admin"), dive, orgadmin.CreateEmbedSessionInput{Username: "viewer"})
	require.NoError(t, err)
	es, ok := srv.EmbedSession(value)
	require.True(t, ok)
	assert.Equal(t, "viewer", es.Username)
	srv.FastForward(24 * time.Hour)
	_, ok = srv.EmbedSession(value)
	assert.False(t, ok, "sessions expire on the Server's clock")
}

func TestFeedbackRateFollowsTheClock(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t, orgadmintest.WithFeedbackRate(1))
	path := "/docs/api/feedback/agent?" + url.Values{"page_path": {"/x"}, "text": {"hi"}}.Encode()
	status, _ := get(t, srv, path, "")
	assert.Equal(t, 200, status)
	status, _ = get(t, srv, path, "")
	assert.Equal(t, 429, status)
	srv.FastForward(time.Minute)
	status, _ = get(t, srv, path, "")
	assert.Equal(t, 200, status)
}

func TestRunWithoutATest(t *testing.T) {
	t.Parallel()
	srv, err := orgadmintest.Run(orgadmintest.WithOrg("acme"))
	require.NoError(t, err)
	status, _ := get(t, srv, "/v1/users", srv.AdminToken())
	assert.Equal(t, 200, status)
	assert.PanicsWithValue(t, "orgadmintest: FastForward(-1s): the clock only moves forward", func() { srv.FastForward(-time.Second) })
	assert.Panics(t, func() { srv.CreateServiceAccount("1bad") })
	srv.Close()
	srv.Close() // twice is fine

	_, err = orgadmintest.Run(orgadmintest.WithSeed(orgadmin.Seed{Organizations: []orgadmin.SeedOrg{{ID: "bad id"}}}))
	assert.ErrorContains(t, err, "invalid organization id")
	_, err = orgadmintest.Run(orgadmintest.WithAdminToken("short"))
	assert.ErrorContains(t, err, "bootstrap")
	_, err = orgadmintest.Run(orgadmintest.WithSeedFile("no/such/file.json"))
	assert.Error(t, err)
}

// The document the Server publishes at /docs/specs is valid, and what the
// Server answers matches it.
func TestLiveResponsesMatchTheServedDocument(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	status, raw := get(t, srv, "/docs/specs", "")
	require.Equal(t, 200, status)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	require.NoError(t, err)
	require.NoError(t, doc.Validate(t.Context()))
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)

	srv.CreateServiceAccount("robot")
	robot := srv.CreateToken("robot", orgadmin.CreateTokenInput{TTL: orgadmin.Some(300 * time.Second)})
	srv.MarkDucklingActive("robot", "rw")
	admin := "Bearer " + srv.AdminToken()
	for _, tc := range []struct {
		method, path, auth, body string
		status                   int
	}{
		{"GET", "/v1/users?limit=1", admin, "", 200},
		{"GET", "/v1/users?limit=0", admin, "", 400},
		{"POST", "/v1/users", admin, `{"username":"reporter","description":"d"}`, 200},
		{"POST", "/v1/users", admin, `{"username":"reporter"}`, 400},
		{"POST", "/v1/users/robot/tokens", admin, `{"name":"n","ttl":3600}`, 200},
		{"GET", "/v1/users/robot/tokens", admin, "", 200},
		{"GET", "/v1/users/robot/instances", "Bearer " + robot, "", 200},
		{"PUT", "/v1/users/robot/instances", admin, `{"config":{"read_write":{"instance_size":"giga"},"read_scaling":{"instance_size":"pulse","flock_size":1}}}`, 200},
		{"GET", "/v1/active_accounts", admin, "", 200},
		{"GET", "/v1/active_accounts", "Bearer " + robot, "", 403},
		{"GET", "/v1/active_accounts", "", "", 401},
		{"DELETE", "/v1/users/robot/tokens/00000000-0000-4000-8000-000000000000", admin, "", 404},
		{"POST", "/v1/dives/00000000-0000-4000-8000-000000000000/embed-session", admin, `{"username":"robot"}`, 404},
		{"DELETE", "/v1/users/reporter", admin, "", 200},
		{"GET", "/docs/api/feedback/agent?page_path=%2Fx&text=hi", "", "", 200},
		{"GET", "/docs/api/feedback/agent?page_path=%2Fx", "", "", 400},
	} {
		req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL()+tc.path, strings.NewReader(tc.body))
		require.NoError(t, err)
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, tc.status, res.StatusCode, "%s %s: %s", tc.method, tc.path, body)
		require.True(t, json.Valid(body))

		req.Body = io.NopCloser(strings.NewReader(tc.body))
		route, params, err := router.FindRoute(req)
		require.NoError(t, err, "%s %s", tc.method, tc.path)
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
			Status:                 res.StatusCode,
			Header:                 res.Header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                &openapi3filter.Options{IncludeResponseStatus: true},
		}
		assert.NoError(t, openapi3filter.ValidateResponse(context.Background(), in), "%s %s: %s", tc.method, tc.path, body)
	}
}

// A fixture that breaks a rule fails naming where, with "seed" said once.
func TestSeedErrorsSaySeedOnce(t *testing.T) {
	srv, err := orgadmintest.Run()
	require.NoError(t, err)
	defer srv.Close()
	assert.PanicsWithValue(t, "orgadmintest: seed: organizations[0].users[0].rol: unknown key", func() {
		srv.SeedJSON(`{"organizations": [{"id": "acme", "users": [{"username": "a", "rol": "Admin"}]}]}`)
	})
	assert.PanicsWithValue(t, `orgadmintest: seed: organizations[0] ("a b"): invalid organization id`, func() {
		srv.SeedJSON(`{"organizations": [{"id": "a b"}]}`)
	})
}

// The stand-in answers the edges as the example server does: an unclean
// path is a plain-text 404, never a redirect; /healthz takes GET and HEAD
// only.
func TestEdgesLikeTheServer(t *testing.T) {
	srv := orgadmintest.NewServer(t)
	for _, p := range []string{"//v1/users", "/v1/./users", "/v1/users/../users", "/./healthz"} {
		status, body := get(t, srv, p, srv.AdminToken())
		assert.Equal(t, http.StatusNotFound, status, p)
		assert.Equal(t, "404 page not found\n", string(body), p)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL()+"/healthz", nil)
	require.NoError(t, err)
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	assert.Equal(t, "GET, HEAD", res.Header.Get("Allow"))
}

// The fixtures a Server loads are its own: a seed changed after WithSeed,
// or a seed file changed after the start, changes nothing that Reset
// loads.
func TestResetLoadsTheFixturesAsGiven(t *testing.T) {
	t.Parallel()
	sd := orgadmin.Seed{Organizations: []orgadmin.SeedOrg{{ID: "default", Users: []orgadmin.SeedUser{
		{Username: "alice", Privileges: []string{orgadmin.PrivilegeViewAllMembers}},
	}}}}
	file := filepath.Join(t.TempDir(), "seed.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"organizations": [{"id": "default", "users": [{"username": "bob"}]}]}`), 0o600))
	srv := orgadmintest.NewServer(t, orgadmintest.WithSeed(sd), orgadmintest.WithSeedFile(file))

	sd.Organizations[0].Users[0].Username = "mallory"
	sd.Organizations[0].Users[0].Privileges[0] = "something.else"
	require.NoError(t, os.WriteFile(file, []byte(`{"organizations": [{"id": "default", "users": [{"username": "eve"}]}]}`), 0o600))
	srv.Reset()

	var names []string
	for _, u := range srv.Users() {
		names = append(names, u.Username)
	}
	assert.Equal(t, []string{"admin", "alice", "bob"}, names)
	alice, ok := srv.User("alice")
	require.True(t, ok)
	assert.Equal(t, []string{orgadmin.PrivilegeViewAllMembers}, alice.Privileges)
}
