package orgadmintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/client"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

// testHTTP sends the tests' requests through a transport of its own:
// httptest.Server.Close, which tests running in parallel call, closes
// http.DefaultTransport's idle connections and so can fail a request
// about to reuse one ("CloseIdleConnections called").
var testHTTP = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}

// do sends method path with the Admin's token to base and returns the
// response with its body read.
func do(tb testing.TB, base, method, path, token, body string) (*http.Response, []byte, error) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), method, base+path, strings.NewReader(body))
	require.NoError(tb, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := testHTTP.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, b, err
}

// noRetry is a client that tries each request once.
func noRetry(srv *orgadmintest.Server, token string) *client.Client {
	return client.New(srv.URL(), token, client.WithRetry(client.RetryPolicy{}))
}

func TestFaultAnswersTheNextRequests(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	f := srv.InjectFault(orgadmintest.Fault{Times: 2, Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond})
	for range 2 {
		res, body, err := do(t, srv.URL(), "GET", "/v1/users", srv.AdminToken(), "")
		require.NoError(t, err)
		assert.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		assert.Equal(t, "2", res.Header.Get("Retry-After"), "whole seconds, rounded up")
		assert.Equal(t, "application/json", res.Header.Get("Content-Type"))
		assert.JSONEq(t, `{"message":"Too Many Requests","code":"TOO_MANY_REQUESTS"}`, string(body))
		assert.NotEmpty(t, res.Header.Get("X-Request-Id"))
	}
	assert.Equal(t, 2, f.Hits())
	res, _, err := do(t, srv.URL(), "GET", "/v1/users", srv.AdminToken(), "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode, "the fault took its two requests")
	assert.Equal(t, 2, f.Hits())

	// A gateway's status is plain text; the client classifies it by status.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusBadGateway})
	_, err = noRetry(srv, srv.AdminToken()).ListTokens(t.Context(), "admin")
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusBadGateway, e.StatusCode)
	assert.Empty(t, e.Code)
	assert.Equal(t, "Bad Gateway", e.Message)

	// Injected codes match the sentinels as the API's own do.
	for status, sentinel := range map[int]error{
		400: orgadmin.ErrBadRequest, 401: orgadmin.ErrUnauthorized, 403: orgadmin.ErrForbidden,
		404: orgadmin.ErrNotFound, 429: orgadmin.ErrTooManyRequests, 500: orgadmin.ErrInternal,
	} {
		srv.InjectFault(orgadmintest.Fault{Times: 1, Status: status})
		_, err := noRetry(srv, srv.AdminToken()).ListTokens(t.Context(), "admin")
		assert.ErrorIs(t, err, sentinel, "%d", status)
	}
}

// An injected 400 is shaped as the API's own are: the OpenAPI document
// and the client promise every 400 at least one issue.
func TestInjectedBadRequestHasAnIssue(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusBadRequest})
	res, body, err := do(t, srv.URL(), "GET", "/v1/users", srv.AdminToken(), "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.JSONEq(t, `{"message": "Bad Request", "code": "BAD_REQUEST",
		"issues": [{"message": "Refused by an injected fault", "path": [], "code": "not_allowed"}]}`, string(body))
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusBadRequest})
	_, err = noRetry(srv, srv.AdminToken()).ListTokens(t.Context(), "admin")
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Len(t, e.Issues, 1)
	assert.Equal(t, orgadmin.IssueNotAllowed, e.Issues[0].Code)
	assert.Empty(t, e.Issues[0].Path)
}

// An injected 401 carries the challenge every 401 of the API carries
// (RFC 9110 requires one), with the same value.
func TestInjectedUnauthorizedHasTheChallenge(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	real, _, err := do(t, srv.URL(), "GET", "/v1/users", "not-a-token", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, real.StatusCode)
	require.NotEmpty(t, real.Header.Values("WWW-Authenticate"))

	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusUnauthorized})
	res, body, err := do(t, srv.URL(), "GET", "/v1/users", srv.AdminToken(), "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	assert.JSONEq(t, `{"message":"Invalid Credentials","code":"UNAUTHORIZED"}`, string(body))
	assert.Equal(t, real.Header.Values("WWW-Authenticate"), res.Header.Values("WWW-Authenticate"))

	// Other statuses carry none, as the API's own.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusForbidden})
	res, _, err = do(t, srv.URL(), "GET", "/v1/users", srv.AdminToken(), "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Empty(t, res.Header.Values("WWW-Authenticate"))
}

func TestFaultOnARoute(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.CreateServiceAccount("robot")
	c := noRetry(srv, srv.AdminToken())
	ctx := t.Context()
	f := srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}", Status: http.StatusServiceUnavailable})

	_, err := c.ListTokens(ctx, "robot")
	require.NoError(t, err, "another route")
	_, err = c.CreateToken(ctx, "robot", client.CreateTokenRequest{Name: "ci"})
	require.NoError(t, err, "another method")
	for range 3 {
		_, err = c.DeleteUser(ctx, "robot")
		var e *client.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusServiceUnavailable, e.StatusCode)
	}
	_, ok := srv.User("robot")
	assert.True(t, ok, "a fault before handling: the API never saw the request")
	assert.Equal(t, 3, f.Hits(), "Times 0: every matching request")

	f.Remove()
	_, err = c.DeleteUser(ctx, "robot")
	require.NoError(t, err)

	// A pattern without a method matches every method; ClearFaults ends
	// every fault.
	srv.InjectFault(orgadmintest.Fault{Route: "/v1/users/{username}/tokens", Status: http.StatusBadGateway})
	_, err = c.ListTokens(ctx, "admin")
	assert.Equal(t, http.StatusBadGateway, apiStatus(t, err))
	_, err = c.CreateToken(ctx, "admin", client.CreateTokenRequest{Name: "x"})
	assert.Equal(t, http.StatusBadGateway, apiStatus(t, err))
	srv.ClearFaults()
	_, err = c.ListTokens(ctx, "admin")
	require.NoError(t, err)
}

func apiStatus(tb testing.TB, err error) int {
	tb.Helper()
	var e *client.Error
	require.ErrorAs(tb, err, &e)
	return e.StatusCode
}

// Faults taken in the order they were injected, each for its own count.
func TestFaultsInOrder(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: 503})
	srv.InjectFault(orgadmintest.Fault{Times: 2, Status: 504})
	var got []int
	for range 4 {
		res, _, err := do(t, srv.URL(), "GET", "/healthz", "", "")
		require.NoError(t, err)
		got = append(got, res.StatusCode)
	}
	assert.Equal(t, []int{503, 504, 504, 200}, got)
}

func TestDroppedConnection(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	c := noRetry(srv, srv.AdminToken())
	ctx := t.Context()

	// Before handling: nothing happens, and no answer comes.
	srv.InjectFault(orgadmintest.Fault{Route: "POST /v1/users", Times: 1, Drop: true})
	_, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"})
	require.Error(t, err)
	var e *client.Error
	assert.False(t, errors.As(err, &e), "no answer, no *client.Error: %v", err)
	_, ok := srv.User("robot")
	assert.False(t, ok)

	// After handling: the write happened, the answer is lost.
	srv.InjectFault(orgadmintest.Fault{Route: "POST /v1/users", Times: 1, Drop: true, AfterHandling: true})
	_, err = c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"})
	require.Error(t, err)
	_, ok = srv.User("robot")
	assert.True(t, ok, "created, though the client never heard")

	// After handling, with a status: a gateway that lost the answer.
	srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}", Times: 1, Status: 504, AfterHandling: true})
	_, err = c.DeleteUser(ctx, "robot")
	assert.Equal(t, 504, apiStatus(t, err))
	_, ok = srv.User("robot")
	assert.False(t, ok, "deleted, though the answer was a 504")

	j := srv.Journal()
	require.Len(t, j, 3)
	assert.Equal(t, orgadmintest.Request{Method: "POST", Path: "/v1/users", Status: 0, RequestID: j[0].RequestID, Fault: true, Dropped: true, At: srv.Now()}, j[0])
	assert.Equal(t, orgadmintest.Request{Method: "POST", Path: "/v1/users", Status: 0, RequestID: j[1].RequestID, Fault: true, Dropped: true, At: srv.Now()}, j[1])
	assert.Equal(t, orgadmintest.Request{Method: "DELETE", Path: "/v1/users/robot", Status: 504, RequestID: j[2].RequestID, Fault: true, At: srv.Now()}, j[2])
}

// The client retries a DELETE whose answer was lost; the retry finds the
// user gone and says so.
func TestDeleteRetriedAfterALostAnswer(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	ctx := t.Context()
	c := client.New(srv.URL(), srv.AdminToken(), client.WithRetry(client.RetryPolicy{MaxRetries: 2, MinBackoff: time.Millisecond}))

	for _, f := range []orgadmintest.Fault{
		{Drop: true, AfterHandling: true},
		{Status: http.StatusBadGateway, AfterHandling: true},
	} {
		srv.CreateServiceAccount("robot")
		f.Route, f.Times = "DELETE /v1/users/{username}", 1
		srv.InjectFault(f)
		_, err := c.DeleteUser(ctx, "robot")
		assert.ErrorIs(t, err, client.ErrDeletedOnRetry)
		assert.ErrorIs(t, err, orgadmin.ErrNotFound)
		assert.Equal(t, http.StatusNotFound, apiStatus(t, err))
		_, ok := srv.User("robot")
		assert.False(t, ok)
	}

	// A 404 to a first attempt, or after a 429 (the server did nothing),
	// is a plain 404.
	_, err := c.DeleteUser(ctx, "ghost")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
	assert.NotErrorIs(t, err, client.ErrDeletedOnRetry)
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: http.StatusTooManyRequests})
	_, err = c.DeleteUser(ctx, "ghost")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
	assert.NotErrorIs(t, err, client.ErrDeletedOnRetry)

	// The same for tokens.
	srv.CreateServiceAccount("robot")
	tok, err := c.CreateToken(ctx, "robot", client.CreateTokenRequest{Name: "ci"})
	require.NoError(t, err)
	srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}/tokens/{token_id}", Times: 1, Drop: true, AfterHandling: true})
	err = c.DeleteToken(ctx, "robot", tok.ID)
	assert.ErrorIs(t, err, client.ErrDeletedOnRetry)
	assert.Empty(t, srv.Tokens("robot"))
}

// Idempotent requests are retried through injected 503s and 429s, and
// through a connection dropped before the API saw the request.
func TestClientRetriesThroughFaults(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	ctx := t.Context()
	c := client.New(srv.URL(), srv.AdminToken(), client.WithRetry(client.RetryPolicy{MaxRetries: 3, MinBackoff: time.Millisecond}))

	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: 503})
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: 429})
	srv.InjectFault(orgadmintest.Fault{Times: 1, Drop: true})
	cfg, err := c.SetInstanceConfig(ctx, "admin", client.InstanceConfig{
		ReadWrite:   client.InstanceSide{Size: client.SizeJumbo},
		ReadScaling: client.InstanceSide{Size: client.SizePulse, FlockSize: 1},
	})
	require.NoError(t, err)
	assert.Equal(t, client.SizeJumbo, cfg.ReadWrite.Size)
	var statuses []int
	for _, r := range srv.Journal() {
		statuses = append(statuses, r.Status)
	}
	assert.Equal(t, []int{503, 429, 0, 200}, statuses)

	// POST is never retried.
	srv.ResetJournal()
	srv.InjectFault(orgadmintest.Fault{Times: 1, Status: 503})
	_, err = c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"})
	assert.Equal(t, 503, apiStatus(t, err))
	assert.Len(t, srv.Journal(), 1)

	// Retries give up after MaxRetries, with the last answer.
	srv.InjectFault(orgadmintest.Fault{Times: 10, Status: 503})
	_, err = c.ListTokens(ctx, "admin")
	assert.Equal(t, 503, apiStatus(t, err))
	assert.Len(t, srv.Journal(), 1+4)
}

func TestDelay(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	// A delay alone lets the request through, late.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Delay: time.Millisecond})
	_, err := noRetry(srv, srv.AdminToken()).ListTokens(t.Context(), "admin")
	require.NoError(t, err)

	// A client that gives up first ends the request there.
	srv.InjectFault(orgadmintest.Fault{Times: 1, Delay: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = noRetry(srv, srv.AdminToken()).ListTokens(ctx, "admin")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// Closing the Server ends a delay under way: its client, which waits
// without a deadline, sees the connection closed without an answer, and
// Close returns without waiting out the delay.
func TestCloseEndsADelay(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	delay := srv.InjectFault(orgadmintest.Fault{Delay: 90 * time.Second}) // what a broken Close would wait out
	failed := make(chan error, 1)
	go func() {
		_, err := noRetry(srv, srv.AdminToken()).ListTokens(context.Background(), "admin")
		failed <- err
	}()
	// The fault counts the request as it takes it, just before the delay.
	require.Eventually(t, func() bool { return delay.Hits() == 1 }, time.Minute, time.Millisecond)
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case err := <-failed:
		require.ErrorContains(t, err, "(no answer)")
	case <-time.After(30 * time.Second):
		t.Fatal("the request still waits 30 s after Close")
	}
	<-closed
}

// The fake's Handler serves behind middleware of the test's own, faults
// and journal included.
func TestHandlerCanBeWrapped(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	var (
		mu   sync.Mutex
		seen []string
	)
	wrapped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("X-Wrapped", "yes")
		srv.Handler().ServeHTTP(plainWriter{w}, r) // a writer that can neither hijack nor unwrap
	}))
	t.Cleanup(wrapped.Close)

	res, body, err := do(t, wrapped.URL, "GET", "/v1/users/admin/tokens", srv.AdminToken(), "")
	require.NoError(t, err)
	assert.Equal(t, 200, res.StatusCode, "%s", body)
	assert.Equal(t, "yes", res.Header.Get("X-Wrapped"))
	mu.Lock()
	assert.Equal(t, []string{"GET /v1/users/admin/tokens"}, seen)
	mu.Unlock()

	srv.InjectFault(orgadmintest.Fault{Drop: true})
	_, _, err = do(t, wrapped.URL, "POST", "/v1/users", srv.AdminToken(), `{"username": "robot"}`)
	require.Error(t, err, "dropped, without a hijacker")
	j := srv.Journal()
	require.Len(t, j, 2)
	assert.True(t, j[1].Dropped)
	assert.Equal(t, "POST", j[1].Method)
}

// plainWriter hides every method of its ResponseWriter but the three.
type plainWriter struct{ w http.ResponseWriter }

func (p plainWriter) Header() http.Header         { return p.w.Header() }
func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p plainWriter) WriteHeader(code int)        { p.w.WriteHeader(code) }

func TestJournal(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t, orgadmintest.WithJournalSize(3))
	c := noRetry(srv, srv.AdminToken())
	ctx := t.Context()
	tok, err := c.CreateToken(ctx, "admin", client.CreateTokenRequest{Name: "ci"})
	require.NoError(t, err)
	res, _, err := do(t, srv.URL(), "GET", "/v1/users?limit=1&page_token=x", tok.Value, "")
	require.NoError(t, err)
	j := srv.Journal()
	require.Len(t, j, 2)
	assert.Equal(t, orgadmintest.Request{Method: "GET", Path: "/v1/users", Status: 400, RequestID: res.Header.Get("X-Request-Id"), At: srv.Now()}, j[1])
	assert.Equal(t, "POST", j[0].Method)
	assert.Equal(t, "/v1/users/admin/tokens", j[0].Path)
	assert.Equal(t, 200, j[0].Status)
	assert.NotEqual(t, j[0].RequestID, j[1].RequestID)
	enc, err := json.Marshal(j)
	require.NoError(t, err)
	assert.NotContains(t, string(enc), tok.Value)
	assert.NotContains(t, string(enc), srv.AdminToken())

	// Bounded: the most recent requests are kept.
	for i := range 4 {
		srv.FastForward(time.Second)
		_, _, err := do(t, srv.URL(), "GET", fmt.Sprintf("/nope/%d", i), "", "")
		require.NoError(t, err)
	}
	j = srv.Journal()
	require.Len(t, j, 3)
	assert.Equal(t, []string{"/nope/1", "/nope/2", "/nope/3"}, []string{j[0].Path, j[1].Path, j[2].Path})
	assert.Equal(t, 404, j[2].Status)
	assert.Equal(t, time.Second, j[2].At.Sub(j[1].At), "At is the Server's clock")
	srv.ResetJournal()
	assert.Empty(t, srv.Journal())
}

// The helpers act in any organization through InOrg.
func TestInOrg(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.SeedJSON(`{"organizations": [{"id": "acme", "users": [
		{"username": "alice", "role": "Admin", "tokens": [{"name": "ci", "value": "alice-token-0000001"}]}]}]}`)
	_, ok := srv.User("alice")
	assert.False(t, ok, "the Server's own methods act in its org")
	acme := srv.InOrg("acme")
	assert.Equal(t, "acme", acme.ID())
	alice, ok := acme.User("alice")
	require.True(t, ok)
	assert.Equal(t, orgadmin.RoleAdmin, alice.Role)
	assert.Equal(t, "acme", alice.Org)

	acme.CreateServiceAccount("robot")
	value := acme.CreateToken("robot", orgadmin.CreateTokenInput{Name: "seeded"})
	acme.MarkDucklingActive("robot", "rw")
	var names []string
	for _, u := range acme.Users() {
		names = append(names, u.Username)
	}
	assert.Equal(t, []string{"alice", "robot"}, names)
	assert.Equal(t, "seeded", acme.Tokens("robot")[0].Name)
	assert.Equal(t, client.SizeStandard, acme.InstanceConfig("robot").ReadWrite.Size)
	assert.Equal(t, "robot", acme.ActiveAccounts()[0].Username)
	_, ok = srv.User("robot")
	assert.False(t, ok)

	// The token works over HTTP, in its org.
	toks, err := noRetry(srv, value).ListTokens(t.Context(), "robot")
	require.NoError(t, err)
	assert.Len(t, toks, 1)

	// InOrg creates an org that does not exist yet.
	other := srv.InOrg("other")
	other.CreateUser(orgadmin.NewUser{Username: "bob", Role: orgadmin.RoleAdmin})
	assert.Len(t, other.Users(), 1)
}

// A clock that stands still still orders creations: tokens created one
// after the other are listed oldest first.
func TestFrozenClockKeepsCreationOrder(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.CreateServiceAccount("robot")
	c := noRetry(srv, srv.AdminToken())
	var want []string
	for i := range 12 {
		name := fmt.Sprintf("t%d", i+1)
		if i%3 == 2 {
			srv.CreateToken("robot", orgadmin.CreateTokenInput{Name: name})
		} else {
			_, err := c.CreateToken(t.Context(), "robot", client.CreateTokenRequest{Name: name})
			require.NoError(t, err)
		}
		want = append(want, name)
	}
	toks, err := c.ListTokens(t.Context(), "robot")
	require.NoError(t, err)
	var got []string
	for _, tok := range toks {
		got = append(got, tok.Name)
		assert.True(t, srv.Now().Truncate(time.Millisecond).Equal(tok.CreatedAt), "the same created_ts: %v", tok.CreatedAt)
	}
	assert.Equal(t, want, got)
	var inspected []string
	for _, tok := range srv.Tokens("robot") {
		inspected = append(inspected, tok.Name)
	}
	assert.Equal(t, want, inspected)
}

// A fault that cannot be is refused, saying why.
func TestMalformedFaultsAreRefused(t *testing.T) {
	t.Parallel()
	srv, err := orgadmintest.Run()
	require.NoError(t, err)
	defer srv.Close()
	for f, want := range map[orgadmintest.Fault]string{
		{Status: 103}:                     "status 103 is no final HTTP status (200 to 999)",
		{Status: 1000}:                    "status 1000 is no final HTTP status (200 to 999)",
		{Status: 503, Drop: true}:         "a fault answers Status or drops the connection, not both",
		{AfterHandling: true}:             "AfterHandling needs a Status or Drop to replace the answer with",
		{Route: "/v1/users", Times: 1}:    "the fault does nothing: set Status, Drop or Delay",
		{Status: 503, Route: "GET /v1/{"}: "",
	} {
		if want == "" {
			assert.Panics(t, func() { srv.InjectFault(f) }, "%+v", f)
			continue
		}
		assert.PanicsWithValue(t, "orgadmintest: inject fault: "+want, func() { srv.InjectFault(f) }, "%+v", f)
	}
	srv.InjectFault(orgadmintest.Fault{Status: 200}).Remove()
}
