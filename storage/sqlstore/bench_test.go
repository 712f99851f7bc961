package sqlstore

import (
	"testing"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// BenchmarkStore runs the operation benchmarks every store shares
// (internal/servicetest) on each engine, twice: as it commits by default,
// and with the commit's wait for the disk off (SQLite synchronous=NORMAL
// in WAL mode: no fsync per commit; PostgreSQL synchronous_commit=off), so
// that the difference is what fsync costs a write. PostgreSQL's run needs
// ORGADMIN_POSTGRES_URL (source scripts/services.sh, start_postgres):
//
//	go test -run '^$' -bench BenchmarkStore -benchmem ./storage/sqlstore
func BenchmarkStore(b *testing.B) {
	engines := []struct {
		name string
		dsn  func(testing.TB) string
	}{
		{"sqlite", testdb.SQLite},
		{"sqlite-nofsync", func(tb testing.TB) string { return testdb.SQLite(tb) + "?synchronous=normal" }},
		{"postgres", testdb.Postgres},
		{"postgres-nofsync", func(tb testing.TB) string {
			return testdb.WithParam(tb, testdb.Postgres(tb), "synchronous_commit", "off")
		}},
	}
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			servicetest.Benchmarks(b, func(tb testing.TB) storage.Store { return openTest(tb, e.dsn(tb)) })
		})
	}
}

// BenchmarkFloor is the least a request can ask of each engine: one
// lookup by primary key (GetOrg), the floor the operations of
// BenchmarkStore stand on.
func BenchmarkFloor(b *testing.B) {
	for _, e := range []struct {
		name string
		dsn  func(testing.TB) string
	}{{"sqlite", testdb.SQLite}, {"postgres", testdb.Postgres}} {
		b.Run(e.name, func(b *testing.B) {
			s := openTest(b, e.dsn(b))
			if err := s.CreateOrg(b.Context(), storage.Org{ID: "bench"}, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.GetOrg(b.Context(), "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
