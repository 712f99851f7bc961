package storagetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var eventTests = []subtest{
	{"EachChangeRecordsItsEvent", testEventEachChange},
	{"RefusedChangeRecordsNothing", testEventRefused},
	{"RefusedCreationWithTheIDOfADroppedToken", testEventRefusedDroppedID},
	{"NoAuditNoEvent", testEventNoAudit},
	{"NewestFirstWithCursor", testEventOrder},
	{"Filters", testEventFilters},
	{"OtherOrg", testEventOtherOrg},
	{"Copies", testEventCopies},
	{"Into", testEventInto},
	{"CursorUnderConcurrentWrites", testEventConcurrentCursor},
	{"SeqIsWriteOrder", testEventSeq},
	{"TailUnderConcurrentWrites", testEventTail},
	{"LateWriteWithOlderTimeSortsFirst", testEventLateWrite},
	{"WalkUnderConcurrentWritesWithSkewedClocks", testEventSkewedWalk},
	{"Retention", testEventRetention},
	{"PerOrgBound", testEventBound},
}

// The page is appended to EventQuery.Into, as append gives it (see
// ListUsers/Into): Limit counts the page's events, not what Into holds.
func testEventInto(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	var es []storage.Event
	for i := range 5 {
		e := newEvent(org.ID, "dive.register", at(time.Duration(i)*time.Second))
		es = append(es, e)
		require.NoError(t, s.PutDive(t.Context(), newDive(org.ID, "d"), audit(e)))
	}
	kept := storage.Event{ID: "kept"}
	into := make([]storage.Event, 1, 8)
	into[0] = kept
	p, err := s.ListEvents(t.Context(), org.ID, storage.EventQuery{Limit: 3, Into: into})
	require.NoError(t, err)
	require.Len(t, p.Events, 4)
	assert.Same(t, &into[0], &p.Events[0], "the page is not in Into's array")
	assert.Equal(t, kept, p.Events[0])
	assert.Equal(t, ids(newestFirst(es)[:3]), ids(p.Events[1:]))
	assert.True(t, p.More)
}

// cleaner is a store that leaves part of its trimming to a cleanup
// (mongostore); the suite runs it where the contract allows the delay.
type cleaner interface {
	Cleanup(ctx context.Context, now time.Time) (int, error)
}

// clean runs s's cleanup at now, if it has one.
func clean(t testing.TB, s storage.Store, now time.Time) {
	t.Helper()
	if c, ok := s.(cleaner); ok {
		_, err := c.Cleanup(t.Context(), now)
		require.NoError(t, err)
	}
}

// newEvent builds an event of org at the instant when.
func newEvent(org, action string, when time.Time) storage.Event {
	return storage.Event{
		ID:             uuid.NewString(),
		Org:            org,
		At:             when,
		ActorID:        "actor-id",
		ActorUsername:  "Alice",
		ActorTokenID:   "token-id",
		Action:         action,
		TargetKind:     "user",
		TargetID:       "target-id",
		TargetUsername: "Bob",
		RequestID:      "req-1",
	}
}

// audit is the Audit of e, with no retention and no bound.
func audit(e storage.Event) *storage.Audit {
	return &storage.Audit{Event: e}
}

// listEvents returns every event of org, newest first, in one page.
func listEvents(t testing.TB, s storage.Store, org string) []storage.Event {
	t.Helper()
	page, err := s.ListEvents(t.Context(), org, storage.EventQuery{Limit: 100_000})
	require.NoError(t, err)
	require.False(t, page.More)
	return page.Events
}

// normEvent makes empty Before and After nil, as stores may give them.
func normEvent(e storage.Event) storage.Event {
	if len(e.Before) == 0 {
		e.Before = nil
	}
	if len(e.After) == 0 {
		e.After = nil
	}
	return e
}

func ids(es []storage.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// newestFirst is es, written one after the other in that order, as
// ListEvents orders them: the last written first, whatever their times.
func newestFirst(es []storage.Event) []storage.Event {
	es = slices.Clone(es)
	slices.Reverse(es)
	return es
}

// walkEvents pages through the events of org that q selects, limit at a time,
// from the newest (q's cursor is ignored), calling between after each
// page but the last; it returns the events in the order read.
func walkEvents(t testing.TB, s storage.Store, org string, q storage.EventQuery, limit int, between func()) []storage.Event {
	t.Helper()
	q.Limit, q.BeforeSeq = limit, 0
	var got []storage.Event
	for range 10_000 {
		page, err := s.ListEvents(t.Context(), org, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Events), limit)
		got = append(got, page.Events...)
		if !page.More {
			return got
		}
		require.NotEmpty(t, page.Events, "a page with More holds events")
		q.BeforeSeq = page.Events[len(page.Events)-1].Seq
		if between != nil {
			between()
		}
	}
	t.Fatal("the walk does not end")
	return nil
}

// Each mutating method records the event of its Audit argument, once,
// with every field as given, when it succeeds.
func testEventEachChange(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	var want []storage.Event
	step := 0
	do := func(action string, f func(ctx context.Context, a *storage.Audit) error) {
		t.Helper()
		step++
		e := newEvent(org.ID, action, at(time.Duration(step)*time.Second))
		if action == "instances.set" {
			e.Before, e.After = []byte(`{"before":1}`), []byte(`{"after":2}`)
		}
		require.NoError(t, f(ctx, audit(e)), action)
		want = append(want, e)
		assert.Equal(t, ids(newestFirst(want)), ids(listEvents(t, s, org.ID)), "after %s: one event per change", action)
	}
	do("org.create", func(ctx context.Context, a *storage.Audit) error { return s.CreateOrg(ctx, org, a) })
	u := newUser(org.ID, "Bob", true)
	do("user.create", func(ctx context.Context, a *storage.Audit) error {
		return s.CreateUser(ctx, u, storage.UserLimit{Max: 10}, a)
	})
	do("user.grant_privilege", func(ctx context.Context, a *storage.Audit) error {
		return s.SetPrivileges(ctx, org.ID, u.ID, u.Privileges, append(slices.Clip(u.Privileges), "more"), a)
	})
	do("instances.set", func(ctx context.Context, a *storage.Audit) error {
		return s.SetInstances(ctx, org.ID, u.ID, configB, a)
	})
	tok := newToken(u, t0, time.Time{})
	do("token.create", func(ctx context.Context, a *storage.Audit) error {
		return s.CreateToken(ctx, tok, storage.TokenLimit{Max: 10, LiveAt: t0}, a)
	})
	do("token.delete", func(ctx context.Context, a *storage.Audit) error {
		return s.DeleteToken(ctx, org.ID, u.ID, tok.ID, storage.Revocation{At: t0}, a)
	})
	d := newDive(org.ID, "Sales")
	do("dive.register", func(ctx context.Context, a *storage.Audit) error { return s.PutDive(ctx, d, a) })
	created := newDive(org.ID, "Created")
	do("dive.register", func(ctx context.Context, a *storage.Audit) error { return s.CreateDive(ctx, created, a) })
	do("embed_session.create", func(ctx context.Context, a *storage.Audit) error {
		return s.CreateEmbedSession(ctx, newSession(u, "one"), storage.SessionLimit{}, a)
	})
	do("user.delete", func(ctx context.Context, a *storage.Audit) error {
		_, err := s.DeleteUser(ctx, org.ID, u.ID, a)
		return err
	})

	got := listEvents(t, s, org.ID)
	require.Len(t, got, len(want))
	for i, e := range newestFirst(want) {
		assert.Positive(t, got[i].Seq, "event %d (%s) has its Seq", i, e.Action)
		e.Seq = got[i].Seq
		assert.Equal(t, normEvent(e), normEvent(got[i]), "event %d (%s) read back whole", i, e.Action)
	}
	// The changes were made too.
	_, err := s.GetUser(ctx, org.ID, u.FoldedUsername)
	require.ErrorIs(t, err, storage.ErrNotFound)
	getDive(t, s, org.ID, d.ID)
}

// A method that fails records nothing.
func testEventRefused(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	u := createUser(t, s, org.ID, "Bob", true)
	tok := createToken(t, s, u, t0, time.Time{})
	refused := func(what string, want error, f func(ctx context.Context, a *storage.Audit) error) {
		t.Helper()
		err := f(ctx, audit(newEvent(org.ID, what, t0)))
		require.ErrorIs(t, err, want, what)
	}
	refused("org exists", storage.ErrAlreadyExists, func(ctx context.Context, a *storage.Audit) error { return s.CreateOrg(ctx, org, a) })
	refused("user exists", storage.ErrAlreadyExists, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateUser(ctx, newUser(org.ID, "bob", true), storage.UserLimit{}, a)
	})
	refused("users full", storage.ErrLimitExceeded, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateUser(ctx, newUser(org.ID, "Carol", true), storage.UserLimit{Max: 1}, a)
	})
	refused("grant to nobody", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.SetPrivileges(ctx, org.ID, "nobody", nil, []string{"more"}, a)
	})
	refused("privileges changed", storage.ErrConflict, func(ctx context.Context, a *storage.Audit) error {
		return s.SetPrivileges(ctx, org.ID, u.ID, []string{"read"}, []string{"read", "more"}, a)
	})
	refused("set missing", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.SetInstances(ctx, org.ID, "nobody", configB, a)
	})
	refused("delete missing", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		_, err := s.DeleteUser(ctx, org.ID, newUser(org.ID, "Nobody", true).ID, a)
		return err
	})
	refused("token exists", storage.ErrAlreadyExists, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateToken(ctx, tok, storage.TokenLimit{}, a)
	})
	refused("tokens full", storage.ErrLimitExceeded, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateToken(ctx, newToken(u, t0, time.Time{}), storage.TokenLimit{Max: 1, LiveAt: t0}, a)
	})
	refused("token of nobody", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateToken(ctx, newToken(newUser(org.ID, "Nobody", true), t0, time.Time{}), storage.TokenLimit{}, a)
	})
	refused("delete missing token", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.DeleteToken(ctx, org.ID, u.ID, uuid.NewString(), storage.Revocation{At: t0}, a)
	})
	refused("dive of no org", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.PutDive(ctx, newDive(uuid.NewString(), "x"), a)
	})
	refused("created dive of no org", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateDive(ctx, newDive(uuid.NewString(), "x"), a)
	})
	held := newDive(org.ID, "held")
	require.NoError(t, s.CreateDive(ctx, held, nil))
	refused("dive exists", storage.ErrAlreadyExists, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateDive(ctx, held, a)
	})
	createSession(t, s, u, "held")
	refused("sessions full", storage.ErrLimitExceeded, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateEmbedSession(ctx, newSession(u, "one too many"), storage.SessionLimit{Max: 1, LiveAt: t0}, a)
	})
	refused("session of nobody", storage.ErrNotFound, func(ctx context.Context, a *storage.Audit) error {
		return s.CreateEmbedSession(ctx, newSession(newUser(org.ID, "Nobody", true), "x"), storage.SessionLimit{}, a)
	})
	clean(t, s, at(time.Hour))
	assert.Empty(t, listEvents(t, s, org.ID), "no event of a refused change")
}

// A token creation refused (its digest taken) records nothing, even when
// its id is that of an expired token of the user, which the creation may
// drop as it looks for room.
func testEventRefusedDroppedID(t *testing.T, s storage.Store) {
	ctx := t.Context()
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	taken := createToken(t, s, alice, t0, time.Time{})
	old := createToken(t, s, alice, t0, at(time.Minute))
	again := newToken(alice, at(time.Hour), time.Time{})
	again.ID, again.Digest = old.ID, taken.Digest
	e := newEvent(org.ID, "token.create", at(time.Hour))
	e.TargetKind, e.TargetID = "token", again.ID
	err := s.CreateToken(ctx, again, storage.TokenLimit{Max: 10, LiveAt: at(time.Hour)}, audit(e))
	require.ErrorIs(t, err, storage.ErrAlreadyExists)
	clean(t, s, at(2*time.Hour))
	assert.Empty(t, listEvents(t, s, org.ID), "no event of the refused creation")
	requireTokenFound(t, s, taken, alice)
}

// Without an audit (nil), a change records nothing.
func testEventNoAudit(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	u := createUser(t, s, org.ID, "Bob", true)
	createToken(t, s, u, t0, time.Time{})
	require.NoError(t, s.SetInstances(t.Context(), org.ID, u.ID, configB, nil))
	assert.Empty(t, listEvents(t, s, org.ID))
}

// writeEvents records each event with a change of its own (a Dive put).
func writeEvents(t testing.TB, s storage.Store, es []storage.Event) {
	t.Helper()
	for _, e := range es {
		require.NoError(t, s.PutDive(t.Context(), newDive(e.Org, "d"), audit(e)))
	}
}

// Events are listed newest first: the last written first, whatever
// their times; a cursor resumes after the last one, neither skipping nor
// repeating.
func testEventOrder(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	var es []storage.Event
	for i := range 23 {
		// Three events per millisecond, their times out of order.
		es = append(es, newEvent(org.ID, "dive.register", at(time.Duration((i*7)%8)*time.Millisecond)))
	}
	writeEvents(t, s, es)
	want := newestFirst(es)
	all := listEvents(t, s, org.ID)
	assert.Equal(t, ids(want), ids(all))

	for _, limit := range []int{1, 5, 23, 30} {
		got := walkEvents(t, s, org.ID, storage.EventQuery{}, limit, nil)
		assert.Equal(t, ids(want), ids(got), "pages of %d", limit)
	}
	// The cursor of an event, and one above the newest event, which
	// does not exist.
	require.Len(t, all, 23)
	page, err := s.ListEvents(t.Context(), org.ID, storage.EventQuery{Limit: 100, BeforeSeq: all[4].Seq})
	require.NoError(t, err)
	assert.Equal(t, ids(want[5:]), ids(page.Events))
	page, err = s.ListEvents(t.Context(), org.ID, storage.EventQuery{Limit: 100, BeforeSeq: all[0].Seq + 1000})
	require.NoError(t, err)
	assert.Equal(t, ids(want), ids(page.Events))
}

// Every filter keeps exactly the events that match it.
func testEventFilters(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	var es []storage.Event
	for i := range 12 {
		e := newEvent(org.ID, []string{"token.create", "token.delete", "user.create"}[i%3], at(time.Duration(i)*time.Second))
		e.ActorID, e.ActorUsername = fmt.Sprintf("actor-%d", i%2), fmt.Sprintf("Actor%d", i%4)
		e.TargetKind, e.TargetID, e.TargetUsername = []string{"token", "user"}[i%2], fmt.Sprintf("target-%d", i%5), fmt.Sprintf("T%d", i%3)
		es = append(es, e)
	}
	writeEvents(t, s, es)
	for _, q := range []storage.EventQuery{
		{Action: "token.delete"},
		{ActorID: "actor-1"},
		{ActorUsername: "Actor2"},
		{TargetKind: "token"},
		{TargetID: "target-3"},
		{TargetUsername: "T0"},
		{Since: at(4 * time.Second)},
		{Until: at(4 * time.Second)},
		{Since: at(3 * time.Second), Until: at(9 * time.Second), Action: "token.create"},
		{Action: "nothing"},
	} {
		var want []storage.Event
		for _, e := range es {
			if q.Matches(e) {
				want = append(want, e)
			}
		}
		q.Limit = 100
		page, err := s.ListEvents(t.Context(), org.ID, q)
		require.NoError(t, err)
		assert.Equal(t, ids(newestFirst(want)), ids(page.Events), "%+v", q)
		// And by pages of two.
		got := walkEvents(t, s, org.ID, q, 2, nil)
		assert.Equal(t, ids(newestFirst(want)), ids(got), "pages of %+v", q)
		// More only when matching events follow: a page of exactly
		// the matching events has none, whatever else follows.
		if len(want) > 0 {
			q.Limit = len(want)
			page, err := s.ListEvents(t.Context(), org.ID, q)
			require.NoError(t, err)
			assert.Len(t, page.Events, len(want), "%+v", q)
			assert.False(t, page.More, "a page of all %d matching events: %+v", len(want), q)
		}
	}
}

// An org's events are its own.
func testEventOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	writeEvents(t, s, []storage.Event{newEvent(a.ID, "dive.register", t0)})
	assert.Empty(t, listEvents(t, s, b.ID))
	assert.Empty(t, listEvents(t, s, uuid.NewString()))
	assert.Len(t, listEvents(t, s, a.ID), 1)
}

// Events read share no memory with the store, nor with what was written.
func testEventCopies(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	e := newEvent(org.ID, "instances.set", t0)
	e.Before, e.After = []byte(`{"a":1}`), []byte(`{"b":2}`)
	written := storage.Event(e)
	written.Before, written.After = slices.Clone(e.Before), slices.Clone(e.After)
	writeEvents(t, s, []storage.Event{written})
	written.Before[2], written.After[2] = 'X', 'X'
	got := listEvents(t, s, org.ID)
	require.Len(t, got, 1)
	require.Equal(t, e.Before, got[0].Before)
	require.Equal(t, e.After, got[0].After)
	got[0].Before[2], got[0].After[2] = 'Y', 'Y'
	again := listEvents(t, s, org.ID)[0]
	e.Seq = again.Seq
	assert.Equal(t, e, again)
}

// A cursor taken while events are written goes on to exactly the events
// older than it, whatever is written meanwhile.
func testEventConcurrentCursor(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	var old []storage.Event
	for i := range 40 {
		old = append(old, newEvent(org.ID, "dive.register", at(time.Duration(i)*time.Millisecond)))
	}
	writeEvents(t, s, old)
	want := ids(newestFirst(old))
	top := listEvents(t, s, org.ID)[0]
	require.Equal(t, want[0], top.ID)

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				// Two writers' clocks are ahead, two far behind.
				d := time.Second + time.Duration(w*100+i)*time.Millisecond
				if w%2 == 1 {
					d = -d
				}
				e := newEvent(org.ID, "dive.register", at(d))
				if err := s.PutDive(t.Context(), newDive(org.ID, "d"), audit(e)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Page through from the newest of the old events while they write.
	q := storage.EventQuery{Limit: 3, BeforeSeq: top.Seq}
	got := []string{top.ID}
	for {
		page, err := s.ListEvents(t.Context(), org.ID, q)
		require.NoError(t, err)
		got = append(got, ids(page.Events)...)
		if !page.More {
			break
		}
		q.BeforeSeq = page.Events[len(page.Events)-1].Seq
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, want, got, "no event skipped or repeated")
	all := listEvents(t, s, org.ID)
	assert.Len(t, all, 40+60)
	assert.Equal(t, want, ids(all[60:]), "the events written meanwhile come first, whatever their times")
}

// The store numbers an org's events in the order it stores them, up
// from 1, whatever their times or the Seq a caller sets; every org has
// its own sequence.
func testEventSeq(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	var es []storage.Event
	for i := range 5 {
		e := newEvent(a.ID, "dive.register", at(-time.Duration(i)*time.Hour))
		e.Seq = int64(100 - i) // ignored
		es = append(es, e)
	}
	writeEvents(t, s, es)
	writeEvents(t, s, []storage.Event{newEvent(b.ID, "dive.register", t0)})
	got := listEvents(t, s, a.ID)
	require.Equal(t, ids(newestFirst(es)), ids(got))
	for i := 1; i < len(got); i++ {
		assert.Greater(t, got[i-1].Seq, got[i].Seq, "Seq descends down the listing")
		assert.Positive(t, got[i].Seq)
	}
	other := listEvents(t, s, b.ID)
	require.Len(t, other, 1)
	assert.Positive(t, other[0].Seq)
}

// A reader that keeps reading the newest events while several writers
// write misses none: once an event of Seq n is listed, no event of a
// lower Seq appears any more (a store that takes an event's Seq before
// the step that makes it visible lets one appear below what was read).
func testEventTail(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	const writers, each = 4, 30
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		u := createUser(t, s, org.ID, fmt.Sprint("writer", w), true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Two kinds of change, each with its event.
				var err error
				if e := newEvent(org.ID, "dive.register", at(time.Duration(w*each+i)*time.Millisecond)); i%2 == 0 {
					err = s.PutDive(t.Context(), newDive(org.ID, fmt.Sprint("d", w)), audit(e))
				} else {
					e.Action = "instances.set"
					err = s.SetInstances(t.Context(), org.ID, u.ID, []storage.InstanceConfig{configA, configB}[i/2%2], audit(e))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := make(map[string]bool)
	var high int64 // the highest Seq of the reads before this one
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true // one read more, of everything
		default:
		}
		page, err := s.ListEvents(t.Context(), org.ID, storage.EventQuery{Limit: writers*each + 1})
		require.NoError(t, err)
		top := high
		for _, e := range page.Events {
			if !seen[e.ID] {
				require.Greater(t, e.Seq, high, "event %s appeared after an event of a higher Seq was listed", e.ID)
				seen[e.ID] = true
			}
			top = max(top, e.Seq)
		}
		high = top
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Len(t, seen, writers*each)
}

// A change stored after a walk has passed its time, by a writer whose
// clock is behind, shows at the top of the next walk and in no page of
// the walk under way: the walk sees exactly the events stored when it
// began, once each.
func testEventLateWrite(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	var es []storage.Event
	for i := range 12 {
		es = append(es, newEvent(org.ID, "dive.register", at(time.Duration(i)*time.Second)))
	}
	writeEvents(t, s, es)
	var late []storage.Event
	pages := 0
	got := walkEvents(t, s, org.ID, storage.EventQuery{}, 3, func() {
		pages++
		// Behind the walk's cursor in time, and behind every event.
		e := newEvent(org.ID, "dive.register", at(time.Duration(8-pages*3)*time.Second-time.Millisecond))
		late = append(late, e)
		writeEvents(t, s, []storage.Event{e})
	})
	assert.Equal(t, ids(newestFirst(es)), ids(got), "the walk sees the events stored when it began, once each")
	require.NotEmpty(t, late)
	next := walkEvents(t, s, org.ID, storage.EventQuery{}, 5, nil)
	assert.Equal(t, ids(append(newestFirst(late), newestFirst(es)...)), ids(next), "the late writes come first in the next walk")
}

// Walks of pages while writers with clocks far apart store events: each
// walk sees, once each and in order, exactly the events of the listing
// made once the writers are done from its first event down; so every
// event stored before the walk began is in it, and every one stored
// later is above its top.
func testEventSkewedWalk(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	var old []storage.Event
	for i := range 30 {
		old = append(old, newEvent(org.ID, "dive.register", at(time.Duration(i)*time.Millisecond)))
	}
	writeEvents(t, s, old)

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				select {
				case <-stop:
					return
				default:
				}
				// The writers' clocks: 0 runs ahead of the old events,
				// 1 is 15 ms behind it, 2 a minute behind, 3 goes back.
				d := []time.Duration{30, 15, -60_000, -1000 - 4*time.Duration(i)}[w]*time.Millisecond + time.Duration(2*i)*time.Millisecond
				e := newEvent(org.ID, "dive.register", at(d))
				if err := s.PutDive(t.Context(), newDive(org.ID, "d"), audit(e)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var walks [][]storage.Event
	for range 4 {
		walks = append(walks, walkEvents(t, s, org.ID, storage.EventQuery{}, 4, nil))
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all := listEvents(t, s, org.ID)
	for i, w := range walks {
		require.NotEmpty(t, w)
		start := slices.IndexFunc(all, func(e storage.Event) bool { return e.ID == w[0].ID })
		require.GreaterOrEqual(t, start, 0, "walk %d: its first event is listed", i)
		assert.Equal(t, ids(all[start:]), ids(w), "walk %d: every event from its top down, once each, in order", i)
		assert.Subset(t, ids(w), ids(old), "walk %d: every event stored before it began", i)
		if i > 0 {
			prev := walks[i-1][0]
			assert.GreaterOrEqual(t, w[0].Seq, prev.Seq, "walk %d starts no lower than the one before", i)
		}
	}
}

// A write drops the events of its org older than its DropBefore (at
// once, or through the store's cleanup).
func testEventRetention(t *testing.T, s storage.Store) {
	org, other := newOrg(t, s), newOrg(t, s)
	var es []storage.Event
	for i := range 10 {
		es = append(es, newEvent(org.ID, "dive.register", at(time.Duration(i)*time.Hour)))
	}
	writeEvents(t, s, es)
	writeEvents(t, s, []storage.Event{newEvent(other.ID, "dive.register", t0)})
	last := newEvent(org.ID, "dive.register", at(20*time.Hour))
	a := &storage.Audit{Event: last, DropBefore: at(5 * time.Hour)}
	require.NoError(t, s.PutDive(t.Context(), newDive(org.ID, "d"), a))
	clean(t, s, at(20*time.Hour))
	assert.Equal(t, ids(newestFirst(append(es[5:], last))), ids(listEvents(t, s, org.ID)), "events before DropBefore dropped")
	assert.Len(t, listEvents(t, s, other.ID), 1, "another org's events are its own")
}

// An org never holds many more than MaxPerOrg events, and those it keeps
// are the newest.
func testEventBound(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	const bound, writes, slack = 10, 200, 100
	const watched = 3 * bound
	var es []storage.Event
	for i := range writes {
		e := newEvent(org.ID, "dive.register", at(time.Duration(i)*time.Millisecond))
		es = append(es, e)
		a := &storage.Audit{Event: e, MaxPerOrg: bound}
		require.NoError(t, s.PutDive(t.Context(), newDive(org.ID, "d"), a))
		if i < watched { // through the first trims: never fewer than the bound
			got := listEvents(t, s, org.ID)
			require.GreaterOrEqual(t, len(got), min(i+1, bound), "after %d writes", i+1)
			require.Equal(t, ids(newestFirst(es)[:len(got)]), ids(got), "after %d writes, the newest", i+1)
		}
	}
	clean(t, s, at(time.Hour))
	got := listEvents(t, s, org.ID)
	assert.GreaterOrEqual(t, len(got), bound, "at least the bound is kept")
	assert.LessOrEqual(t, len(got), bound+slack, "the bound holds, give or take a bounded slack")
	assert.Equal(t, ids(newestFirst(es)[:len(got)]), ids(got), "the newest are kept")
}
