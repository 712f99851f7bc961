package sqlstore

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

// The suites run on a SQLite file always, and on PostgreSQL when
// scripts/test.sh has started a server (ORGADMIN_POSTGRES_URL); each
// store gets a file, or a schema, of its own.

func TestConformanceSQLite(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(tb testing.TB) storage.Store { return openTest(tb, testdb.SQLite(tb)) })
}

func TestConformancePostgres(t *testing.T) {
	testdb.PostgresURL(t)
	t.Parallel()
	storagetest.Run(t, func(tb testing.TB) storage.Store { return openTest(tb, testdb.Postgres(tb)) })
}

func TestServiceRacesSQLite(t *testing.T) {
	t.Parallel()
	servicetest.RunRaces(t, func(tb testing.TB) storage.Store { return openTest(tb, testdb.SQLite(tb)) })
}

func TestServiceRacesPostgres(t *testing.T) {
	testdb.PostgresURL(t)
	t.Parallel()
	servicetest.RunRaces(t, func(tb testing.TB) storage.Store { return openTest(tb, testdb.Postgres(tb)) })
}

// Two Stores on one database, as two processes would hold them.
func TestSharedSQLite(t *testing.T) {
	servicetest.RunShared(t, func(tb testing.TB) (storage.Store, storage.Store) {
		dsn := testdb.SQLite(tb)
		return openTest(tb, dsn), openTest(tb, dsn)
	})
}

func TestSharedPostgres(t *testing.T) {
	testdb.PostgresURL(t)
	servicetest.RunShared(t, func(tb testing.TB) (storage.Store, storage.Store) {
		dsn := testdb.Postgres(tb)
		return openTest(tb, dsn), openTest(tb, dsn)
	})
}

// openTest opens a Store on dsn with the tests' generous timeout, closed
// when tb ends.
func openTest(tb testing.TB, dsn string) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), dsn, Options{Timeout: testdb.Timeout, MaxConns: 4})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}
