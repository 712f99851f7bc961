package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Audit events live in the table audit_events, keyed by (org, seq):
// listings read it newest first, from the primary key's index. An event
// is inserted in the transaction of the change it records, so the two
// commit together or not at all. Its seq comes from the org's row
// (orgs.event_seq), incremented by the transaction's first statement:
// on PostgreSQL that holds the org's row lock until the commit, so the
// changes of an org with events commit one after another, in seq order
// (and no transaction of the org that locks a row first can wait for
// another in the opposite order); SQLite has one writer. So an event is
// visible only once every event of its org with a lower seq is.
//
// Retention: each write deletes at most eventTrimBatch events of its org
// older than the Audit's DropBefore (the oldest first, by the index on
// (org, at)); the Service hides older ones from listings meanwhile. The
// per-org bound: one write in eventCountEvery (those whose seq is a
// multiple of it) finds the org's event at position MaxPerOrg, newest
// first, and deletes up to eventTrimBatch events before it; the org holds
// at most MaxPerOrg plus about eventCountEvery events.
const (
	eventTrimBatch  = 128
	eventCountEvery = 64
)

var eventColumns = []column{
	{"org", ""}, {"seq", ""}, {"at", ""}, {"id", ""}, {"actor_id", ""}, {"actor_username", ""}, {"actor_token_id", ""},
	{"action", ""}, {"target_kind", ""}, {"target_id", ""}, {"target_username", ""}, {"request_id", ""},
	{"before_value", ""}, {"after_value", ""},
}

// eventQueries are the statements of audit events, in the engine's
// spelling.
type eventQueries struct {
	nextSeq, insert, dropExpired, boundary, dropBeyond string
	// list[keyset] is a page of events, with the filters of
	// eventFilters, each of which matches when its parameter is ''.
	list [2]string
}

// eventFilters are the columns EventQuery filters on, as parameters $2
// to $7 of a listing; $8 and $9 are Since and Until (0 when unset).
var eventFilters = []string{"action", "actor_id", "actor_username", "target_kind", "target_id", "target_username"}

func newEventQueries(d *dialect) eventQueries {
	q := eventQueries{
		nextSeq: "UPDATE orgs SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq",
		insert:  "INSERT INTO audit_events (" + names(eventColumns) + ") VALUES (" + params(1, len(eventColumns)) + ")",
		dropExpired: "DELETE FROM audit_events WHERE org = $1 AND seq IN" +
			" (SELECT seq FROM audit_events WHERE org = $1 AND at < $2 ORDER BY at LIMIT " + strconv.Itoa(eventTrimBatch) + ")",
		boundary: "SELECT seq FROM audit_events WHERE org = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2",
		dropBeyond: "DELETE FROM audit_events WHERE org = $1 AND seq IN" +
			" (SELECT seq FROM audit_events WHERE org = $1 AND seq < $2 ORDER BY seq LIMIT " + strconv.Itoa(eventTrimBatch) + ")",
	}
	var where strings.Builder
	where.WriteString("org = $1")
	for i, f := range eventFilters {
		p := "$" + strconv.Itoa(i+2)
		where.WriteString(" AND (" + p + " = '' OR " + f + " = " + p + ")")
	}
	where.WriteString(" AND (CAST($8 AS BIGINT) = 0 OR at >= $8) AND (CAST($9 AS BIGINT) = 0 OR at < $9)")
	for k := range 2 {
		w := where.String()
		limit := "$10"
		if k == 1 {
			w += " AND seq < $10"
			limit = "$11"
		}
		q.list[k] = "SELECT " + names(eventColumns) + " FROM audit_events WHERE " + w + " ORDER BY seq DESC LIMIT " + limit
	}
	for _, p := range []*string{&q.nextSeq, &q.insert, &q.dropExpired, &q.boundary, &q.dropBeyond, &q.list[0], &q.list[1]} {
		*p = d.rewrite(*p)
	}
	return q
}

// writeAudited runs f, a change that runs on one runner, as it is when
// a is nil, and otherwise in a transaction with a's event (auditedTx).
func (s *Store) writeAudited(ctx context.Context, a *storage.Audit, f func(r runner) error) error {
	if a == nil {
		return f(s.wr())
	}
	return s.auditedTx(ctx, a, f)
}

// auditedTx runs f in a transaction and, when f succeeds, records there
// the audit event of a, unless a is nil. The event's seq is taken first,
// before f reads or locks anything, from the org's row; for an org that
// has no row yet, after f (which creates it: CreateOrg).
func (s *Store) auditedTx(ctx context.Context, a *storage.Audit, f func(tx runner) error) error {
	if a == nil {
		return s.inTx(ctx, f)
	}
	return s.inTx(ctx, func(tx runner) error {
		seq, err := s.nextSeq(ctx, tx, a.Event.Org)
		if err != nil {
			return err
		}
		if err := f(tx); err != nil {
			return err
		}
		if seq == 0 {
			if seq, err = s.nextSeq(ctx, tx, a.Event.Org); err != nil {
				return err
			}
			if seq == 0 {
				return fmt.Errorf("record event: org %q has no row", a.Event.Org)
			}
		}
		return s.recordEvent(ctx, tx, a, seq)
	})
}

// nextSeq increments the event counter of org in tx and returns it; 0
// when the org has no row.
func (s *Store) nextSeq(ctx context.Context, tx runner, org string) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, s.eq.nextSeq, org).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// recordEvent inserts the event of a, of sequence seq, in the
// transaction tx of its change, and trims the org's events.
func (s *Store) recordEvent(ctx context.Context, tx runner, a *storage.Audit, seq int64) error {
	e := a.Event
	if _, err := tx.ExecContext(ctx, s.eq.insert, e.Org, seq, micros(e.At), e.ID, e.ActorID, e.ActorUsername, e.ActorTokenID,
		e.Action, e.TargetKind, e.TargetID, e.TargetUsername, e.RequestID, nullText(e.Before), nullText(e.After)); err != nil {
		return err
	}
	if !a.DropBefore.IsZero() {
		if _, err := tx.ExecContext(ctx, s.eq.dropExpired, e.Org, micros(a.DropBefore)); err != nil {
			return err
		}
	}
	if a.MaxPerOrg <= 0 || seq%eventCountEvery != 0 {
		return nil
	}
	var edge int64
	err := tx.QueryRowContext(ctx, s.eq.boundary, e.Org, a.MaxPerOrg-1).Scan(&edge)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // no more than MaxPerOrg
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.eq.dropBeyond, e.Org, edge)
	return err
}

func nullText(b []byte) sql.NullString {
	if b == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}

// ListEvents implements storage.Store: one query reads the page, a row
// more than asked, from the primary key's index.
func (s *Store) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	limit := min(q.Limit, maxPage-1) + 1
	args := []any{org, q.Action, q.ActorID, q.ActorUsername, q.TargetKind, q.TargetID, q.TargetUsername,
		zeroMicros(q.Since), zeroMicros(q.Until)}
	stmt := s.eq.list[0]
	if q.BeforeSeq != 0 {
		stmt = s.eq.list[1]
		args = append(args, q.BeforeSeq)
	}
	args = append(args, limit)
	page := storage.EventPage{Events: q.Into}
	rows, err := s.rd().QueryContext(ctx, stmt, args...)
	if err != nil {
		return storage.EventPage{}, failed("list events", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e storage.Event
		var at int64
		var before, after sql.NullString
		if err := rows.Scan(&e.Org, &e.Seq, &at, &e.ID, &e.ActorID, &e.ActorUsername, &e.ActorTokenID, &e.Action,
			&e.TargetKind, &e.TargetID, &e.TargetUsername, &e.RequestID, &before, &after); err != nil {
			return storage.EventPage{}, failed("list events", err)
		}
		if len(page.Events)-len(q.Into) == q.Limit {
			page.More = true
			break
		}
		e.At = fromMicros(at)
		if before.Valid {
			e.Before = []byte(before.String)
		}
		if after.Valid {
			e.After = []byte(after.String)
		}
		page.Events = append(page.Events, e)
	}
	if err := rows.Err(); err != nil {
		return storage.EventPage{}, failed("list events", err)
	}
	if page.Events == nil {
		page.Events = []storage.Event{}
	}
	return page, nil
}

// zeroMicros is t as stored, or 0 for a zero time (no bound).
func zeroMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return micros(t)
}
