// Package sqlstore is the SQL storage adapter, on PostgreSQL or on an
// embedded SQLite file: one code path through database/sql, and a small
// dialect value for what the two engines spell differently.
//
// PostgreSQL (postgres://… or postgresql://…, through pgx's database/sql
// driver) lets several orgadmin processes share one database. Transactions
// run at READ COMMITTED, PostgreSQL's default; where a write depends on
// what it counts, it first takes a row lock (SELECT … FOR UPDATE) and then
// counts in a later statement, which reads what every transaction that
// held the lock before it committed:
//
//   - CreateUser and DeleteUser lock the org's row, which holds the count
//     of its users that they change, so the per-org user limit is exact
//     however many processes create users at once, and costs the same in
//     an org of a million users as in an empty one;
//   - CreateToken locks the user's row, so the per-user limit of live
//     tokens is exact, and a token is never written for a user that a
//     concurrent DeleteUser removes (DeleteUser waits for the lock too).
//
// Unique constraints decide duplicates: (org, folded username), (org, user
// id), the token's id and its digest, the session's digest. Deleting a
// user deletes its tokens, Duckling reports and embed sessions by ON
// DELETE CASCADE, in the same statement. User listings are keyset pages
// read from an index on (org, folded username), or on (org, service
// account, folded username) when filtered; folded usernames sort byte-wise
// (COLLATE "C").
//
// SQLite (sqlite:PATH) keeps everything in one file in WAL mode, with
// foreign keys on. Writes go through one connection and every write
// transaction starts with BEGIN IMMEDIATE, so it takes the file's write
// lock before it reads: a deferred transaction that reads and then writes
// fails with SQLITE_BUSY when another writer got there first, and no busy
// timeout helps it. Another process on the same file waits for the lock
// (busy_timeout). Reads run on a pool of read-only connections, never
// blocked by the writer. Commits are synchronous=FULL by default: a write
// that returned survives kill -9 and a power cut alike (NORMAL, which
// survives kill -9 but may lose the last commits on a power cut, can be
// chosen with sqlite:PATH?synchronous=normal).
//
// Each change is written in one transaction with the audit event it
// records.
//
// Times are stored as microseconds since the Unix epoch (BIGINT), the same
// on both engines; a zero time is NULL. Token and session values are never
// stored, only their SHA-256 digests, as bytes. The schema is versioned and
// migrated at Open, in one transaction.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Defaults of Options.
const (
	DefaultTimeout     = 5 * time.Second
	DefaultMaxConns    = 16
	DefaultMaxFeedback = 100_000
)

// Options configures a Store. The zero value of each field means its
// default.
type Options struct {
	// Timeout bounds each operation (default 5 s). A database that is
	// down or slow makes the operation fail with an error once it has
	// passed.
	Timeout time.Duration
	// MaxConns bounds the connections to PostgreSQL, and the read
	// connections to a SQLite file (default 16).
	MaxConns int
	// MaxFeedback is how many feedback submissions the Store keeps; older
	// ones are dropped (default 100 000).
	MaxFeedback int
}

// Store is a storage.Store on PostgreSQL or SQLite. It caches nothing: every
// call reads the database, so several processes sharing one see each
// other's changes at once.
type Store struct {
	d       *dialect
	db      *sql.DB // reads; on PostgreSQL, writes too
	wdb     *sql.DB // writes: db on PostgreSQL, one connection on SQLite
	timeout time.Duration
	maxFB   int
	q       queries
	eq      eventQueries
	stmts   sync.Map // prepKey → *sql.Stmt; see runner
	// loss watches PostgreSQL's pool for cut connections; nil on SQLite.
	loss *connLoss
}

// rd runs statements on the read pool, wr on the write pool.
func (s *Store) rd() runner { return runner{s: s, db: s.db, read: true} }
func (s *Store) wr() runner { return runner{s: s, db: s.wdb} }

var _ storage.Store = (*Store)(nil)

// Open connects to the database dsn names and brings its schema to the
// current version (see Migrate). dsn is postgres://… or postgresql://… (a
// PostgreSQL connection URL; its query parameters other than pgx's own are
// sent as run-time settings, such as search_path) or sqlite:PATH (a file,
// created if missing; sqlite:PATH?synchronous=normal trades durability on
// power loss for faster commits). It returns an error when dsn names
// neither, when the database does not answer within the timeout, or when
// its schema is newer than this package knows.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	s, err := open(dsn, opts)
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithTimeout(ctx, migrateTimeout(s.timeout))
	defer cancel()
	if err := s.migrateAtOpen(mctx); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.prepareWrites(mctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// migrateAtOpen brings the schema to the current version, trying again
// while the engine refuses for a lock held elsewhere (d.busy), until ctx
// ends. SQLite refuses at once, without the busy timeout's wait, a
// connection that would switch a new file to WAL while another holds
// the file's write lock, as when processes open a new file together; a
// try after that one's transaction succeeds.
func (s *Store) migrateAtOpen(ctx context.Context) error {
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		err := s.migrate(ctx, len(migrations))
		if err == nil || s.d.busy == nil || !s.d.busy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// open returns a Store on dsn without touching its schema.
func open(dsn string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxFeedback <= 0 {
		opts.MaxFeedback = DefaultMaxFeedback
	}
	var (
		s   *Store
		err error
	)
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		s, err = openPostgres(dsn, opts)
	case strings.HasPrefix(dsn, "sqlite:"):
		s, err = openSQLite(strings.TrimPrefix(dsn, "sqlite:"), opts)
	default:
		return nil, fmt.Errorf("sqlstore: unsupported data source %q (want postgres://…, postgresql://… or sqlite:PATH)", redact(dsn))
	}
	if err != nil {
		return nil, err
	}
	s.timeout, s.maxFB = opts.Timeout, opts.MaxFeedback
	s.q = newQueries(s.d)
	s.eq = newEventQueries(s.d)
	return s, nil
}

// migrateTimeout bounds the migration at Open: longer than one operation,
// as it may wait for another process's migration.
func migrateTimeout(op time.Duration) time.Duration {
	return max(op*6, 30*time.Second)
}

// redact hides a password in a data source name before it is shown.
func redact(dsn string) string {
	if strings.HasPrefix(dsn, "sqlite:") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable)"
	}
	if _, ok := u.User.Password(); !ok {
		return dsn // as written: nothing to hide
	}
	return u.Redacted()
}

// Close closes the Store's connections.
func (s *Store) Close() {
	s.closeStmts()
	_ = s.db.Close()
	if s.wdb != s.db {
		_ = s.wdb.Close()
	}
}

// op bounds one operation by the Store's timeout.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// inTx runs f in a write transaction (BEGIN IMMEDIATE on SQLite), and
// commits it when f returns nil. The transaction is rolled back when f
// fails or the commit does.
func (s *Store) inTx(ctx context.Context, f func(tx runner) error) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(runner{s: s, db: s.wdb, tx: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// failed wraps err, the failure of op, unless it is a sentinel of the
// contract.
func failed(op string, err error) error {
	if err == nil || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrAlreadyExists) || errors.Is(err, storage.ErrLimitExceeded) || errors.Is(err, storage.ErrConflict) {
		return err
	}
	return fmt.Errorf("sqlstore: %s: %w", op, err)
}

// micros is t as stored: microseconds since the Unix epoch.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros is the UTC time of a stored instant.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullMicros is t as stored where a zero time means none: NULL.
func nullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

func fromNullMicros(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromMicros(n.Int64)
}

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.writeAudited(ctx, a, func(r runner) error {
		_, err := r.ExecContext(ctx, s.q.createOrg, o.ID, micros(o.CreatedAt))
		return err
	})
	if s.d.isUnique(err) {
		return storage.ErrAlreadyExists
	}
	return failed("create org", err)
}

// GetOrg implements storage.Store.
func (s *Store) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var created int64
	err := s.rd().QueryRowContext(ctx, s.q.getOrg, id).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Org{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.Org{}, failed("get org", err)
	}
	return storage.Org{ID: id, CreatedAt: fromMicros(created)}, nil
}

// AddFeedback implements storage.Store. The Store keeps the newest
// Options.MaxFeedback submissions: each insert deletes those that fell out
// of that window, a range of the sequence's index, usually empty.
func (s *Store) AddFeedback(ctx context.Context, f storage.Feedback) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.inTx(ctx, func(tx runner) error {
		_, err := tx.ExecContext(ctx, s.q.addFeedback, f.ID, f.PagePath, f.Text, f.PageTitle, f.Source, micros(f.CreatedAt))
		if s.d.isUnique(err) {
			return storage.ErrAlreadyExists
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, s.q.trimFeedback, s.maxFB)
		return err
	})
	return failed("add feedback", err)
}

// markBatch is how many seed marks one INSERT writes.
const markBatch = 200

// MarkSeeded implements storage.Store: the keys are written in one
// transaction, in batches, and keys already marked are left as they are.
func (s *Store) MarkSeeded(ctx context.Context, org string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.inTx(ctx, func(tx runner) error {
		for len(keys) > 0 {
			n := min(len(keys), markBatch)
			var b strings.Builder
			b.WriteString("INSERT INTO seed_marks (org, key) VALUES ")
			args := make([]any, 0, 2*n)
			for i, k := range keys[:n] {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "(%s, %s)", s.d.param(2*i+1), s.d.param(2*i+2))
				args = append(args, org, k)
			}
			b.WriteString(" ON CONFLICT (org, key) DO NOTHING")
			if _, err := tx.tx.ExecContext(ctx, b.String(), s.d.escapeArgs(args)...); err != nil {
				return err
			}
			keys = keys[n:]
		}
		return nil
	})
	return failed("mark seeded", err)
}

// SeedMarks implements storage.Store.
func (s *Store) SeedMarks(ctx context.Context, org string) ([]string, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.rd().QueryContext(ctx, s.q.seedMarks, org)
	if err != nil {
		return nil, failed("seed marks", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, failed("seed marks", err)
		}
		out = append(out, s.d.unescape(k))
	}
	return out, failed("seed marks", rows.Err())
}

// Ping implements storage.Store: it reports whether the database answers
// a query within the timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var one int
	return failed("ping", s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
}
