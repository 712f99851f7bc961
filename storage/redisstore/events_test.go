package redisstore

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// Events stored by an earlier version (score 0, no Seq) are given Seqs
// below every other at the first listing that meets them, in their
// former order (time, then id), and page like the others.
func TestOldEventsSortBelowNewOnes(t *testing.T) {
	s := newStore(t, miniClient(t), true)
	ctx := t.Context()
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: t0}, nil))
	key := s.orgBase("acme") + "events"
	old := func(at time.Time, id string) {
		doc := eventDoc{Org: "acme", At: at.UnixMilli(), ID: id, ActorUsername: "system", Action: "dive.register"}
		require.NoError(t, s.c.ZAdd(ctx, key, redis.Z{Score: 0, Member: eventKey(doc.At, id) + "\n" + encode(doc)}).Err())
	}
	// Out of order in time, as an earlier version kept them by time.
	old(t0.Add(2*time.Second), "old-b")
	old(t0, "old-a")
	old(t0.Add(2*time.Second), "old-c")
	for i, id := range []string{"new-1", "new-2"} {
		e := storage.Event{ID: id, Org: "acme", At: t0.Add(-time.Duration(i+1) * time.Hour), ActorUsername: "system", Action: "dive.register"}
		require.NoError(t, s.PutDive(ctx, storage.Dive{Org: "acme", ID: "d", Title: "d", Version: 1}, &storage.Audit{Event: e}))
	}
	var got []string
	var seqs []int64
	q := storage.EventQuery{Limit: 2}
	for {
		page, err := s.ListEvents(ctx, "acme", q)
		require.NoError(t, err)
		for _, e := range page.Events {
			got, seqs = append(got, e.ID), append(seqs, e.Seq)
		}
		if !page.More {
			break
		}
		q.BeforeSeq = page.Events[len(page.Events)-1].Seq
	}
	assert.Equal(t, []string{"new-2", "new-1", "old-c", "old-b", "old-a"}, got)
	assert.Equal(t, []int64{2, 1, -1, -2, -3}, seqs)
}

// A write whose script runs again with the same event (a resendable
// script resent) records the event once and gives its Seq back: the
// next event has the next Seq.
func TestEventOfAScriptRunAgainIsRecordedOnce(t *testing.T) {
	for name, client := range clients() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s, us := usersWorld(t, client(t))
			event := func(id string) *storage.Audit {
				return &storage.Audit{Event: storage.Event{ID: id, Org: "acme", At: crashT0, ActorUsername: "system", Action: "user.instances.set"}}
			}
			c := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "Jumbo"}}
			args := withAudit(event("once"), us[0].ID, encode(toInstDoc(c)))
			for range 2 {
				require.Equal(t, "OK", s.run(ctx, setInstancesScript, "acme", args...).Val())
			}
			require.NoError(t, s.SetInstances(ctx, "acme", us[0].ID, c, event("next")))
			page, err := s.ListEvents(ctx, "acme", storage.EventQuery{Limit: 10})
			require.NoError(t, err)
			var got []string
			var seqs []int64
			for _, e := range page.Events {
				got, seqs = append(got, e.ID), append(seqs, e.Seq)
			}
			assert.Equal(t, []string{"next", "once"}, got)
			assert.Equal(t, []int64{2, 1}, seqs)
		})
	}
}

// A write looks at the head of the events for expired ones only when its
// DropBefore is at least eventTrimEvery past the last one that found the
// head trimmed: an event expired in between lingers until such a write.
func TestRetentionLooksAtTheHeadOncePerSecondOfDropBefore(t *testing.T) {
	ctx := t.Context()
	s, _ := usersWorld(t, miniClient(t))
	write := func(id string, at, dropBefore time.Duration) {
		t.Helper()
		e := storage.Event{ID: id, Org: "acme", At: crashT0.Add(at), ActorUsername: "system", Action: "dive.register"}
		a := &storage.Audit{Event: e}
		if dropBefore != 0 {
			a.DropBefore = crashT0.Add(dropBefore)
		}
		require.NoError(t, s.PutDive(ctx, storage.Dive{Org: "acme", ID: "d", Title: "d", Version: 1}, a))
	}
	kept := func() []string {
		t.Helper()
		page, err := s.ListEvents(ctx, "acme", storage.EventQuery{Limit: 10})
		require.NoError(t, err)
		var ids []string
		for _, e := range page.Events {
			ids = append(ids, e.ID)
		}
		return ids
	}
	write("e1", 0, 0)
	write("e2", 30*time.Minute+500*time.Millisecond, 0)
	write("e3", 2*time.Hour, 30*time.Minute)
	assert.Equal(t, []string{"e3", "e2"}, kept(), "e1 expired")
	write("e4", 2*time.Hour, 30*time.Minute+999*time.Millisecond)
	assert.Equal(t, []string{"e4", "e3", "e2"}, kept(), "e2 expired less than a second of DropBefore after the last look")
	write("e5", 2*time.Hour, 30*time.Minute+1500*time.Millisecond)
	assert.Equal(t, []string{"e5", "e4", "e3"}, kept(), "a second later, e2 dropped")
}
