package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// runner runs the Store's statements, each prepared once per connection
// and kept: on a pool (db), or in a transaction of the write pool (tx).
// SQLite would otherwise compile every statement anew at each call, which
// cost more than the statement itself. Its methods are those of *sql.DB
// and *sql.Tx that the Store uses; a statement that is not one of the
// Store's fixed queries (a migration, a batch of seed marks) runs on tx
// (or db) directly instead, so that the kept statements stay few.
type runner struct {
	s  *Store
	db *sql.DB
	tx *sql.Tx
}

// prepKey names a kept statement: its pool and text.
type prepKey struct {
	db *sql.DB
	q  string
}

// stmt returns q prepared on r's pool, in r's transaction if any.
func (r runner) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	k := prepKey{r.db, q}
	v, ok := r.s.stmts.Load(k)
	if !ok && r.tx != nil {
		// Not prepare on the pool: on SQLite the transaction holds its
		// one connection. The statements of transactions are prepared at
		// Open (prepareWrites); any other is prepared for this once.
		return r.tx.PrepareContext(ctx, q)
	}
	if !ok {
		st, err := r.db.PrepareContext(ctx, q)
		if err != nil {
			return nil, err
		}
		if v, ok = r.s.stmts.LoadOrStore(k, st); ok {
			_ = st.Close() // another call prepared it first
		}
	}
	st := v.(*sql.Stmt)
	if r.tx != nil {
		return r.tx.StmtContext(ctx, st), nil
	}
	return st, nil
}

// row is the result of runner.QueryRowContext: a *sql.Row, or the error
// that kept the statement from running.
type row struct {
	r   *sql.Row
	err error
}

// Scan is (*sql.Row).Scan.
func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.r.Scan(dest...)
}

func (r runner) QueryRowContext(ctx context.Context, q string, args ...any) row {
	st, err := r.stmt(ctx, q)
	if err != nil {
		return row{err: err}
	}
	return row{r: st.QueryRowContext(ctx, r.s.d.escapeArgs(args)...)}
}

func (r runner) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := r.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, r.s.d.escapeArgs(args)...)
}

func (r runner) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := r.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, r.s.d.escapeArgs(args)...)
}

// closeStmts closes the kept statements.
func (s *Store) closeStmts() {
	s.stmts.Range(func(k, v any) bool {
		_ = v.(*sql.Stmt).Close()
		s.stmts.Delete(k)
		return true
	})
}

// prepareWrites prepares, on the write pool, the statements that run in
// transactions, which cannot prepare on the pool themselves (see stmt).
func (s *Store) prepareWrites(ctx context.Context) error {
	for _, q := range []string{
		s.q.lockOrg, s.q.userTaken, s.q.insertUser, s.q.changeUserCount, s.q.deleteUser,
		s.q.lockUser, s.q.dropExpiredTokens, s.q.countTokens, s.q.tokenTaken, s.q.insertToken,
		s.q.dropExpiredSessions, s.q.insertSession, s.q.addFeedback, s.q.trimFeedback,
		s.q.createOrg, s.q.setPrivileges, s.q.userExists, s.q.setInstances, s.q.deleteToken, s.q.putDive, s.q.createDive,
		s.q.revoke, s.q.unrevoke, s.q.dropRevoked,
		s.eq.insert, s.eq.dropExpired, s.eq.boundary, s.eq.dropBeyond,
	} {
		if _, err := s.wr().stmt(ctx, q); err != nil {
			return fmt.Errorf("sqlstore: prepare %q: %w", q, err)
		}
	}
	return nil
}
