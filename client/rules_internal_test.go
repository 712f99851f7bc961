package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answers serves the i-th request with the i-th function (the last one
// for every request after it) and counts the requests.
func answers(t *testing.T, fs ...http.HandlerFunc) (url string, calls *int) {
	t.Helper()
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := fs[min(n, len(fs)-1)]
		n++
		f(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

func status(code int, header, value, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if header != "" {
			w.Header().Set(header, value)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// waits makes c record its waits instead of sleeping.
func waits(c *Client) *[]time.Duration {
	var ws []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error {
		ws = append(ws, d)
		return nil
	}
	return &ws
}

// A Retry-After of MaxBackoff exactly is waited (only a longer one gives
// up at once), and a Retry-After of 0 is a retry at once, whatever the
// backoff.
func TestRetryAfterAtTheCapAndZero(t *testing.T) {
	ok := status(http.StatusOK, "", "", `{"tokens":[]}`)
	for _, tc := range []struct {
		retryAfter string
		policy     RetryPolicy
		want       time.Duration
	}{
		{"1", RetryPolicy{MaxRetries: 1, MaxBackoff: time.Second}, time.Second},
		{"0", RetryPolicy{MaxRetries: 1, MinBackoff: 6 * time.Second, MaxBackoff: time.Minute}, 0},
	} {
		url, calls := answers(t, status(http.StatusServiceUnavailable, "Retry-After", tc.retryAfter, ""), ok)
		c := New(url, "t", WithRetry(tc.policy))
		ws := waits(c)
		_, err := c.ListTokens(t.Context(), "x")
		require.NoError(t, err, "Retry-After: %s", tc.retryAfter)
		assert.Equal(t, 2, *calls, "Retry-After: %s", tc.retryAfter)
		assert.Equal(t, []time.Duration{tc.want}, *ws, "Retry-After: %s", tc.retryAfter)
	}
}

// A DELETE answered 404 NOT_FOUND matches ErrDeletedOnRetry only when an
// earlier attempt may have reached the server and acted: not on the first
// attempt, not after only 429s (the server refused those before acting),
// and never for a 404 without the JSON envelope (a wrong base URL).
func TestDeletedOnRetryOnlyAfterAnAttemptThatMayHaveActed(t *testing.T) {
	notFound := status(http.StatusNotFound, "Content-Type", "application/json", `{"message":"Not Found","code":"NOT_FOUND"}`)
	plainNotFound := http.NotFound
	for _, tc := range []struct {
		name  string
		seq   []http.HandlerFunc
		match bool
	}{
		{"404 at once", []http.HandlerFunc{notFound}, false},
		{"404 after a 429", []http.HandlerFunc{status(http.StatusTooManyRequests, "", "", ""), notFound}, false},
		{"plain-text 404 after a 502", []http.HandlerFunc{status(http.StatusBadGateway, "", "", ""), plainNotFound}, false},
		{"404 after a 502", []http.HandlerFunc{status(http.StatusBadGateway, "", "", ""), notFound}, true},
	} {
		url, _ := answers(t, tc.seq...)
		c := New(url, "t", WithRetry(RetryPolicy{MaxRetries: 2}))
		waits(c)
		_, err := c.DeleteUser(t.Context(), "x")
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.match, errors.Is(err, ErrDeletedOnRetry), tc.name)
	}
}

// An answer without the JSON envelope is classified by its status: a bare
// 500 is ErrInternal. A JSON body without a code is no envelope: its
// Message is the start of the body, and Code is empty.
func TestAnswersWithoutTheEnvelope(t *testing.T) {
	url, _ := answers(t, status(http.StatusInternalServerError, "", "", "boom"))
	_, err := New(url, "t", WithRetry(RetryPolicy{})).ListTokens(t.Context(), "x")
	assert.ErrorIs(t, err, ErrInternal)

	url, _ = answers(t, status(http.StatusBadGateway, "Content-Type", "application/json", `{"message":"upstream down"}`))
	_, err = New(url, "t", WithRetry(RetryPolicy{})).ListTokens(t.Context(), "x")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, `{"message":"upstream down"}`, e.Message)
	assert.Empty(t, e.Code)
}

// A walk ends at an empty page, whatever next_page_token it carries.
func TestAllUsersEndsAtAnEmptyPage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("page_token") {
		case "":
			_, _ = io.WriteString(w, `{"users":[{"id":"1","username":"a","roles":["Member"]}],"total_count":2,"next_page_token":"p2"}`)
		case "p2":
			_, _ = io.WriteString(w, `{"users":[],"total_count":2,"next_page_token":"p3"}`)
		default:
			_, _ = io.WriteString(w, `{"users":[{"id":"2","username":"b","roles":["Member"]}],"total_count":2,"next_page_token":null}`)
		}
	}))
	t.Cleanup(srv.Close)
	var names []string
	for u, err := range New(srv.URL, "t").AllUsers(t.Context(), ListUsersOptions{}) {
		require.NoError(t, err)
		names = append(names, u.Username)
	}
	assert.Equal(t, []string{"a"}, names)
}

// Since and Until go to the server with their milliseconds.
func TestAuditEventsSendsMilliseconds(t *testing.T) {
	var since, until string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		since, until = r.URL.Query().Get("since"), r.URL.Query().Get("until")
		_, _ = io.WriteString(w, `{"events":[],"next_page_token":null}`)
	}))
	t.Cleanup(srv.Close)
	at := time.Date(2026, 1, 1, 12, 0, 0, 500e6, time.UTC)
	_, err := New(srv.URL, "t").AuditEvents(t.Context(), AuditEventsOptions{Since: at, Until: at.Add(250 * time.Millisecond)})
	require.NoError(t, err)
	for _, v := range []struct {
		sent string
		want time.Time
	}{{since, at}, {until, at.Add(250 * time.Millisecond)}} {
		got, err := time.Parse(time.RFC3339Nano, v.sent)
		require.NoError(t, err)
		assert.True(t, v.want.Equal(got), "sent %s, want %s", v.sent, v.want)
	}
}
