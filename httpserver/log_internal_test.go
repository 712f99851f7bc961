package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request line written to a writer is the line slog.JSONHandler writes
// of the same record: the same bytes for what requests carry, and the
// same JSON for strings the two escape differently (slog leaves <, > and &
// as they are). A 5xx's line is at level Error.
func TestRequestLineMatchesSlog(t *testing.T) {
	start := time.Date(2026, 11, 25, 19, 30, 29, 129_229_920, time.FixedZone("east", 3600))
	lines := []struct {
		line requestLine
		took time.Duration
		same bool // byte for byte
	}{
		{requestLine{id: "2cd79357829e2153", method: "GET", path: "/v1/users/a%2Fb/tokens", remote: "127.0.0.1:54364", status: 200, bytes: 1234, start: start}, 53870 * time.Nanosecond, true},
		{requestLine{id: "0000000000000000", method: "DELETE", path: "/", remote: "[::1]:1", status: StatusClientClosedRequest, start: start}, 0, true},
		{requestLine{id: "x", method: "PUT", path: "/v1/users/%22q%22", remote: "@", status: 500, bytes: 1 << 40, start: start.Add(-time.Hour)}, 90 * time.Minute, true},
		{requestLine{id: `"\<>&` + "\x00\x1f\u2028é\xff", method: "M<&>", path: "/ü", remote: "\t", start: start}, time.Second, false},
	}
	for _, tc := range lines {
		end := tc.line.start.Add(tc.took)
		got := tc.line.appendJSON([]byte("x"), end)
		require.Equal(t, byte('x'), got[0])
		got = got[1:]

		var want bytes.Buffer
		rec := slog.NewRecord(end, tc.line.level(), "request", 0)
		rec.AddAttrs(
			slog.String("request_id", tc.line.id),
			slog.String("method", tc.line.method),
			slog.String("path", tc.line.path),
			slog.Int("status", tc.line.status),
			slog.Int64("bytes", tc.line.bytes),
			slog.Duration("duration", tc.took),
			slog.String("remote", tc.line.remote))
		require.NoError(t, slog.NewJSONHandler(&want, nil).Handle(context.Background(), rec))
		if tc.same {
			assert.Equal(t, want.String(), string(got))
			continue
		}
		var g, w any
		require.NoError(t, json.Unmarshal(got, &g), "%s", got)
		require.NoError(t, json.Unmarshal(want.Bytes(), &w))
		assert.Equal(t, w, g)
		assert.Equal(t, byte('\n'), got[len(got)-1])
		assert.Equal(t, 1, bytes.Count(got, []byte("\n")))
	}
}
