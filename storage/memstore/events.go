package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/orgadmin/orgadmin/storage"
)

// record stores the audit event of a, unless a is nil, in the org o, with
// the org's next Seq, and drops what the Audit says to drop. It runs
// under the write lock, with the change it records, after the change can
// no longer fail: so the events of an org are stored, and seen, in Seq
// order.
func (s *Store) record(a *storage.Audit, o *org) {
	if a == nil || o == nil {
		return
	}
	e := cloneEvent(a.Event)
	o.eventSeq++
	e.Seq = o.eventSeq
	o.events = append(o.events, e)
	// The expired events are at the front as long as the writers' clocks
	// agree; one that sorts behind a newer event lingers until that one
	// is dropped (listings filter it out meanwhile).
	drop := 0
	if !a.DropBefore.IsZero() {
		for drop < len(o.events) && o.events[drop].At.Before(a.DropBefore) {
			drop++
		}
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
	if q.BeforeSeq != 0 {
		end, _ = slices.BinarySearchFunc(o.events, q.BeforeSeq, func(e storage.Event, seq int64) int {
			return cmp.Compare(e.Seq, seq)
		})
	}
	for i := end - 1; i >= 0; i-- {
		e := o.events[i]
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
