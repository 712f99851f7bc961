package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver
)

// PostgresURLEnv is the URL of a PostgreSQL server's database the tests
// may create schemas in.
const PostgresURLEnv = "ORGADMIN_POSTGRES_URL"

// PostgresURL returns the URL PostgresURLEnv holds, or skips tb.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(PostgresURLEnv)
	if u == "" {
		tb.Skip(PostgresURLEnv + " not set; scripts/test.sh starts a PostgreSQL server")
	}
	return u
}

// pgAdmin is the connection pool that creates and drops the tests'
// schemas, one per server URL.
var pgAdmin struct {
	sync.Mutex
	dbs map[string]*sql.DB
}

func adminDB(tb testing.TB, base string) *sql.DB {
	tb.Helper()
	db, err := openAdmin(base)
	if err != nil {
		tb.Fatalf("open %s: %v", base, err)
	}
	return db
}

func openAdmin(base string) (*sql.DB, error) {
	pgAdmin.Lock()
	defer pgAdmin.Unlock()
	if db, ok := pgAdmin.dbs[base]; ok {
		return db, nil
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		return nil, err
	}
	if pgAdmin.dbs == nil {
		pgAdmin.dbs = map[string]*sql.DB{}
	}
	pgAdmin.dbs[base] = db
	return db, nil
}

// Postgres returns the URL of a schema of the server PostgresURLEnv names
// that no other call returns (the URL sets search_path to it), dropped
// with everything in it when tb ends; or skips tb. A schema is much
// cheaper to make than a database, and as private to a test.
func Postgres(tb testing.TB) string {
	tb.Helper()
	base := PostgresURL(tb)
	db := adminDB(tb, base)
	schema := "orgadmin_test_" + RandomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema %s: %v", schema, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return WithParam(tb, base, "search_path", schema)
}

// EmptySQL deletes every row of every table but schema_version of the
// database of dsn (a URL Postgres returned, or a data source SQLite
// returned): on PostgreSQL in one TRUNCATE of the schema's tables, on
// SQLite in one transaction.
func EmptySQL(ctx context.Context, dsn string) error {
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		return emptySQLite(ctx, path)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	q := u.Query()
	schema := q.Get("search_path")
	q.Del("search_path")
	u.RawQuery = q.Encode()
	db, err := openAdmin(u.String())
	if err != nil {
		return err
	}
	tables, err := column(ctx, db, "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name <> 'schema_version'", schema)
	if err != nil || len(tables) == 0 {
		return err
	}
	_, err = db.ExecContext(ctx, `TRUNCATE "`+schema+`"."`+strings.Join(tables, `", "`+schema+`"."`)+`"`) // #nosec G202 -- table names the database listed
	return err
}

// emptySQLite deletes every row of the SQLite file path, on a connection
// of its own, which does not enforce foreign keys (SQLite's default), so
// the tables can be emptied in any order.
func emptySQLite(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := column(ctx, db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'schema_version'")
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, t := range tables {
		_, err := tx.ExecContext(ctx, `DELETE FROM "`+t+`"`) // #nosec G202 -- a table the database listed
		if err != nil {
			return err
		}
	}
	return tx.Commit()
}

// WithParam returns the URL u with the query parameter key set to value.
func WithParam(tb testing.TB, u, key, value string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("parse %s: %v", u, err)
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}

// SQLite returns the data source of a SQLite file in a directory of tb's
// own, removed when tb ends: sqlite:PATH.
func SQLite(tb testing.TB) string {
	tb.Helper()
	return "sqlite:" + filepath.Join(tb.TempDir(), "orgadmin.db")
}

// SQLContents returns every row of every table of the database dsn
// names (postgres://… with its search_path, or sqlite:PATH), each as the
// table's name followed by its values, bytes as they are; and for SQLite,
// the bytes of the database file and of its write-ahead log, whole.
func SQLContents(ctx context.Context, dsn string) ([]string, error) {
	driver, source, list := "pgx", dsn, "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
	var files []string
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		driver, source = "sqlite", "file:"+path+"?_query_only=1"
		list = "SELECT name FROM sqlite_master WHERE type = 'table'"
		files = []string{path, path + "-wal"}
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tables, err := column(ctx, db, list)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var out []string
	for _, t := range tables {
		rows, err := tableRows(ctx, db, t)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t, err)
		}
		out = append(out, rows...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f) // #nosec G304 -- the test's own database file
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		out = append(out, string(b))
	}
	return out, nil
}

// column returns the first column of what query reads, as text.
func column(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// tableRows returns each row of table as one text.
func tableRows(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`) // #nosec G202 -- a table name the database listed

	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		var b strings.Builder
		b.WriteString(table)
		for i, v := range vals {
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(&b, " %s=%v", cols[i], v)
		}
		out = append(out, b.String())
	}
	return out, rows.Err()
}
