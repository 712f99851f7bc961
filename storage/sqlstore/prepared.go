package sqlstore

import (
	"context"
	"database/sql"
	"errors"
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
	// read marks the read pool's runner (rd): its statements only read,
	// and one that fails on a cut connection may run again (see again).
	read bool
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
// that kept the statement from running; for a read, what running it
// again needs (see again).
type row struct {
	r   *sql.Row
	err error

	run  runner
	st   *sql.Stmt
	ctx  context.Context
	args []any
	lost int64 // the read pool's connLoss.at before the statement ran
}

// Scan is (*sql.Row).Scan.
func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	err := r.r.Scan(dest...)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && r.run.again(r.ctx, r.lost) {
		err = r.st.QueryRowContext(r.ctx, r.args...).Scan(dest...)
	}
	return err
}

// lostAt returns, for a read on PostgreSQL, when a connection of the pool
// was last found cut (connLoss.at); 0 otherwise.
func (r runner) lostAt() int64 {
	if !r.read || r.s.loss == nil {
		return 0
	}
	return r.s.loss.at.Load()
}

// again reports whether a read that failed is run once more: on
// PostgreSQL, when a connection of the pool was found cut while it ran
// (as its own was, when the server restarted or ended its backends), and
// its context allows. The connection it then gets was pinged, or is new.
func (r runner) again(ctx context.Context, lost int64) bool {
	return r.read && r.s.loss != nil && r.s.loss.at.Load() != lost && ctx.Err() == nil
}

// readStmt is stmt, for a read prepared again when its first preparation
// (on the pool, on a connection of its own) met a cut connection. It
// returns the statement and the read pool's connLoss.at from then on.
func (r runner) readStmt(ctx context.Context, q string) (*sql.Stmt, int64, error) {
	lost := r.lostAt()
	st, err := r.stmt(ctx, q)
	if err != nil && r.again(ctx, lost) {
		lost = r.lostAt()
		st, err = r.stmt(ctx, q)
	}
	return st, lost, err
}

func (r runner) QueryRowContext(ctx context.Context, q string, args ...any) row {
	st, lost, err := r.readStmt(ctx, q)
	if err != nil {
		return row{err: err}
	}
	args = r.s.d.escapeArgs(args)
	return row{r: st.QueryRowContext(ctx, args...), run: r, st: st, ctx: ctx, args: args, lost: lost}
}

func (r runner) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, lost, err := r.readStmt(ctx, q)
	if err != nil {
		return nil, err
	}
	args = r.s.d.escapeArgs(args)
	rows, err := st.QueryContext(ctx, args...)
	if err != nil && r.again(ctx, lost) {
		rows, err = st.QueryContext(ctx, args...)
	}
	return rows, err
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
