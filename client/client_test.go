package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/client"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

const diveID = "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"

// apiError returns err as an *client.Error, or fails.
func apiError(tb testing.TB, err error) *client.Error {
	tb.Helper()
	var e *client.Error
	require.True(tb, errors.As(err, &e), "want *client.Error, got %T: %v", err, err)
	return e
}

func TestEveryOperationAgainstTheFake(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	ctx := t.Context()
	c := client.New(srv.URL(), srv.AdminToken())

	sa, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "Reporter", Description: "nightly"})
	require.NoError(t, err)
	assert.Equal(t, &client.ServiceAccount{Username: "Reporter", Description: "nightly"}, sa)

	tok, err := c.CreateToken(ctx, "reporter", client.CreateTokenRequest{Name: "ci", TTL: time.Hour, Type: client.TokenReadWrite})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tok.Value, "oat_"), tok.Value)
	assert.Equal(t, "ci", tok.Name)
	assert.Equal(t, time.Hour, tok.ExpireAt.Sub(tok.CreatedAt))
	assert.Equal(t, client.TokenReadWrite, tok.Type)
	assert.False(t, tok.ReadOnly())

	srv.FastForward(time.Second) // tokens list oldest first
	ro, err := c.CreateToken(ctx, "reporter", client.CreateTokenRequest{Name: "ro", Type: client.TokenReadScaling, Description: "replicas"})
	require.NoError(t, err)
	assert.True(t, ro.ReadOnly())
	assert.True(t, ro.ExpireAt.IsZero())

	toks, err := c.ListTokens(ctx, "reporter")
	require.NoError(t, err)
	require.Len(t, toks, 2)
	for _, lt := range toks {
		assert.Empty(t, lt.Value, "values are shown on creation only")
	}
	assert.Equal(t, []string{tok.ID, ro.ID}, []string{toks[0].ID, toks[1].ID})
	require.NoError(t, c.DeleteToken(ctx, "reporter", ro.ID))
	assert.Len(t, srv.Tokens("reporter"), 1)

	// The service account manages its own configuration with its token.
	rc := client.New(srv.URL(), tok.Value)
	cfg, err := rc.GetInstanceConfig(ctx, "reporter")
	require.NoError(t, err)
	assert.Equal(t, &client.InstanceConfig{
		ReadWrite:   client.InstanceSide{Size: client.SizeStandard, Cooldown: client.Some(60 * time.Second)},
		ReadScaling: client.InstanceSide{Size: client.SizeStandard, FlockSize: 4, Cooldown: client.Some(60 * time.Second)},
	}, cfg)
	cfg, err = rc.SetInstanceConfig(ctx, "reporter", client.InstanceConfig{
		ReadWrite:   client.InstanceSide{Size: client.SizePulse},
		ReadScaling: client.InstanceSide{Size: client.SizeMega, FlockSize: 0},
	})
	require.NoError(t, err)
	assert.Equal(t, &client.InstanceConfig{
		ReadWrite:   client.InstanceSide{Size: client.SizePulse},
		ReadScaling: client.InstanceSide{Size: client.SizeMega, FlockSize: 0, Cooldown: client.Some(300 * time.Second)},
	}, cfg)
	assert.Equal(t, orgadmin.SizeMega, srv.InstanceConfig("reporter").ReadScaling.Size)

	srv.MarkDucklingActive("reporter", "rw")
	accs, err := c.GetActiveAccounts(ctx)
	require.NoError(t, err)
	assert.Equal(t, []client.ActiveAccount{{Username: "Reporter", Ducklings: []client.Duckling{{ID: "rw", Type: client.DucklingReadWrite, Status: client.StatusActive}}}}, accs)

	srv.RegisterDive(orgadmin.Dive{ID: diveID, Title: "Sales", Version: 2})
	es, err := c.CreateEmbedSession(ctx, diveID, client.CreateEmbedSessionRequest{
		Username: "reporter", SessionName: "s", Version: 1,
		RequiredResources: []client.Resource{}, InitialState: map[string]any{"region": "emea"},
	})
	require.NoError(t, err)
	resolved, ok := srv.EmbedSession(es.Session)
	require.True(t, ok)
	assert.Equal(t, 1, resolved.Version)
	assert.Empty(t, resolved.RequiredResources, "an empty, non-nil slice replaces the Dive's resources")
	assert.JSONEq(t, `{"region":"emea"}`, string(resolved.InitialState))

	fb, err := c.SubmitFeedback(ctx, client.Feedback{PagePath: "/docs/api", Text: "clear", Source: "test"})
	require.NoError(t, err)
	assert.Len(t, fb.FeedbackID, 36)

	del, err := c.DeleteUser(ctx, "REPORTER")
	require.NoError(t, err)
	assert.Equal(t, "Reporter", del.Username)
	_, ok = srv.User("reporter")
	assert.False(t, ok)
}

// The scenario of the issue: a token expires when the fake's clock moves,
// and the client reports a 401 UNAUTHORIZED.
func TestExpiredTokenIsUnauthorized(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	ctx := t.Context()
	admin := client.New(srv.URL(), srv.AdminToken())
	_, err := admin.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "robot"})
	require.NoError(t, err)
	tok, err := admin.CreateToken(ctx, "robot", client.CreateTokenRequest{Name: "short", TTL: 5 * time.Minute})
	require.NoError(t, err)

	robot := client.New(srv.URL(), tok.Value)
	_, err = robot.ListTokens(ctx, "robot")
	require.NoError(t, err)

	srv.FastForward(5 * time.Minute)
	_, err = robot.ListTokens(ctx, "robot")
	e := apiError(t, err)
	assert.Equal(t, http.StatusUnauthorized, e.StatusCode)
	assert.Equal(t, client.CodeUnauthorized, e.Code)
	assert.Equal(t, "Invalid Credentials", e.Message)
	assert.NotEmpty(t, e.RequestID)
}

// A bare number is nanoseconds, not seconds: refused rather than sent as a
// token that never expires. A duration the wire can carry is sent, and the
// API checks its bounds, listing every issue of the request at once.
func TestTTLUnderASecondIsRefused(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.CreateServiceAccount("robot")
	c := client.New(srv.URL(), srv.AdminToken())
	for _, ttl := range []time.Duration{300, 90*time.Second + time.Millisecond} { // 300ns; not whole seconds
		_, err := c.CreateToken(t.Context(), "robot", client.CreateTokenRequest{Name: "x", TTL: ttl})
		var ve *client.ValidationError
		require.ErrorAs(t, err, &ve, "TTL %v", ttl)
		require.Len(t, ve.Issues, 1)
		assert.Equal(t, "ttl", ve.Issues[0].Path.String())
		assert.Equal(t, client.IssueInvalidType, ve.Issues[0].Code, "TTL %v", ttl)
		assert.ErrorIs(t, err, client.ErrBadRequest)
		var oe *orgadmin.Error
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, orgadmin.CodeBadRequest, oe.Code)
	}
	_, err := c.SetInstanceConfig(t.Context(), "robot", client.InstanceConfig{
		ReadWrite:   client.InstanceSide{Size: client.SizeStandard, Cooldown: client.Some(1500 * time.Millisecond)},
		ReadScaling: client.InstanceSide{Size: client.SizeStandard},
	})
	var ve *client.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "config.read_write.cooldown_seconds", ve.Issues[0].Path.String())
	for _, r := range srv.Journal() {
		assert.NotEqual(t, "/v1/users/robot/tokens", r.Path, "nothing was sent")
		assert.NotEqual(t, "/v1/users/robot/instances", r.Path, "nothing was sent")
	}

	for _, tc := range []struct {
		ttl  time.Duration
		code orgadmin.IssueCode
	}{
		{299 * time.Second, client.IssueTooSmall},
		{-time.Hour, client.IssueTooSmall},
		{orgadmin.MaxTokenTTL + time.Second, client.IssueTooBig},
	} {
		_, err := c.CreateToken(t.Context(), "robot", client.CreateTokenRequest{Name: "x", TTL: tc.ttl})
		e := apiError(t, err)
		require.Len(t, e.Issues, 1, "TTL %v", tc.ttl)
		assert.Equal(t, "ttl", e.Issues[0].Path.String())
		assert.Equal(t, tc.code, e.Issues[0].Code, "TTL %v", tc.ttl)
		assert.ErrorIs(t, err, client.ErrBadRequest)
	}
	// With the body's other issues, in one answer.
	_, err = c.CreateToken(t.Context(), "robot", client.CreateTokenRequest{TTL: 10 * time.Second, Type: "admin"})
	e := apiError(t, err)
	var paths []string
	for _, is := range e.Issues {
		paths = append(paths, is.Path.String())
	}
	assert.ElementsMatch(t, []string{"name", "ttl", "token_type"}, paths)
	for _, cd := range []time.Duration{59 * time.Second, 86401 * time.Second} {
		_, err := c.SetInstanceConfig(t.Context(), "robot", client.InstanceConfig{
			ReadWrite:   client.InstanceSide{Size: client.SizeStandard, Cooldown: client.Some(cd)},
			ReadScaling: client.InstanceSide{Size: client.SizeStandard},
		})
		e := apiError(t, err)
		require.Len(t, e.Issues, 1, "cooldown %v", cd)
		assert.Equal(t, "config.read_write.cooldown_seconds", e.Issues[0].Path.String())
	}
	assert.Empty(t, srv.Tokens("robot"))
	assert.Equal(t, client.SizeStandard, srv.InstanceConfig("robot").ReadWrite.Size)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	ctx := t.Context()
	c := client.New(srv.URL(), srv.AdminToken())

	t.Run("400 lists issues", func(t *testing.T) {
		_, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "1bad", Description: strings.Repeat("d", 1001)})
		e := apiError(t, err)
		assert.Equal(t, 400, e.StatusCode)
		assert.Equal(t, client.CodeBadRequest, e.Code)
		require.Len(t, e.Issues, 2)
		assert.Equal(t, orgadmin.Path{orgadmin.PathKey("username")}, e.Issues[0].Path)
		assert.Equal(t, "username", e.Issues[0].Path.String())
		assert.Contains(t, e.Error(), "orgadmin: 400 BAD_REQUEST: Bad Request: username: ")
	})
	t.Run("403", func(t *testing.T) {
		srv.CreateUser(orgadmin.NewUser{Username: "bob"})
		_, err := client.New(srv.URL(), srv.CreateToken("bob", orgadmin.CreateTokenInput{})).GetActiveAccounts(ctx)
		assert.Equal(t, client.CodeForbidden, apiError(t, err).Code)
	})
	t.Run("404 of a missing user", func(t *testing.T) {
		_, err := c.GetInstanceConfig(ctx, "nobody")
		e := apiError(t, err)
		assert.Equal(t, 404, e.StatusCode)
		assert.Equal(t, client.CodeNotFound, e.Code)
	})
	t.Run("plain-text 404 of a wrong URL", func(t *testing.T) {
		_, err := client.New(srv.URL()+"/nope", srv.AdminToken()).ListTokens(ctx, "admin")
		e := apiError(t, err)
		assert.Equal(t, 404, e.StatusCode)
		assert.Empty(t, e.Code)
		assert.Equal(t, "404 page not found", e.Message)
		assert.False(t, errors.Is(err, client.ErrNotFound), "no answer about a user")
		var oe *orgadmin.Error
		assert.False(t, errors.As(err, &oe), "no code to convert")
	})
	t.Run("a gateway's 5xx without the envelope is internal", func(t *testing.T) {
		gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "Bad Gateway", http.StatusBadGateway)
		}))
		defer gw.Close()
		_, err := client.New(gw.URL, "x", client.WithRetry(client.RetryPolicy{})).ListTokens(ctx, "admin")
		e := apiError(t, err)
		assert.Equal(t, 502, e.StatusCode)
		assert.Empty(t, e.Code, "the answer had none")
		assert.True(t, errors.Is(err, client.ErrInternal))
		assert.Equal(t, client.CodeInternal, orgadmin.ErrorCode(err), "ErrorCode and errors.Is agree")
	})
	t.Run("transport failure is not an *Error", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		_, err := client.New(dead.URL, "x").ListTokens(ctx, "admin")
		require.Error(t, err)
		var e *client.Error
		assert.False(t, errors.As(err, &e))
	})
}

func TestAllUsersWalksEveryPage(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	for _, name := range []string{"b", "C", "d", "e", "f"} {
		srv.CreateServiceAccount(name)
	}
	c := client.New(srv.URL(), srv.AdminToken())

	page, err := c.ListUsers(t.Context(), client.ListUsersOptions{Limit: client.Some(4)})
	require.NoError(t, err)
	assert.Equal(t, 6, page.TotalCount)
	assert.Len(t, page.Users, 4)
	assert.NotEmpty(t, page.NextPageToken)
	last, err := c.ListUsers(t.Context(), client.ListUsersOptions{Limit: client.Some(4), PageToken: page.NextPageToken})
	require.NoError(t, err)
	assert.Len(t, last.Users, 2)
	assert.Empty(t, last.NextPageToken, "null on the last page")

	var names []string
	for u, err := range c.AllUsers(t.Context(), client.ListUsersOptions{Limit: client.Some(2)}) {
		require.NoError(t, err)
		names = append(names, u.Username)
	}
	assert.Equal(t, []string{"admin", "b", "C", "d", "e", "f"}, names)

	var sas []string
	for u, err := range c.AllUsers(t.Context(), client.ListUsersOptions{Limit: client.Some(1), ServiceAccount: client.Some(true)}) {
		require.NoError(t, err)
		sas = append(sas, u.Username)
		if len(sas) == 3 {
			break
		}
	}
	assert.Equal(t, []string{"b", "C", "d"}, sas, "breaking out stops the walk")

	for _, err := range client.New(srv.URL(), "wrong-token").AllUsers(t.Context(), client.ListUsersOptions{}) {
		assert.Equal(t, client.CodeUnauthorized, apiError(t, err).Code)
	}
}

// flaky answers status (with Retry-After, when set) the first fails
// requests, then 200 {"tokens": []}; it counts requests and checks that
// each carries the whole body.
type flaky struct {
	fails      int32
	status     int
	retryAfter string
	wantBody   string
	calls      atomic.Int32
	badBody    atomic.Bool
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	if b, _ := io.ReadAll(r.Body); string(b) != f.wantBody {
		f.badBody.Store(true)
	}
	w.Header().Set("Content-Type", "application/json")
	if n <= f.fails {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(f.status)
		_, _ = io.WriteString(w, `{"message":"Too Many Requests","code":"TOO_MANY_REQUESTS"}`)
		return
	}
	_, _ = io.WriteString(w, `{"tokens":[],"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"pulse","flock_size":0},"username":"x","session":"s"}`)
}

func fastRetry(n int) client.Option {
	return client.WithRetry(client.RetryPolicy{MaxRetries: n, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond})
}

func TestRetries(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	serve := func(t *testing.T, f *flaky) string {
		srv := httptest.NewServer(f)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	for _, status := range []int{429, 502, 503, 504} {
		t.Run("GET retried on "+http.StatusText(status), func(t *testing.T) {
			f := &flaky{fails: 2, status: status}
			_, err := client.New(serve(t, f), "t", fastRetry(3)).ListTokens(ctx, "x")
			require.NoError(t, err)
			assert.EqualValues(t, 3, f.calls.Load())
		})
	}
	t.Run("PUT and DELETE retried with their body", func(t *testing.T) {
		f := &flaky{fails: 2, status: 503, retryAfter: "0",
			wantBody: `{"config":{"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"pulse","flock_size":0}}}`}
		_, err := client.New(serve(t, f), "t", fastRetry(3)).SetInstanceConfig(ctx, "x", client.InstanceConfig{
			ReadWrite: client.InstanceSide{Size: client.SizePulse}, ReadScaling: client.InstanceSide{Size: client.SizePulse},
		})
		require.NoError(t, err)
		assert.EqualValues(t, 3, f.calls.Load())
		assert.False(t, f.badBody.Load(), "every attempt carries the whole body")

		d := &flaky{fails: 1, status: 502}
		_, err = client.New(serve(t, d), "t", fastRetry(3)).DeleteUser(ctx, "x")
		require.NoError(t, err)
		assert.EqualValues(t, 2, d.calls.Load())
	})
	t.Run("POST never retried", func(t *testing.T) {
		f := &flaky{fails: 1, status: 503, retryAfter: "0", wantBody: `{"username":"x"}`}
		_, err := client.New(serve(t, f), "t", fastRetry(3)).CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "x"})
		assert.Equal(t, 503, apiError(t, err).StatusCode)
		assert.EqualValues(t, 1, f.calls.Load())

		g := &flaky{fails: 1, status: 429, retryAfter: "0"}
		_, err = client.New(serve(t, g), "t", fastRetry(3)).CreateEmbedSession(ctx, diveID, client.CreateEmbedSessionRequest{Username: "x"})
		assert.Equal(t, 429, apiError(t, err).StatusCode)
		assert.EqualValues(t, 1, g.calls.Load())
	})
	t.Run("feedback never retried", func(t *testing.T) {
		f := &flaky{fails: 1, status: 429, retryAfter: "0"}
		_, err := client.New(serve(t, f), "t", fastRetry(3)).SubmitFeedback(ctx, client.Feedback{PagePath: "/", Text: "x"})
		e := apiError(t, err)
		assert.Equal(t, client.CodeTooManyRequests, e.Code)
		assert.Equal(t, time.Duration(0), e.RetryAfter)
		assert.EqualValues(t, 1, f.calls.Load())
	})
	t.Run("other statuses not retried", func(t *testing.T) {
		f := &flaky{fails: 1, status: 500}
		_, err := client.New(serve(t, f), "t", fastRetry(3)).ListTokens(ctx, "x")
		assert.Equal(t, 500, apiError(t, err).StatusCode)
		assert.EqualValues(t, 1, f.calls.Load())
	})
	t.Run("gives up after MaxRetries with the last answer", func(t *testing.T) {
		f := &flaky{fails: 10, status: 503}
		_, err := client.New(serve(t, f), "t", fastRetry(2)).ListTokens(ctx, "x")
		assert.Equal(t, 503, apiError(t, err).StatusCode)
		assert.EqualValues(t, 3, f.calls.Load())
	})
	t.Run("RetryPolicy{} turns retries off", func(t *testing.T) {
		f := &flaky{fails: 1, status: 503}
		_, err := client.New(serve(t, f), "t", client.WithRetry(client.RetryPolicy{})).ListTokens(ctx, "x")
		assert.Equal(t, 503, apiError(t, err).StatusCode)
		assert.EqualValues(t, 1, f.calls.Load())
	})
	t.Run("a Retry-After beyond MaxBackoff is not waited for", func(t *testing.T) {
		f := &flaky{fails: 1, status: 429, retryAfter: "120"}
		start := time.Now()
		_, err := client.New(serve(t, f), "t", fastRetry(3)).ListTokens(ctx, "x")
		e := apiError(t, err)
		assert.Equal(t, 2*time.Minute, e.RetryAfter)
		assert.EqualValues(t, 1, f.calls.Load())
		assert.Less(t, time.Since(start), 10*time.Second)
	})
	t.Run("a cancelled context stops the waiting", func(t *testing.T) {
		f := &flaky{fails: 10, status: 503, retryAfter: "20"}
		// Long enough for the first answer even on a busy machine, short
		// beside the 20 s the server asks to wait.
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.New(serve(t, f), "t", client.WithRetry(client.RetryPolicy{MaxRetries: 3, MaxBackoff: time.Minute})).ListTokens(cctx, "x")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 503, apiError(t, err).StatusCode, "the last answer is kept")
		assert.EqualValues(t, 1, f.calls.Load())
	})
}

func TestOptions(t *testing.T) {
	t.Parallel()
	var ua, auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ua.Store(r.UserAgent())
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"feedback_id":"f","tokens":[]}`)
	}))
	t.Cleanup(srv.Close)
	calls := 0
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		calls++
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := client.New(srv.URL+"/", "secret", client.WithHTTPClient(hc), nil, client.WithUserAgent("provisioner/1.0"), client.WithFeedbackURL(srv.URL+"/elsewhere"))
	_, err := c.ListTokens(t.Context(), "x")
	require.NoError(t, err)
	assert.Equal(t, "provisioner/1.0", ua.Load())
	assert.Equal(t, "Bearer secret", auth.Load())
	_, err = c.SubmitFeedback(t.Context(), client.Feedback{PagePath: "/", Text: "x"})
	require.NoError(t, err)
	assert.Equal(t, "", auth.Load(), "feedback is sent without the token")
	assert.Equal(t, 2, calls)
}

// A path parameter that is empty, "." or ".." is refused before anything
// is sent: escaped, it is still an empty or dot segment, which a ServeMux
// in front of the API cleans away, sending the request to another route:
// DELETE /v1/users/robot/tokens/.. would be DELETE /v1/users/robot.
func TestDotSegmentPathParametersAreRefused(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	srv.CreateServiceAccount("robot")
	tok := srv.CreateToken("robot", orgadmin.CreateTokenInput{Name: "ci"})
	srv.RegisterDive(orgadmin.Dive{ID: diveID, Title: "Sales"})
	mux := http.NewServeMux() // a host's mux in front, as in the README's "Mounting"
	mux.Handle("/", srv.Handler())
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	c := client.New(front.URL, srv.AdminToken())
	ctx := t.Context()
	cfg := client.InstanceConfig{ReadWrite: client.InstanceSide{Size: client.SizeJumbo}, ReadScaling: client.InstanceSide{Size: client.SizeJumbo}}
	for _, bad := range []string{"", ".", ".."} {
		for name, call := range map[string]func() (string, error){
			"GetInstanceConfig": func() (string, error) { _, err := c.GetInstanceConfig(ctx, bad); return "username", err },
			"SetInstanceConfig": func() (string, error) { _, err := c.SetInstanceConfig(ctx, bad, cfg); return "username", err },
			"CreateToken": func() (string, error) {
				_, err := c.CreateToken(ctx, bad, client.CreateTokenRequest{Name: "x"})
				return "username", err
			},
			"ListTokens":       func() (string, error) { _, err := c.ListTokens(ctx, bad); return "username", err },
			"DeleteToken":      func() (string, error) { return "token_id", c.DeleteToken(ctx, "robot", bad) },
			"DeleteToken user": func() (string, error) { return "username", c.DeleteToken(ctx, bad, "x") },
			"DeleteUser":       func() (string, error) { _, err := c.DeleteUser(ctx, bad); return "username", err },
			"CreateEmbedSession": func() (string, error) {
				_, err := c.CreateEmbedSession(ctx, bad, client.CreateEmbedSessionRequest{Username: "robot"})
				return "dive_id", err
			},
		} {
			field, err := call()
			var ve *client.ValidationError
			require.ErrorAs(t, err, &ve, "%s(%q)", name, bad)
			require.Len(t, ve.Issues, 1, "%s(%q)", name, bad)
			assert.Equal(t, field, ve.Issues[0].Path.String(), "%s(%q)", name, bad)
			assert.ErrorIs(t, err, client.ErrBadRequest)
		}
	}
	_, ok := srv.User("robot")
	assert.True(t, ok, "robot was not deleted")
	assert.Len(t, srv.Tokens("robot"), 1)
	assert.Equal(t, client.SizeStandard, srv.InstanceConfig("robot").ReadWrite.Size)
	assert.Empty(t, srv.Journal(), "nothing was sent")
	_, err := client.New(front.URL, tok).ListTokens(ctx, "robot")
	require.NoError(t, err, "the token still works")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestResponseSizeIsBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"tokens":[`+strings.Repeat(" ", client.MaxResponseBytes)+`]}`)
	}))
	t.Cleanup(srv.Close)
	_, err := client.New(srv.URL, "t").ListTokens(t.Context(), "x")
	require.ErrorContains(t, err, "larger than")
}

// The audit trail, through the client against the fake: every change,
// newest first, paged by the iterator, filtered, and refused to a
// non-Admin.
func TestAuditEventsAgainstTheFake(t *testing.T) {
	t.Parallel()
	srv := orgadmintest.NewServer(t)
	ctx := t.Context()
	c := client.New(srv.URL(), srv.AdminToken())
	_, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "Reporter"})
	require.NoError(t, err)
	srv.FastForward(time.Second)
	tok, err := c.CreateToken(ctx, "reporter", client.CreateTokenRequest{Name: "ci"})
	require.NoError(t, err)
	srv.FastForward(time.Second)
	_, err = c.DeleteUser(ctx, "reporter")
	require.NoError(t, err)

	var got []client.AuditEvent
	for e, err := range c.AllAuditEvents(ctx, client.AuditEventsOptions{Limit: client.Some(2)}) {
		require.NoError(t, err)
		got = append(got, e)
	}
	want := srv.AuditEvents()
	require.Len(t, got, len(want))
	for i := range want {
		want[i].Org = "" // the caller's, not shown
	}
	assert.Equal(t, want, got, "the client reads what the fake holds")
	assert.Equal(t, []string{orgadmin.ActionUserDelete, orgadmin.ActionTokenCreate, orgadmin.ActionUserCreate}, []string{got[0].Action, got[1].Action, got[2].Action})
	assert.Equal(t, tok.ID, got[1].TargetID)
	assert.Equal(t, "Reporter", got[1].TargetUsername)
	assert.NotEmpty(t, got[1].RequestID)

	page, err := c.AuditEvents(ctx, client.AuditEventsOptions{Action: orgadmin.ActionTokenCreate, TargetUsername: "Reporter", Since: srv.Now().Add(-90 * time.Minute)})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	assert.Equal(t, tok.ID, page.Events[0].TargetID)
	assert.Empty(t, page.NextPageToken)

	srv.CreateServiceAccount("bot")
	_, err = client.New(srv.URL(), srv.CreateToken("bot", orgadmin.CreateTokenInput{Name: "b"})).AuditEvents(ctx, client.AuditEventsOptions{})
	require.ErrorIs(t, err, client.ErrForbidden)
	assert.Equal(t, http.StatusForbidden, apiError(t, err).StatusCode)
}

// The API answers no redirect. A client that followed one would send its
// bearer token where the answer points: Go's http.Client keeps the
// Authorization header for the same host name on another port, over
// plain http after https, and for any subdomain. So the client follows
// none, whatever client it sends through, and a 3xx is an *Error.
func TestRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		t.Errorf("the redirect was followed: %s %s with Authorization %q", r.Method, r.URL, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"tokens":[],"token":"x","id":"x"}`)
	}))
	t.Cleanup(elsewhere.Close)
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, status)
		}))
		t.Cleanup(api.Close)
		for name, opts := range map[string][]client.Option{
			"default client": nil,
			// A transport of its own: httptest.Server.Close of the
			// tests running in parallel closes http.DefaultTransport's
			// idle connections.
			"own client": {client.WithHTTPClient(&http.Client{Timeout: time.Minute, Transport: &http.Transport{}})},
		} {
			c := client.New(api.URL, "secret-bearer-token", opts...)
			_, err := c.ListTokens(t.Context(), "robot")
			e := apiError(t, err)
			assert.Equal(t, status, e.StatusCode, "%s, GET", name)
			assert.Equal(t, client.Code(""), e.Code)
			assert.NotContains(t, err.Error(), "secret-bearer-token")
			_, err = c.CreateToken(t.Context(), "robot", client.CreateTokenRequest{Name: "ci"})
			assert.Equal(t, status, apiError(t, err).StatusCode, "%s, POST", name)
		}
	}
	assert.Zero(t, reached.Load())
}

// A Client given no http.Client keeps its connections out of
// http.DefaultTransport, whose idle connections httptest.Server.Close (of
// any test running in parallel) closes: the second request reuses the
// first one's connection.
func TestDefaultTransportIsTheClientsOwn(t *testing.T) {
	var conns atomic.Int32
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"tokens":[]}`)
	}))
	api.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	api.Start()
	t.Cleanup(api.Close)
	c := client.New(api.URL, "t")
	for range 2 {
		_, err := c.ListTokens(t.Context(), "robot")
		require.NoError(t, err)
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	}
	assert.Equal(t, int32(1), conns.Load(), "connections opened")
}

// A client given its own http.Client keeps it as it was: the client
// stops redirects in a copy.
func TestOwnHTTPClientIsLeftAsItWas(t *testing.T) {
	t.Parallel()
	hc := &http.Client{Timeout: time.Minute}
	_ = client.New("http://127.0.0.1:1", "t", client.WithHTTPClient(hc))
	assert.Nil(t, hc.CheckRedirect)
}

// An error says which call failed without its query, which may carry
// feedback text or a page token, also when the request got no answer.
func TestErrorsLeaveTheQueryOut(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	c := client.New(dead.URL, "secret-bearer-token", client.WithRetry(client.RetryPolicy{}))
	_, err := c.SubmitFeedback(t.Context(), client.Feedback{PagePath: "/docs", Text: "private-feedback-text"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "private-feedback-text")
	assert.Contains(t, err.Error(), dead.URL+"/docs/api/feedback/agent", "the error still says where")
	_, err = c.ListUsers(t.Context(), client.ListUsersOptions{PageToken: "private-page-token"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "private-page-token")
	assert.NotContains(t, err.Error(), "secret-bearer-token")

	// A base URL that does not parse fails every request before it is
	// sent, with the same care.
	for _, base := range []string{"http://[::1", "ht tp://x", "http://127.0.0.1:1/\x7f"} {
		c := client.New(base, "secret-bearer-token")
		_, err = c.ListUsers(t.Context(), client.ListUsersOptions{PageToken: "private-page-token"})
		require.Error(t, err, base)
		assert.NotContains(t, err.Error(), "private-page-token", base)
		assert.Contains(t, err.Error(), "/v1/users", "the error still says where")
		_, err = c.SubmitFeedback(t.Context(), client.Feedback{PagePath: "/docs", Text: "private-feedback-text"})
		require.Error(t, err, base)
		assert.NotContains(t, err.Error(), "private-feedback-text", base)
	}
}

// A token or user agent that no header may carry (a line break, say)
// fails the request before it is sent, once: no retry can mend it, and
// the error does not quote it.
func TestHeadersNoRequestCanCarryAreNotRetried(t *testing.T) {
	t.Parallel()
	f := &flaky{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	for _, c := range []*client.Client{
		client.New(srv.URL, "secret\nbearer", fastRetry(3)),
		client.New(srv.URL, "t", fastRetry(3), client.WithUserAgent("agent\r\nX-Injected: 1")),
	} {
		_, err := c.ListTokens(t.Context(), "x")
		require.ErrorContains(t, err, "holds a character no header may carry")
		assert.NotContains(t, err.Error(), "secret")
		assert.NotContains(t, err.Error(), "Injected")
	}
	assert.Zero(t, f.calls.Load(), "nothing was sent")
}

// A server whose page token leads back to a page already read (one that
// answers every page alike: a cache that ignores the query, say) would
// keep a walk going for ever, yielding the same users again and again:
// the walk ends with an error at the first token it has followed before.
func TestWalksEndWhenAPageTokenComesBack(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		next := map[string]string{"": "A", "A": "B", "B": "A"}[r.URL.Query().Get("page_token")]
		fmt.Fprintf(w, `{"users":[{"id":"1","username":"u","roles":["Member"],"created_ts":"2026-01-01T00:00:00.000Z"}],"total_count":1,
			"events":[{"id":"1","time":"2026-01-01T00:00:00.000Z","action":"user.create","actor":{"username":"system"},"target":{"kind":"user"}}],
			"next_page_token":%q}`, next)
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, "t")
	n := 0
	var last error
	for _, err := range c.AllUsers(t.Context(), client.ListUsersOptions{}) {
		if n++; n > 10 {
			t.Fatal("the walk goes on")
		}
		last = err
	}
	require.ErrorContains(t, last, "page token")
	assert.Equal(t, 4, n, "three pages, then the error")
	assert.Equal(t, int32(3), calls.Load())

	n = 0
	for _, err := range c.AllAuditEvents(t.Context(), client.AuditEventsOptions{}) {
		if n++; n > 10 {
			t.Fatal("the walk goes on")
		}
		last = err
	}
	require.ErrorContains(t, last, "page token")
	assert.Equal(t, 4, n)
}
