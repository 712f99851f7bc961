package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/orgadmin/orgadmin/internal/baseline"
)

// The SQL stores: PostgreSQL at -postgres, each start of a server on a
// schema of its own (dropped at the end), and SQLite, each start on a file
// of its own in the work directory. Each has its floor: a bare server
// that answers every workload after one lookup by primary key on the same
// database (baseline.SQLLookup).

// openPostgres connects the harness to -postgres, to make and drop the
// schemas.
func (h *harness) openPostgres(ctx context.Context) error {
	db, err := sql.Open("pgx", h.opt.postgresURL)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return fmt.Errorf("postgres: %w", err)
	}
	h.pg = db
	return nil
}

// newSchema makes the schema name and returns -postgres with search_path
// set to it.
func (h *harness) newSchema(ctx context.Context, name string) (string, error) {
	if _, err := h.pg.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("postgres: create schema %s: %w", name, err)
	}
	h.pgSchemas = append(h.pgSchemas, name)
	u, err := url.Parse(h.opt.postgresURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// postgresStoreURI returns the function giving the -store of each
// generation: -postgres on the schema prefix_gen, made first. A schema
// that cannot be made gives a -store the server refuses, which says why.
func (h *harness) postgresStoreURI(ctx context.Context, prefix string) func(gen int) string {
	return func(gen int) string {
		u, err := h.newSchema(ctx, fmt.Sprintf("%s_%d", prefix, gen))
		if err != nil {
			return "postgres-unavailable:" + err.Error()
		}
		return u
	}
}

// sqliteStoreURI returns the function giving the -store of each
// generation: a file of the work directory.
func (h *harness) sqliteStoreURI(name string) func(gen int) string {
	return func(gen int) string {
		return "sqlite:" + filepath.Join(h.dir, fmt.Sprintf("%s-%d.db", strings.ReplaceAll(name, "@", "-"), gen))
	}
}

// sqlFloor starts the floor of a SQL store: name on a table
// floor_digests (baseline.FloorTable) holding the digest of the floors'
// token, in a schema of its own on PostgreSQL (engine "postgres") or a
// file of its own (engine "sqlite").
func (h *harness) sqlFloor(ctx context.Context, name, engine string) (*target, error) {
	dsn := "sqlite:" + filepath.Join(h.dir, "floor.db")
	if engine == "postgres" {
		var err error
		if dsn, err = h.newSchema(ctx, "loadharness_"+h.runID+"_floor"); err != nil {
			return nil, err
		}
	}
	db, _, err := openLookup(dsn, false)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	digestType, insert := "BYTEA", "INSERT INTO floor_digests (digest, username) VALUES ($1, $2)"
	if engine == "sqlite" {
		digestType, insert = "BLOB", "INSERT INTO floor_digests (digest, username) VALUES (?1, ?2)"
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(baseline.FloorTable, digestType)); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d := sha256.Sum256([]byte(h.floorToken))
	if _, err := db.ExecContext(ctx, insert, d[:], "admin"); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// SQLite runs in the floor's process: no database process of its own.
	return h.floorTarget(ctx, name, engine == "postgres", "-sql", dsn)
}

// openLookup opens dsn (postgres://… or sqlite:PATH) for the floor,
// read-only when readOnly, and returns the query of its one lookup.
func openLookup(dsn string, readOnly bool) (*sql.DB, string, error) {
	driver, source, query := "pgx", dsn, "SELECT username FROM floor_digests WHERE digest = $1"
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		driver, query = "sqlite", "SELECT username FROM floor_digests WHERE digest = ?1"
		source = "file:" + path + "?_journal_mode=WAL&_busy_timeout=10000"
		if readOnly {
			source += "&_query_only=1"
		}
	}
	db, err := sql.Open(driver, source)
	if err != nil {
		return nil, "", err
	}
	// As the store's pool: sqlstore.DefaultMaxConns.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	return db, query, nil
}

// dropSchemas drops the schemas the run made.
func (h *harness) dropSchemas(ctx context.Context, stderr io.Writer) {
	if h.pg == nil {
		return
	}
	for _, s := range h.pgSchemas {
		if _, err := h.pg.ExecContext(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			fmt.Fprintf(stderr, "loadharness: dropping schema %s: %v\n", s, err)
		}
	}
	_ = h.pg.Close()
}

// sqlVersions says which PostgreSQL and SQLite the run measured.
func (h *harness) sqlVersions(ctx context.Context) []string {
	var out []string
	if h.pg != nil {
		var v string
		if err := h.pg.QueryRowContext(ctx, "SHOW server_version").Scan(&v); err == nil {
			var sc string
			_ = h.pg.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&sc)
			out = append(out, fmt.Sprintf("PostgreSQL %s (synchronous_commit=%s)", v, sc))
		}
	}
	if slices.Contains(h.opt.stores, "sqlite") {
		db, err := sql.Open("sqlite", ":memory:")
		if err == nil {
			var v string
			if db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v) == nil {
				out = append(out, "SQLite "+v+" (modernc.org/sqlite, WAL, synchronous=FULL)")
			}
			_ = db.Close()
		}
	}
	return out
}
