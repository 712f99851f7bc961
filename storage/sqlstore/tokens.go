package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// tokenRow is a row of tokens as it is scanned.
type tokenRow struct {
	t       storage.Token
	digest  []byte
	created int64
	expires sql.NullInt64
}

// dest returns where the columns of tokenColumns go, in their order.
func (r *tokenRow) dest() []any {
	t := &r.t
	return []any{&t.ID, &r.digest, &t.Org, &t.UserID, &t.Name, &t.Description, &t.Type, &r.created, &r.expires}
}

// token returns the scanned token, its strings as d stored them.
func (r *tokenRow) token(d *dialect) (storage.Token, error) {
	t := r.t
	if d.escapes {
		for _, p := range []*string{&t.ID, &t.Org, &t.UserID, &t.Name, &t.Description, &t.Type} {
			*p = unescapeNUL(*p)
		}
	}
	if len(r.digest) != len(t.Digest) {
		return storage.Token{}, fmt.Errorf("token %s: a digest of %d bytes", t.ID, len(r.digest))
	}
	copy(t.Digest[:], r.digest)
	t.CreatedAt = fromMicros(r.created)
	t.ExpiresAt = fromNullMicros(r.expires)
	return t, nil
}

// lockUser locks the row of the user uid of org until tx ends (on
// PostgreSQL; SQLite's write transaction is exclusive already), or
// returns ErrNotFound: creations under a limit of the user's records take
// it, so that they count one after another.
func (s *Store) lockUser(ctx context.Context, tx runner, org, uid string) error {
	var one int
	err := tx.QueryRowContext(ctx, s.q.lockUser, org, uid).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ErrNotFound
	}
	return err
}

// CreateToken implements storage.Store. It locks the user's row (on
// PostgreSQL; SQLite's write transaction is exclusive already), then
// deletes the user's tokens that are no longer live and counts the rest,
// so concurrent creations are counted one after another, and a concurrent
// DeleteUser either waits for the token and deletes it or is waited for
// and leaves no user to write it for.
func (s *Store) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.auditedTx(ctx, a, func(tx runner) error {
		if err := s.lockUser(ctx, tx, t.Org, t.UserID); err != nil {
			return err
		}
		if lim.Max > 0 {
			liveAt := micros(lim.LiveAt)
			if _, err := tx.ExecContext(ctx, s.q.dropExpiredTokens, t.Org, t.UserID, liveAt); err != nil {
				return err
			}
			var n int
			if err := tx.QueryRowContext(ctx, s.q.countTokens, t.Org, t.UserID, liveAt).Scan(&n); err != nil {
				return err
			}
			if n >= lim.Max {
				if err := tx.QueryRowContext(ctx, s.q.tokenTaken, t.ID, t.Digest[:]).Scan(&n); err != nil {
					return err
				}
				if n > 0 {
					return storage.ErrAlreadyExists
				}
				return storage.ErrLimitExceeded
			}
		}
		_, err := tx.ExecContext(ctx, s.q.insertToken, t.ID, t.Digest[:], t.Org, t.UserID, t.Name, t.Description, t.Type,
			micros(t.CreatedAt), nullMicros(t.ExpiresAt))
		switch {
		case s.d.isUnique(err):
			return storage.ErrAlreadyExists
		case s.d.isForeignKey(err):
			return storage.ErrNotFound
		case err != nil:
			return err
		}
		// A value seeded again after its revocation is live again.
		if _, err := tx.ExecContext(ctx, s.q.unrevoke, t.Digest[:]); err != nil {
			return err
		}
		return nil
	})
	return failed("create token", err)
}

// ReadAccess implements storage.Store: one query reads the token of the
// digest joined with its user, and one more, when the query names a
// target, reads the target joined with its live tokens (when the target is
// the credential's user, its live tokens alone; without tokens asked, no
// second query).
func (s *Store) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var (
		a  storage.Access
		tr tokenRow
		ur userRow
	)
	err := s.rd().QueryRowContext(ctx, s.q.credential, q.Digest[:]).Scan(append(tr.dest(), ur.dest()...)...)
	if errors.Is(err, sql.ErrNoRows) {
		// The rare path: one more statement, for the tombstone.
		t := &a.Credential.Token
		err := s.rd().QueryRowContext(ctx, s.q.revoked, q.Digest[:], micros(q.LiveAt)).Scan(&t.Org, &t.UserID, &t.ID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return storage.Access{}, storage.ErrNotFound
		case err != nil:
			return storage.Access{}, failed("read access", err)
		}
		return a, storage.ErrRevoked
	}
	if err != nil {
		return storage.Access{}, failed("read access", err)
	}
	if a.Credential.Token, err = tr.token(s.d); err != nil {
		return storage.Access{}, failed("read access", err)
	}
	if a.Credential.User, err = ur.user(s.d); err != nil {
		return storage.Access{}, failed("read access", err)
	}
	if q.Username == "" {
		return a, nil
	}
	if q.Username == a.Credential.User.FoldedUsername {
		// The target is the credential's user, read already.
		a.Target, a.TargetFound = a.Credential.User, true
		a.Target.Privileges = slices.Clone(a.Target.Privileges) // not the credential's
		if q.Tokens {
			if a.Tokens, err = s.liveTokens(ctx, q.Into, a.Target.Org, a.Target.ID, q.LiveAt); err != nil {
				return storage.Access{}, failed("read access", err)
			}
		}
		return a, nil
	}
	if !q.Tokens {
		var tu userRow
		err := s.rd().QueryRowContext(ctx, s.q.getUser, a.Credential.User.Org, q.Username).Scan(tu.dest()...)
		if errors.Is(err, sql.ErrNoRows) {
			return a, nil
		}
		if err != nil {
			return storage.Access{}, failed("read access", err)
		}
		a.Target, err = tu.user(s.d)
		a.TargetFound = err == nil
		return a, failed("read access", err)
	}
	rows, err := s.rd().QueryContext(ctx, s.q.targetTokens, a.Credential.User.Org, q.Username, micros(q.LiveAt))
	if err != nil {
		return storage.Access{}, failed("read access", err)
	}
	defer rows.Close()
	var tu userRow
	dest := append(tu.dest(), tr.dest()...)
	a.Tokens = q.Into
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return storage.Access{}, failed("read access", err)
		}
		if !a.TargetFound {
			if a.Target, err = tu.user(s.d); err != nil {
				return storage.Access{}, failed("read access", err)
			}
			a.TargetFound = true
		}
		if tr.t.ID == "" { // the target has no live token
			continue
		}
		t, err := tr.token(s.d)
		if err != nil {
			return storage.Access{}, failed("read access", err)
		}
		a.Tokens = append(a.Tokens, t)
	}
	if err := rows.Err(); err != nil {
		return storage.Access{}, failed("read access", err)
	}
	if !a.TargetFound {
		a.Tokens = nil
	}
	return a, nil
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	out, err := s.liveTokens(ctx, []storage.Token{}, org, userID, liveAt)
	return out, failed("list tokens", err)
}

// liveTokens appends to dst the tokens of the user userID of org that are
// live at liveAt, in creation order.
func (s *Store) liveTokens(ctx context.Context, dst []storage.Token, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	rows, err := s.rd().QueryContext(ctx, s.q.listTokens, org, userID, micros(liveAt))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var r tokenRow
	dest := r.dest()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		t, err := r.token(s.d)
		if err != nil {
			return nil, err
		}
		dst = append(dst, t)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return dst, nil
}

// revokedTrimBatch bounds the tombstones past their time that one
// DeleteToken deletes.
const revokedTrimBatch = 16

// DeleteToken implements storage.Store: in one transaction, the DELETE of
// the token's row, the tombstone of its digest, a bounded batch of
// tombstones past their time at r.At, and its audit event.
func (s *Store) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.auditedTx(ctx, a, func(tx runner) error {
		var (
			digest  []byte
			expires sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, s.q.deleteToken, org, userID, id, micros(r.At)).Scan(&digest, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil {
			return err
		}
		until := r.Until(storage.Token{ExpiresAt: fromNullMicros(expires)})
		if _, err := tx.ExecContext(ctx, s.q.dropRevoked, micros(r.At)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q.revoke, digest, org, userID, id, micros(r.At), micros(until)); err != nil {
			return err
		}
		if r.MaxPerOrg > 0 {
			if _, err := tx.ExecContext(ctx, s.q.boundRevoked, org, r.MaxPerOrg); err != nil {
				return err
			}
		}
		return nil
	})
	return failed("delete token", err)
}
