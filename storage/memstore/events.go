package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// compareEvents orders events by At, then ID: oldest first, as an org
// keeps them.
func compareEvents(a, b storage.Event) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// record stores the audit event ctx carries, if any, in the org o, and
// drops what the Audit says to drop. It runs under the write lock, with
// the change it records, after the change can no longer fail.
func (s *Store) record(ctx context.Context, o *org) {
	a, ok := storage.AuditOf(ctx)
	if !ok || o == nil {
		return
	}
	e := cloneEvent(a.Event)
	i, _ := slices.BinarySearchFunc(o.events, e, compareEvents)
	o.events = slices.Insert(o.events, i, e)
	drop := 0
	if !a.DropBefore.IsZero() {
		drop, _ = slices.BinarySearchFunc(o.events, a.DropBefore, func(e storage.Event, t time.Time) int {
			return e.At.Compare(t)
		})
	}
	if a.MaxPerOrg > 0 {
		drop = max(drop, len(o.events)-a.MaxPerOrg)
	}
	if drop > 0 {
		// The dropped events leave the front; the array is reallocated,
		// with only the kept ones, when append outgrows it.
		clear(o.events[:drop])
		o.events = o.events[drop:]
	}
}

// ListEvents implements storage.Store.
func (s *Store) ListEvents(_ context.Context, orgID string, q storage.EventQuery) (storage.EventPage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	page := storage.EventPage{Events: slices.Grow(q.Into, 0)}
	o, ok := s.orgs[orgID]
	if !ok {
		return page, nil
	}
	end := len(o.events)
	if q.BeforeID != "" {
		end, _ = slices.BinarySearchFunc(o.events, storage.Event{At: q.BeforeAt, ID: q.BeforeID}, compareEvents)
	}
	for i := end - 1; i >= 0; i-- {
		e := o.events[i]
		if !q.Since.IsZero() && e.At.Before(q.Since) {
			break
		}
		if !q.Matches(e) {
			continue
		}
		if len(page.Events)-len(q.Into) == q.Limit {
			page.More = true
			break
		}
		page.Events = append(page.Events, cloneEvent(e))
	}
	return page, nil
}

func cloneEvent(e storage.Event) storage.Event {
	e.Before = slices.Clone(e.Before)
	e.After = slices.Clone(e.After)
	return e
}
