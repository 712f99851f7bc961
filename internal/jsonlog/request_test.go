package jsonlog

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameRequestLines logs each line, a Request with LogRequest (and its
// Record through slog.JSONHandler) or a slog.Record with Handle (through
// both), and requires the same bytes.
func sameRequestLines(t *testing.T, h *Handler, got *bytes.Buffer, level slog.Leveler, lines ...any) {
	t.Helper()
	var want bytes.Buffer
	ref := slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: level})
	ctx := context.Background()
	for _, line := range lines {
		switch l := line.(type) {
		case Request:
			require.NoError(t, h.LogRequest(ctx, l))
			if ref.Enabled(ctx, slog.LevelInfo) {
				require.NoError(t, ref.Handle(ctx, l.Record()))
			}
		case slog.Record:
			require.NoError(t, h.Handle(ctx, l))
			require.NoError(t, ref.Handle(ctx, l))
		}
	}
	require.NoError(t, h.Flush())
	require.Equal(t, want.String(), got.String())
}

var request = Request{
	Time: time.Date(2026, 11, 21, 23, 44, 34, 447_123_456, time.UTC),
	ID:   "3f2a9c1d0b4e5f60", Method: "GET", Path: "/v1/users/admin/tokens",
	Status: 200, Bytes: 1863, Duration: 1234567 * time.Nanosecond, Remote: "127.0.0.1:53122",
}

func TestLogRequestSameAsJSONHandler(t *testing.T) {
	odd := request
	odd.Time = time.Date(2001, 2, 3, 4, 5, 6, 7, time.FixedZone("east", 5*3600+30*60))
	odd.ID, odd.Method, odd.Path = "\"q\"\\\n\x00", "PÖST\u2028", "/v1/\xff\xfe%2F"
	odd.Status, odd.Bytes, odd.Duration, odd.Remote = -1, math.MinInt64, math.MaxInt64, ""
	noTime := request
	noTime.Time = time.Time{}
	monotonic := request
	monotonic.Time = time.Now()
	farYear := request
	farYear.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	all := []any{request, odd, noTime, monotonic, farYear}

	var got bytes.Buffer
	sameRequestLines(t, New(&got, nil), &got, nil, all...)

	// Held lines come out in order with lines logged through Handle.
	got.Reset()
	held := New(&got, &Options{FlushDelay: time.Hour})
	sameRequestLines(t, held, &got, nil, append([]any{record("before")}, append(all, record("after"))...)...)
}

func TestLogRequestLevelAndAttrs(t *testing.T) {
	var got bytes.Buffer
	sameRequestLines(t, New(&got, &Options{Level: slog.LevelWarn}), &got, slog.LevelWarn, request)
	assert.Empty(t, got.String(), "below the level")

	// A handler with attributes of its own writes them too.
	var with, want bytes.Buffer
	h := New(&with, nil).WithAttrs([]slog.Attr{slog.String("svc", "orgadmin")}).(*Handler)
	require.NoError(t, h.LogRequest(context.Background(), request))
	ref := slog.NewJSONHandler(&want, nil).WithAttrs([]slog.Attr{slog.String("svc", "orgadmin")})
	require.NoError(t, ref.Handle(context.Background(), request.Record()))
	assert.Equal(t, want.String(), with.String())
}

func FuzzLogRequest(f *testing.F) {
	f.Add("3f2a9c1d0b4e5f60", "GET", "/v1/users/admin/tokens", 200, int64(1863), int64(1234567), "127.0.0.1:53122", int64(0))
	f.Add("\"\\\n\x00é\u2028\xff", "\x7f", "<&>\xed\xa0\x80", -1, int64(-1), int64(math.MinInt64), "", int64(-62135596800))
	f.Fuzz(func(t *testing.T, id, method, path string, status int, n, d int64, remote string, sec int64) {
		r := Request{Time: time.Unix(sec, d%1e9).UTC(), ID: id, Method: method, Path: path,
			Status: status, Bytes: n, Duration: time.Duration(d), Remote: remote}
		var got bytes.Buffer
		sameRequestLines(t, New(&got, nil), &got, nil, r)
	})
}
