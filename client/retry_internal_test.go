package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", -1},
		{"0", 0},
		{" 7 ", 7 * time.Second},
		{"-3", -1},
		{"soon", -1},
		{"1.5", -1},
		{"99999999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		assert.Equal(t, tc.want, parseRetryAfter(tc.h, now), "%q", tc.h)
	}
}

func TestBackoffDoublesWithJitterUpToTheCap(t *testing.T) {
	c := New("http://x", "t", WithRetry(RetryPolicy{MaxRetries: 10, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}))
	for range 100 {
		for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000, 1000} {
			want *= time.Millisecond
			d := c.backoff(attempt)
			assert.GreaterOrEqual(t, d, want/2, "attempt %d", attempt)
			assert.LessOrEqual(t, d, want, "attempt %d", attempt)
		}
	}
	zero := New("http://x", "t", WithRetry(RetryPolicy{MaxRetries: 1}))
	assert.LessOrEqual(t, zero.backoff(0), 100*time.Millisecond, "zero MinBackoff means 100ms")
	assert.LessOrEqual(t, zero.backoff(60), 30*time.Second, "zero MaxBackoff means 30s")
}

// The wait before a retry is the server's Retry-After when it gives one,
// else the backoff.
func TestRetryWaitsWhatTheServerAsks(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		switch calls {
		case 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.Header().Set("Retry-After", time.Now().Add(3*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusServiceUnavailable)
		case 3:
			w.WriteHeader(http.StatusBadGateway)
		default:
			_, _ = io.WriteString(w, `{"tokens":[]}`)
		}
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, "t", WithRetry(RetryPolicy{MaxRetries: 5, MinBackoff: 40 * time.Millisecond, MaxBackoff: time.Minute}))
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	_, err := c.ListTokens(t.Context(), "x")
	require.NoError(t, err)
	require.Len(t, waits, 3)
	assert.Equal(t, 7*time.Second, waits[0])
	assert.InDelta(t, 3*time.Second, waits[1], float64(1100*time.Millisecond), "HTTP-date, at one-second precision")
	assert.GreaterOrEqual(t, waits[2], 80*time.Millisecond, "third attempt: 40ms doubled twice, jittered")
	assert.LessOrEqual(t, waits[2], 160*time.Millisecond)
}
