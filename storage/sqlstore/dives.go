package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/orgadmin/orgadmin/storage"
)

// resourceDoc is a storage.Resource as stored, in a JSON array.
type resourceDoc struct {
	URL   string `json:"url"`
	Alias string `json:"alias"`
}

// resources is rs as stored: a JSON array, or NULL for none.
func resources(rs []storage.Resource) sql.NullString {
	if len(rs) == 0 {
		return sql.NullString{}
	}
	docs := make([]resourceDoc, len(rs))
	for i, r := range rs {
		docs[i] = resourceDoc(r)
	}
	b, _ := json.Marshal(docs) // strings always encode
	return sql.NullString{String: string(b), Valid: true}
}

// fromResources decodes what resources stored.
func fromResources(s sql.NullString) ([]storage.Resource, error) {
	if !s.Valid {
		return nil, nil
	}
	var docs []resourceDoc
	if err := json.Unmarshal([]byte(s.String), &docs); err != nil {
		return nil, fmt.Errorf("decode resources: %w", err)
	}
	out := make([]storage.Resource, len(docs))
	for i, d := range docs {
		out[i] = storage.Resource(d)
	}
	return out, nil
}

// PutDive implements storage.Store: one INSERT … ON CONFLICT DO UPDATE,
// in a transaction with its audit event when it has one.
func (s *Store) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.writeAudited(ctx, a, func(r runner) error {
		_, err := r.ExecContext(ctx, s.q.putDive, d.Org, d.ID, d.Title, d.Version, resources(d.RequiredResources))
		return err
	})
	if s.d.isForeignKey(err) {
		return storage.ErrNotFound
	}
	return failed("put dive", err)
}

// CreateDive implements storage.Store: one INSERT … ON CONFLICT DO
// NOTHING, in a transaction with its audit event when it has one, which
// a Dive that exists rolls back.
func (s *Store) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.writeAudited(ctx, a, func(r runner) error {
		res, err := r.ExecContext(ctx, s.q.createDive, d.Org, d.ID, d.Title, d.Version, resources(d.RequiredResources))
		if err != nil {
			return err
		}
		switch n, err := res.RowsAffected(); {
		case err != nil:
			return err
		case n == 0:
			return storage.ErrAlreadyExists
		}
		return nil
	})
	if s.d.isForeignKey(err) {
		return storage.ErrNotFound
	}
	return failed("create dive", err)
}

// GetDive implements storage.Store.
func (s *Store) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	d := storage.Dive{ID: id, Org: org}
	var rs sql.NullString
	err := s.rd().QueryRowContext(ctx, s.q.getDive, org, id).Scan(&d.Title, &d.Version, &rs)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Dive{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.Dive{}, failed("get dive", err)
	}
	d.Title = s.d.unescape(d.Title)
	d.RequiredResources, err = fromResources(rs)
	return d, failed("get dive", err)
}

// GetEmbedTarget implements storage.Store: one query, whose one row joins
// the Dive and the user, each there or not.
func (s *Store) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var (
		t  storage.EmbedTarget
		rs sql.NullString
		ur userRow
	)
	err := s.rd().QueryRowContext(ctx, s.q.embedTarget, org, diveID, folded).
		Scan(append([]any{&t.Dive.ID, &t.Dive.Title, &t.Dive.Version, &rs}, ur.dest()...)...)
	if err != nil {
		return storage.EmbedTarget{}, failed("get embed target", err)
	}
	if t.Dive.ID != "" {
		t.Dive.ID, t.Dive.Title = s.d.unescape(t.Dive.ID), s.d.unescape(t.Dive.Title)
		t.Dive.Org, t.DiveFound = org, true
		if t.Dive.RequiredResources, err = fromResources(rs); err != nil {
			return storage.EmbedTarget{}, failed("get embed target", err)
		}
	} else {
		t.Dive = storage.Dive{}
	}
	if ur.u.ID != "" {
		if t.User, err = ur.user(s.d); err != nil {
			return storage.EmbedTarget{}, failed("get embed target", err)
		}
		t.UserFound = true
	}
	return t, nil
}

// CreateEmbedSession implements storage.Store: in one transaction, it
// deletes the user's sessions that are not live at lim.LiveAt and inserts
// es. Under a limit it first locks the user's row (on PostgreSQL; SQLite's
// write transaction is exclusive already) and counts the user's live
// sessions, as CreateToken counts tokens, so concurrent creations are
// counted one after another.
func (s *Store) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.auditedTx(ctx, a, func(tx runner) error {
		liveAt := micros(lim.LiveAt)
		if lim.Max > 0 {
			if err := s.lockUser(ctx, tx, es.Org, es.UserID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, s.q.dropExpiredSessions, es.Org, es.UserID, liveAt); err != nil {
			return err
		}
		if lim.Max > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, s.q.countSessions, es.Org, es.UserID, liveAt).Scan(&n); err != nil {
				return err
			}
			if n >= lim.Max {
				if err := tx.QueryRowContext(ctx, s.q.sessionTaken, es.Digest[:]).Scan(&n); err != nil {
					return err
				}
				if n > 0 {
					return storage.ErrAlreadyExists
				}
				return storage.ErrLimitExceeded
			}
		}
		var state []byte
		if es.InitialState != nil {
			state = es.InitialState
		}
		_, err := tx.ExecContext(ctx, s.q.insertSession, es.Digest[:], es.Org, es.DiveID, es.Version, es.UserID,
			es.Username, resources(es.Resources), state, es.AffinityKey, micros(es.CreatedAt), micros(es.ExpiresAt))
		switch {
		case s.d.isForeignKey(err):
			return storage.ErrNotFound
		case s.d.isUnique(err):
			return storage.ErrAlreadyExists
		case err != nil:
			return err
		}
		return nil
	})
	return failed("create embed session", err)
}

// EmbedSessionByDigest implements storage.Store.
func (s *Store) EmbedSessionByDigest(ctx context.Context, digest storage.Digest) (storage.EmbedSession, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var (
		es               storage.EmbedSession
		d                []byte
		rs               sql.NullString
		created, expires int64
	)
	err := s.rd().QueryRowContext(ctx, s.q.sessionByDigest, digest[:]).Scan(&d, &es.Org, &es.DiveID, &es.Version, &es.UserID,
		&es.Username, &rs, &es.InitialState, &es.AffinityKey, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.EmbedSession{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.EmbedSession{}, failed("embed session", err)
	}
	es.Digest = digest
	for _, p := range []*string{&es.Org, &es.DiveID, &es.UserID, &es.Username, &es.AffinityKey} {
		*p = s.d.unescape(*p)
	}
	es.CreatedAt, es.ExpiresAt = fromMicros(created), fromMicros(expires)
	es.Resources, err = fromResources(rs)
	return es, failed("embed session", err)
}

// SetDuckling implements storage.Store: one INSERT … ON CONFLICT DO
// UPDATE, which the user's foreign key refuses when the user is gone.
func (s *Store) SetDuckling(ctx context.Context, d storage.Duckling) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.wr().ExecContext(ctx, s.q.setDuckling, d.Org, d.UserID, d.ID, d.Active, micros(d.At))
	if s.d.isForeignKey(err) {
		return storage.ErrNotFound
	}
	return failed("set duckling", err)
}

// ListActivity implements storage.Store: one query joins the org's users
// with their Duckling reports.
func (s *Store) ListActivity(ctx context.Context, org string) ([]storage.Activity, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.rd().QueryContext(ctx, s.q.listActivity, org)
	if err != nil {
		return nil, failed("list activity", err)
	}
	defer rows.Close()
	out := []storage.Activity{}
	var (
		ur     userRow
		d      storage.Duckling
		at     int64
		lastID string
	)
	dest := append(ur.dest(), &d.ID, &d.Active, &at)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, failed("list activity", err)
		}
		if len(out) == 0 || ur.u.ID != lastID { // as stored
			lastID = ur.u.ID
			u, err := ur.user(s.d)
			if err != nil {
				return nil, failed("list activity", err)
			}
			out = append(out, storage.Activity{User: u})
		}
		a := &out[len(out)-1]
		a.Ducklings = append(a.Ducklings, storage.Duckling{Org: org, UserID: a.User.ID, ID: s.d.unescape(d.ID), Active: d.Active, At: fromMicros(at)})
	}
	if err := rows.Err(); err != nil {
		return nil, failed("list activity", err)
	}
	return out, nil
}
