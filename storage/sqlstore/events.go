package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Audit events live in the table audit_events, keyed by (org, at, id):
// listings read it newest first, from the primary key's index. An event
// is inserted in the transaction of the change it records, so the two
// commit together or not at all.
//
// Retention: each write deletes at most eventTrimBatch events of its org
// older than the Audit's DropBefore (the oldest first); the Service
// hides older ones from listings meanwhile. The per-org bound: about one
// write in eventCountEvery (those whose event's millisecond, or its id's
// hash, is a multiple of it) finds the org's event at position
// MaxPerOrg, newest first, and deletes up to eventTrimBatch events older
// than it; the org holds at most MaxPerOrg plus about eventCountEvery
// events. (Counting the org's events at every write would cost as much
// as the bound; a counter row would make every change of an org wait for
// the one before it.)
const (
	eventTrimBatch  = 128
	eventCountEvery = 64
)

var eventColumns = []column{
	{"org", ""}, {"at", ""}, {"id", ""}, {"actor_id", ""}, {"actor_username", ""}, {"actor_token_id", ""},
	{"action", ""}, {"target_kind", ""}, {"target_id", ""}, {"target_username", ""}, {"request_id", ""},
	{"before_value", ""}, {"after_value", ""},
}

// eventQueries are the statements of audit events, in the engine's
// spelling.
type eventQueries struct {
	insert, dropExpired, boundary, dropBeyond string
	// list[keyset] is a page of events, with the filters of
	// eventFilters, each of which matches when its parameter is ''.
	list [2]string
}

// eventFilters are the columns EventQuery filters on, as parameters $2
// to $7 of a listing; $8 and $9 are Since and Until (0 when unset).
var eventFilters = []string{"action", "actor_id", "actor_username", "target_kind", "target_id", "target_username"}

func newEventQueries(d *dialect) eventQueries {
	q := eventQueries{
		insert: "INSERT INTO audit_events (" + names(eventColumns) + ") VALUES (" + params(1, len(eventColumns)) + ")",
		dropExpired: "DELETE FROM audit_events WHERE org = $1 AND at < $2 AND id IN" +
			" (SELECT id FROM audit_events WHERE org = $1 AND at < $2 ORDER BY at, id LIMIT " + strconv.Itoa(eventTrimBatch) + ")",
		boundary: "SELECT at, id FROM audit_events WHERE org = $1 ORDER BY at DESC, id DESC LIMIT 1 OFFSET $2",
		dropBeyond: "DELETE FROM audit_events WHERE org = $1 AND id IN" +
			" (SELECT id FROM audit_events WHERE org = $1 AND (at < $2 OR (at = $2 AND id < $3)) ORDER BY at, id LIMIT " + strconv.Itoa(eventTrimBatch) + ")",
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
			w += " AND (at < $10 OR (at = $10 AND id < $11))"
			limit = "$12"
		}
		q.list[k] = "SELECT " + names(eventColumns) + " FROM audit_events WHERE " + w + " ORDER BY at DESC, id DESC LIMIT " + limit
	}
	for _, p := range []*string{&q.insert, &q.dropExpired, &q.boundary, &q.dropBeyond, &q.list[0], &q.list[1]} {
		*p = d.rewrite(*p)
	}
	return q
}

// writeAudited runs f, a change that runs on one runner, as it is when
// ctx carries no audit event, and otherwise in a transaction with the
// event.
func (s *Store) writeAudited(ctx context.Context, f func(r runner) error) error {
	if _, ok := storage.AuditOf(ctx); !ok {
		return f(s.wr())
	}
	return s.inTx(ctx, func(tx runner) error {
		if err := f(tx); err != nil {
			return err
		}
		return s.recordEvent(ctx, tx)
	})
}

// recordEvent inserts the audit event ctx carries, if any, in the
// transaction tx of its change, and trims the org's events.
func (s *Store) recordEvent(ctx context.Context, tx runner) error {
	a, ok := storage.AuditOf(ctx)
	if !ok {
		return nil
	}
	e := a.Event
	if _, err := tx.ExecContext(ctx, s.eq.insert, e.Org, micros(e.At), e.ID, e.ActorID, e.ActorUsername, e.ActorTokenID,
		e.Action, e.TargetKind, e.TargetID, e.TargetUsername, e.RequestID, nullText(e.Before), nullText(e.After)); err != nil {
		return err
	}
	if !a.DropBefore.IsZero() {
		if _, err := tx.ExecContext(ctx, s.eq.dropExpired, e.Org, micros(a.DropBefore)); err != nil {
			return err
		}
	}
	if a.MaxPerOrg <= 0 {
		return nil
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(e.ID))
	if h.Sum32()%eventCountEvery != 0 && e.At.UnixMilli()%eventCountEvery != 0 {
		return nil
	}
	var at int64
	var id string
	err := tx.QueryRowContext(ctx, s.eq.boundary, e.Org, a.MaxPerOrg-1).Scan(&at, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // no more than MaxPerOrg
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, s.eq.dropBeyond, e.Org, at, id)
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
	if q.BeforeID != "" {
		stmt = s.eq.list[1]
		args = append(args, micros(q.BeforeAt), q.BeforeID)
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
		if err := rows.Scan(&e.Org, &at, &e.ID, &e.ActorID, &e.ActorUsername, &e.ActorTokenID, &e.Action,
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
