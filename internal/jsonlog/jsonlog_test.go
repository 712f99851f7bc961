package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameAsJSONHandler logs each record through a Handler and through
// slog.JSONHandler, and requires the same bytes.
func sameAsJSONHandler(t *testing.T, rs ...slog.Record) {
	t.Helper()
	var got, want bytes.Buffer
	h := New(&got, &Options{Level: slog.LevelDebug})
	ref := slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
	for _, r := range rs {
		require.NoError(t, h.Handle(context.Background(), r))
		require.NoError(t, ref.Handle(context.Background(), r))
	}
	require.Equal(t, want.String(), got.String())
}

func record(msg string, as ...slog.Attr) slog.Record {
	r := slog.NewRecord(time.Date(2026, 11, 21, 23, 44, 34, 447_123_456, time.UTC), slog.LevelInfo, msg, 0)
	r.AddAttrs(as...)
	return r
}

type marshaling struct{ error }

func (marshaling) MarshalJSON() ([]byte, error) { return []byte(`"as JSON"`), nil }

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

func TestSameAsJSONHandler(t *testing.T) {
	zone := time.FixedZone("east", 5*3600+30*60)
	cases := map[string]slog.Record{
		"request line": record("request",
			slog.String("request_id", "3f2a9c1d0b4e5f60"), slog.String("method", "GET"),
			slog.String("path", "/v1/users/admin/tokens"), slog.Int("status", 200),
			slog.Int64("bytes", 1863), slog.Duration("duration", 1234567*time.Nanosecond),
			slog.String("remote", "127.0.0.1:53122")),
		"kinds": record("kinds", slog.Int64("min", math.MinInt64), slog.Uint64("max", math.MaxUint64),
			slog.Bool("yes", true), slog.Bool("no", false), slog.Duration("neg", -time.Second),
			slog.Time("at", time.Date(2001, 2, 3, 4, 5, 6, 7, zone)), slog.Time("zero", time.Time{}),
			slog.Any("err", errors.New(`bad "thing"`+"\n"))),
		"escapes": record("\"quoted\"\\ \t\r\n\x00\x1f\x7f <>& é 日本 \u2028\u2029 \xff\xfe end",
			slog.String("k\"ey\n", "v\xc3"), slog.String("emoji", "🙂\u2027\u202a")),
		"no time":  slog.NewRecord(time.Time{}, slog.LevelWarn+2, "odd level", 0),
		"no attrs": record(""),
		"monotonic": func() slog.Record {
			r := slog.NewRecord(time.Now(), slog.LevelError, "now", 0)
			return r
		}(),
		// What the handler leaves to slog.JSONHandler.
		"group":       record("g", slog.Group("req", slog.String("a", "b")), slog.Int("n", 1)),
		"empty key":   record("e", slog.String("", "v"), slog.Any("", nil)),
		"float":       record("f", slog.Float64("pi", math.Pi), slog.Float64("nan", math.NaN())),
		"any":         record("a", slog.Any("list", []int{1, 2}), slog.Any("nil", nil)),
		"marshaler":   record("m", slog.Any("err", marshaling{errors.New("e")})),
		"valuer":      record("v", slog.Any("lv", valuer{})),
		"year 10000":  record("y", slog.Time("far", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))),
		"record year": slog.NewRecord(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "bc", 0),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) { sameAsJSONHandler(t, r) })
	}
	// All of them on one handler, in turn, interleave in order.
	var all []slog.Record
	for _, r := range cases {
		all = append(all, r)
	}
	sameAsJSONHandler(t, all...)
}

func TestPlainRecordsAreFormattedHere(t *testing.T) {
	assert.True(t, plainRecord(record("request", slog.String("a", "b"), slog.Int("n", 1),
		slog.Any("err", errors.New("e")), slog.Time("t", time.Now()))))
	assert.False(t, plainRecord(record("g", slog.Group("g", slog.Int("n", 1)))))
	assert.False(t, plainRecord(record("e", slog.String("", "v"))))
	assert.False(t, plainRecord(record("f", slog.Float64("f", 1))))
}

func TestWithAttrsAndGroup(t *testing.T) {
	var got, want bytes.Buffer
	log := slog.New(New(&got, nil))
	ref := slog.New(slog.NewJSONHandler(&want, nil))
	for _, l := range []*slog.Logger{log, ref} {
		l.With("svc", "orgadmin").Info("with", "n", 1)
		l.WithGroup("http").Info("grouped", "status", 200)
		l.Info("plain again", "n", 2)
		l.Debug("below the level")
	}
	// The times differ; everything else must not.
	clean := func(s string) string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			if i := strings.Index(line, `"level"`); i >= 0 {
				line = line[i:]
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	assert.Equal(t, clean(want.String()), clean(got.String()))
	assert.Equal(t, 3, strings.Count(got.String(), "\n"))
}

// lockedBuffer is a bytes.Buffer that the timer's goroutine may write to.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestFlushDelay(t *testing.T) {
	var out lockedBuffer
	h := New(&out, &Options{FlushDelay: 50 * time.Millisecond})
	log := slog.New(h)
	log.Info("one")
	log.Info("two", "n", 2)
	log.With("a", 1).Info("three") // through slog.JSONHandler, in order
	assert.Empty(t, out.String(), "lines wait for the delay")
	assert.Eventually(t, func() bool { return strings.Count(out.String(), "\n") == 3 }, 5*time.Second, 5*time.Millisecond)
	s := out.String()
	assert.Less(t, strings.Index(s, `"one"`), strings.Index(s, `"two"`))
	assert.Less(t, strings.Index(s, `"two"`), strings.Index(s, `"three"`))
	assert.Equal(t, 1, out.writes, "the three lines are written together")

	// A warning is written at once, with what waited before it.
	log.Info("four")
	log.Warn("five")
	assert.Contains(t, out.String(), `"four"`)
	assert.Contains(t, out.String(), `"five"`)
	log.With("a", 1).Warn("six")
	assert.Contains(t, out.String(), `"six"`)

	// Flush writes at once; the timer then finds nothing to write.
	log.Info("seven")
	require.NoError(t, h.Flush())
	assert.Contains(t, out.String(), `"seven"`)
	writes := out.writes
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, writes, out.writes)

	// More than maxBuffered bytes are written without waiting.
	long := strings.Repeat("x", maxBuffered)
	log.Info("long", "x", long)
	assert.Contains(t, out.String(), long)
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	var out lockedBuffer
	h := New(&out, &Options{FlushDelay: time.Millisecond})
	log := slog.New(h)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				log.Info("line", "g", g, "i", i, "pad", strings.Repeat("p", g*100))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, h.Flush())
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 8*200)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, `{"time":`) && strings.HasSuffix(l, "}"), l)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	h := New(failingWriter{}, nil)
	assert.EqualError(t, h.Handle(context.Background(), record("x")), "disk full")
	assert.EqualError(t, h.WithAttrs([]slog.Attr{slog.Int("a", 1)}).Handle(context.Background(), record("x")), "disk full")

	delayed := New(failingWriter{}, &Options{FlushDelay: time.Hour})
	assert.NoError(t, delayed.Handle(context.Background(), record("x")), "nothing is written yet")
	assert.EqualError(t, delayed.Flush(), "disk full")
	assert.NoError(t, delayed.Flush(), "the failed lines are dropped, not written twice")
}

func FuzzSameAsJSONHandler(f *testing.F) {
	f.Add("request", "path", "/v1/users/admin/tokens", int64(200), "remote")
	f.Add("\"\\\n\x00é\u2028\xff", "k\x7f", "<&>\xed\xa0\x80", int64(-1), "")
	f.Fuzz(func(t *testing.T, msg, key, value string, n int64, key2 string) {
		if key == "" {
			key = "k"
		}
		r := record(msg, slog.String(key, value), slog.Int64("n", n), slog.Duration("d", time.Duration(n)),
			slog.Any("err", errors.New(value)))
		if key2 != "" {
			r.AddAttrs(slog.String(key2, msg))
		}
		sameAsJSONHandler(t, r)
	})
}

func BenchmarkRequestLine(b *testing.B) {
	r := record("request",
		slog.String("request_id", "3f2a9c1d0b4e5f60"), slog.String("method", "GET"),
		slog.String("path", "/v1/users/admin/tokens"), slog.Int("status", 200),
		slog.Int64("bytes", 1863), slog.Duration("duration", 1234567*time.Nanosecond),
		slog.String("remote", "127.0.0.1:53122"))
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{
		{"slog.JSONHandler", slog.NewJSONHandler(io.Discard, nil)},
		{"jsonlog", New(io.Discard, nil)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.h.Handle(context.Background(), r)
			}
		})
	}
}

// BenchmarkLogRequest is the request line of BenchmarkRequestLine, built
// by the server's request log, through Handle and through LogRequest.
func BenchmarkLogRequest(b *testing.B) {
	h := New(io.Discard, nil)
	b.Run("Handle", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = h.Handle(context.Background(), request.Record())
		}
	})
	b.Run("LogRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = h.LogRequest(context.Background(), request)
		}
	})
}
