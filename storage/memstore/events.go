package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

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
	o.eventSeq++
	e := a.Event
	e.Seq = o.eventSeq
	o.events.add(e)
	// The expired events are at the front as long as the writers' clocks
	// agree; one that sorts behind a newer event lingers until that one
	// is dropped (listings filter it out meanwhile).
	o.events.dropOldest(a.DropBefore, a.MaxPerOrg)
}

// ListEvents implements storage.Store. It decodes only the events that
// may match: one whose encoding does not hold the value of each filter
// on a string field cannot.
func (s *Store) ListEvents(_ context.Context, orgID string, q storage.EventQuery) (storage.EventPage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	page := storage.EventPage{Events: slices.Grow(q.Into, 0)}
	o, ok := s.orgs[orgID]
	if !ok {
		return page, nil
	}
	var need [][]byte
	for _, v := range [...]string{q.Action, q.ActorID, q.ActorUsername, q.TargetKind, q.TargetID, q.TargetUsername} {
		if v != "" {
			need = append(need, []byte(v))
		}
	}
	var err error
	o.events.newest(q.BeforeSeq, func(seq int64, at time.Time, raw []byte) bool {
		for _, v := range need {
			if !bytes.Contains(raw, v) {
				return true
			}
		}
		var e storage.Event
		if e, err = decodeEvent(raw); err != nil {
			err = fmt.Errorf("memstore: list events: %w", err) // the log's own bytes: a bug
			return false
		}
		e.Seq, e.At = seq, at
		if !q.Matches(e) {
			return true
		}
		if len(page.Events)-len(q.Into) == q.Limit {
			page.More = true
			return false
		}
		page.Events = append(page.Events, e)
		return true
	})
	if err != nil {
		return storage.EventPage{}, err
	}
	return page, nil
}
