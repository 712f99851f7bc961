package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is what PostgreSQL and SQLite spell differently. Queries are
// written once, in PostgreSQL's spelling ($1 parameters, FOR UPDATE row
// locks, BYTEA, COLLATE "C"), and rewritten for SQLite at Open.
type dialect struct {
	name string
	// rewrite turns a query in PostgreSQL's spelling into the engine's.
	rewrite func(q string) string
	// unique and foreignKey recognise a violation of a unique constraint
	// and of a foreign key.
	unique, foreignKey func(error) bool
	// busy recognises a refusal for a lock held elsewhere that a later
	// try may not meet; nil where there is none.
	busy func(error) bool
	// lockKey takes the migration lock inside a transaction, or is empty
	// where BEGIN IMMEDIATE is the lock.
	lockKey string
	// escapes is true where text cannot hold NUL (PostgreSQL): strings
	// are stored through escapeNUL and read through unescapeNUL.
	escapes bool
}

// escapeNUL returns s with each NUL byte written as \x01\x01 and each
// \x01 as \x01\x02, so that PostgreSQL's text, which refuses NUL, holds
// any string. The code keeps byte-wise order (NUL still sorts before
// \x01, and both before \x02) and leaves every string without those two
// bytes as it is: usernames, ids and all ordinary text.
func escapeNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 && strings.IndexByte(s, 1) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0:
			b.WriteString("\x01\x01")
		case 1:
			b.WriteString("\x01\x02")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// unescapeNUL reverses escapeNUL.
func unescapeNUL(s string) string {
	if strings.IndexByte(s, 1) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == 1 && i+1 < len(s) {
			i++
			b.WriteByte(s[i] - 1) // \x01 for NUL, \x02 for \x01
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescape returns s as it was before d stored it.
func (d *dialect) unescape(s string) string {
	if d.escapes {
		return unescapeNUL(s)
	}
	return s
}

// escapeArgs returns args with each string escaped as d stores it (a
// copy, when one changes).
func (d *dialect) escapeArgs(args []any) []any {
	if !d.escapes {
		return args
	}
	out := args
	for i, a := range args {
		if str, ok := a.(string); ok {
			if e := escapeNUL(str); e != str {
				if &out[0] == &args[0] {
					out = append([]any(nil), args...)
				}
				out[i] = e
			}
		}
	}
	return out
}

func (d *dialect) isUnique(err error) bool     { return err != nil && d.unique(err) }
func (d *dialect) isForeignKey(err error) bool { return err != nil && d.foreignKey(err) }

// param is the n-th query parameter, 1-based, in the engine's spelling.
func (d *dialect) param(n int) string {
	if d.name == "sqlite" {
		return "?" + strconv.Itoa(n)
	}
	return "$" + strconv.Itoa(n)
}

// migrationLock is the first key of PostgreSQL's advisory lock that
// migrations hold, so that processes starting together migrate one after
// another; the second is a hash of the schema migrated (the first of the
// search_path), so that migrations of different schemas do not wait for
// each other.
const migrationLock int32 = 0x6f7267 // "org"

var postgres = &dialect{
	name:    "postgres",
	rewrite: func(q string) string { return q },
	unique: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
	},
	foreignKey: func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "23503" // foreign_key_violation
	},
	lockKey: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, hashtext(current_schema()))", migrationLock),
	escapes: true,
}

var sqliteDialect = &dialect{
	name: "sqlite",
	rewrite: func(q string) string {
		q = strings.ReplaceAll(q, " FOR UPDATE", "")  // the write lock is the file's
		q = strings.ReplaceAll(q, ` COLLATE "C"`, "") // BINARY, byte-wise, is the default
		q = strings.ReplaceAll(q, "BYTEA", "BLOB")
		q = strings.ReplaceAll(q, "BIGSERIAL", "INTEGER") // INTEGER PRIMARY KEY: the rowid
		return strings.ReplaceAll(q, "$", "?")            // ?N: numbered, as $N
	},
	unique: func(err error) bool {
		c := sqliteCode(err)
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	},
	foreignKey: func(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY },
	busy:       func(err error) bool { return sqliteCode(err)&0xff == sqlite3.SQLITE_BUSY },
}

func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()
	}
	return 0
}

// openPostgres opens a pool of connections to the PostgreSQL server of
// dsn. It does not connect: the migration that follows does.
func openPostgres(dsn string, opts Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: %s: %w", redact(dsn), err)
	}
	loss := &connLoss{}
	cfg.Tracer = loss
	db := stdlib.OpenDB(*cfg, stdlib.OptionShouldPing(loss.shouldPing))
	db.SetMaxOpenConns(opts.MaxConns)
	db.SetMaxIdleConns(opts.MaxConns)
	return &Store{d: postgres, db: db, wdb: db, loss: loss}, nil
}

// busyTimeout is how long a SQLite connection waits for the file's write
// lock that another process holds, in milliseconds.
const busyTimeout = 10_000

// openSQLite opens the SQLite file path: one connection for writes, whose
// transactions begin IMMEDIATE, and a pool of read-only ones. path may end
// with ?synchronous=full (the default) or ?synchronous=normal.
func openSQLite(path string, opts Options) (*Store, error) {
	path, query, _ := strings.Cut(path, "?")
	if path == "" {
		return nil, errors.New("sqlstore: sqlite: no file path (want sqlite:PATH)")
	}
	if host, ok := strings.CutPrefix(path, "//"); ok && !strings.HasPrefix(host, "/") {
		// SQLite would read it as a file URI naming a host.
		return nil, fmt.Errorf("sqlstore: sqlite:%s: a URL with a host, not a path (want sqlite:PATH, as sqlite:%s)", path, host)
	}
	sync := "FULL"
	if query != "" {
		v, err := url.ParseQuery(query)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: sqlite:%s?%s: %w", path, query, err)
		}
		for k := range v {
			if k != "synchronous" {
				return nil, fmt.Errorf("sqlstore: sqlite:%s: unknown parameter %q (want synchronous)", path, k)
			}
		}
		switch s := strings.ToUpper(v.Get("synchronous")); s {
		case "FULL", "NORMAL":
			sync = s
		default:
			return nil, fmt.Errorf("sqlstore: sqlite:%s: synchronous=%q (want full or normal)", path, v.Get("synchronous"))
		}
	}
	// The file name goes through url.PathEscape so that a '?' or '#' in it
	// is not taken for the start of the driver's parameters.
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + url.Values{
		"_busy_timeout": {strconv.Itoa(busyTimeout)},
		"_journal_mode": {"WAL"},
		"_synchronous":  {sync},
		"_foreign_keys": {"1"},
	}.Encode()
	w, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlstore: sqlite:%s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open("sqlite", base+"&_query_only=1")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlstore: sqlite:%s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.MaxConns)
	r.SetMaxIdleConns(opts.MaxConns)
	return &Store{d: sqliteDialect, db: r, wdb: w}, nil
}

// connLoss finds the pooled PostgreSQL connections that a cut one shows
// may be cut too. When the server restarts, fails over or ends its
// backends, every connection of the pool is cut, but a connection learns
// it only when it is next used: each would fail one more operation (a
// 500), up to the pool's size. So once a connection is found cut (a
// statement failed and left it closed, or a ping failed), every
// connection last taken from the pool before then is pinged when next
// taken, and a dead one is replaced before any statement runs on it.
// pgx itself pings only those idle for more than a second.
type connLoss struct {
	// at is when a connection was last found cut, in Unix nanoseconds; 0
	// for never.
	at atomic.Int64
}

// found notes that a connection was found cut, by err: not when err is
// the end of the statement's own context, which closes a connection pgx
// is reading from too (a caller gone, an operation's timeout), and says
// nothing of the others.
func (l *connLoss) found(err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return
	}
	l.at.Store(time.Now().UnixNano())
}

// TraceQueryStart implements pgx.QueryTracer.
func (l *connLoss) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer: a statement (or a
// transaction's BEGIN or COMMIT) that failed and left its connection
// closed found it cut.
func (l *connLoss) TraceQueryEnd(_ context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if d.Err != nil && c.IsClosed() {
		l.found(d.Err)
	}
}

// TracePrepareStart implements pgx.PrepareTracer.
func (l *connLoss) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

// TracePrepareEnd implements pgx.PrepareTracer: the first use of a kept
// statement on a connection prepares it there, and may find it cut.
func (l *connLoss) TracePrepareEnd(_ context.Context, c *pgx.Conn, d pgx.TracePrepareEndData) {
	if d.Err != nil && c.IsClosed() {
		l.found(d.Err)
	}
}

// shouldPing checks a connection taken from the pool when it has been
// idle for more than a second (pgx's default) or was last taken before a
// connection was found cut: it pings it, and notes a failure (the ping
// closed it). It answers whether pgx should ping it too: only when this
// ping failed, which pgx's then does at once, discarding the connection.
func (l *connLoss) shouldPing(ctx context.Context, p stdlib.ShouldPingParams) bool {
	suspect := p.IdleDuration > time.Second
	if at := l.at.Load(); !suspect && at != 0 {
		suspect = time.Now().Add(-p.IdleDuration).UnixNano() <= at
	}
	if !suspect {
		return false
	}
	if err := p.Conn.PgConn().Ping(ctx); err != nil {
		if ctx.Err() == nil {
			l.found(err)
		}
		return true
	}
	return false
}
