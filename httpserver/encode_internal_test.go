package httpserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// appendTime writes, quoted, what time.Format writes with the wire layout
// (RFC 3339, UTC, milliseconds), for every year, month, day and instant of
// the day, after what its buffer holds.
func TestAppendTimeMatchesTimeFormat(t *testing.T) {
	zone := time.FixedZone("far east", 14*3600)
	instants := []time.Time{{}, time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 30, 0, 5_000_000, zone), time.Date(2026, 6, 19, 14, 34, 56, 789_999_999, zone),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(-1, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Date(400, 2, 29, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, zone)}
	for i := range 20000 {
		instants = append(instants, time.Unix(int64(i)*977_777_777-9_000_000_000, int64(i)*7_654_321%1_000_000_000))
	}
	for _, at := range instants {
		want := `x"` + at.UTC().Format("2006-01-02T15:04:05.000Z") + `"`
		assert.Equal(t, want, string(appendTime([]byte("x"), at)), "%v", at)
	}
	assert.Equal(t, `"2026-06-19T12:34:56.789Z"`, string(appendTime(nil, time.Date(2026, 6, 19, 14, 34, 56, 789_999_999, time.FixedZone("X", 2*3600)))))
}
