package memstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

func logEvent(seq int64, at time.Time) storage.Event {
	return storage.Event{
		ID: fmt.Sprintf("id-%d", seq), Seq: seq, Org: "org", At: at,
		ActorID: "actor-id", ActorUsername: "ädmin\x00", ActorTokenID: "tok",
		Action: "instances.set", TargetKind: "user", TargetID: "uid", TargetUsername: "u",
		RequestID: "req", Before: []byte(`{"a":1}`), After: []byte{},
	}
}

func collect(l *eventLog, beforeSeq int64, n int) []storage.Event {
	var out []storage.Event
	l.newest(beforeSeq, func(seq int64, at time.Time, raw []byte) bool {
		e, err := decodeEvent(raw)
		if err != nil {
			panic(err)
		}
		e.Seq, e.At = seq, at
		out = append(out, e)
		return len(out) < n
	})
	return out
}

func TestEventLogKeepsEveryFieldAndNilFromEmpty(t *testing.T) {
	var l eventLog
	at := time.UnixMilli(1_700_000_000_123).UTC()
	want := logEvent(1, at)
	l.add(want)
	withNil := logEvent(2, at)
	withNil.Before, withNil.After = nil, nil
	l.add(withNil)

	got := collect(&l, 0, 10)
	require.Len(t, got, 2)
	require.Equal(t, withNil, got[0])
	require.Nil(t, got[0].Before)
	require.Equal(t, want, got[1])
	require.NotNil(t, got[1].After)
	require.Empty(t, got[1].After)

	// What a reader gets shares nothing with the log.
	got[1].Before[0] = 'X'
	require.Equal(t, want, collect(&l, 2, 1)[0])
}

func TestEventLogPagesNewestFirstAcrossChunks(t *testing.T) {
	var l eventLog
	const n = 3*chunkEvents + 17
	base := time.UnixMilli(1_700_000_000_000).UTC()
	for i := int64(1); i <= n; i++ {
		l.add(logEvent(i, base.Add(time.Duration(i)*time.Millisecond)))
	}
	require.Len(t, l.chunks, 4)
	var seen []int64
	before := int64(0)
	for {
		page := collect(&l, before, 100)
		for _, e := range page {
			seen = append(seen, e.Seq)
			require.Equal(t, base.Add(time.Duration(e.Seq)*time.Millisecond), e.At)
			require.Equal(t, fmt.Sprintf("id-%d", e.Seq), e.ID)
		}
		if len(page) < 100 {
			break
		}
		before = page[len(page)-1].Seq
	}
	require.Len(t, seen, n)
	for i, s := range seen {
		require.Equal(t, int64(n-i), s)
	}
	// A cursor above every event, and one below every event.
	require.Len(t, collect(&l, n+100, 1000), n)
	require.Empty(t, collect(&l, 1, 1000))
}

func TestEventLogDropsTheOldestByTimeAndBound(t *testing.T) {
	var l eventLog
	base := time.UnixMilli(1_700_000_000_000).UTC()
	for i := int64(1); i <= 2*chunkEvents; i++ {
		l.add(logEvent(i, base.Add(time.Duration(i)*time.Second)))
	}
	// Everything recorded before second 10 goes: events 1 to 9.
	l.dropOldest(base.Add(10*time.Second), 0)
	require.Equal(t, 2*chunkEvents-9, l.n)
	all := collect(&l, 0, 10_000)
	require.Len(t, all, l.n)
	require.Equal(t, int64(10), all[len(all)-1].Seq)

	// A bound of 100 keeps the newest 100, and frees the first chunk.
	l.dropOldest(time.Time{}, 100)
	require.Equal(t, 100, l.n)
	require.Len(t, l.chunks, 1)
	all = collect(&l, 0, 10_000)
	require.Len(t, all, 100)
	require.Equal(t, int64(2*chunkEvents-99), all[99].Seq)

	// Dropping everything leaves an empty log that still takes events.
	l.dropOldest(base.Add(time.Hour), 0)
	require.Zero(t, l.n)
	require.Empty(t, l.chunks)
	l.add(logEvent(1000, base))
	require.Len(t, collect(&l, 0, 10), 1)
}

func TestDecodeEventRefusesTruncatedBytes(t *testing.T) {
	b := appendEvent(nil, logEvent(1, time.UnixMilli(0)))
	for i := range len(b) {
		_, err := decodeEvent(b[:i])
		require.ErrorIs(t, err, errBadEvent, "truncated at %d", i)
	}
	_, err := decodeEvent(append(b, 0))
	require.ErrorIs(t, err, errBadEvent)
}

func BenchmarkEventLogAdd(b *testing.B) {
	var l eventLog
	e := logEvent(0, time.UnixMilli(1_700_000_000_000).UTC())
	b.ReportAllocs()
	for b.Loop() {
		e.Seq++
		l.add(e)
		l.dropOldest(time.Time{}, 100_000)
	}
}
