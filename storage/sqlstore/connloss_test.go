package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// When PostgreSQL ends every connection of the pool at once (a restart, a
// failover, pg_terminate_backend), at most one operation fails, on the
// first connection found cut; the others are pinged when next taken and
// replaced, rather than each failing an operation of its own.
func TestPostgresCutConnectionsFailOneOperation(t *testing.T) {
	const app, conns = "orgadmin_connloss_test", 8
	dsn := testdb.WithParam(t, testdb.Postgres(t), "application_name", app+testdb.RandomHex(4))
	s, err := Open(t.Context(), dsn, Options{MaxConns: conns})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	name, err := appName(t.Context(), s.db)
	require.NoError(t, err)

	admin, err := sql.Open("pgx", testdb.PostgresURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	backends := func() int {
		var n int
		require.NoError(t, admin.QueryRowContext(t.Context(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&n))
		return n
	}

	for round := range 3 {
		// Every connection of the pool open, then idle in it. pgx pings
		// a connection the first time it is taken back: after the first
		// round, each is taken twice, so that the cut is found by a
		// statement; in the first, by pings, and the next round's takes
		// find the connections the first left in the pool cut.
		takes := 2
		if round == 0 {
			takes = 1
		}
		for range takes {
			var held []*sql.Conn
			for range conns {
				c, err := s.db.Conn(t.Context())
				require.NoError(t, err)
				require.NoError(t, c.PingContext(t.Context()), "round %d", round)
				held = append(held, c)
			}
			for _, c := range held {
				require.NoError(t, c.Close())
			}
		}
		require.Equal(t, conns, backends(), "round %d: open connections", round)

		_, err = admin.ExecContext(t.Context(),
			"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", name)
		require.NoError(t, err)
		require.Eventually(t, func() bool { return backends() == 0 }, 10*time.Second, 10*time.Millisecond)

		// The last round reads with a statement not yet used, which each
		// connection prepares the first time it runs it: the cut is then
		// found by a failed preparation.
		read := func() error { _, err := s.GetOrg(context.Background(), "acme"); return err }
		if round == 2 {
			read = func() error { _, err := s.GetUser(context.Background(), "acme", "nobody"); return err }
		}
		failed := 0
		for range 2 * conns {
			if err := read(); err != nil && !errors.Is(err, storage.ErrNotFound) {
				failed++
			}
		}
		require.LessOrEqual(t, failed, 1, "round %d: operations failed after the connections were cut", round)
	}
}

// appName is the application_name the connections of db give the server.
func appName(ctx context.Context, db *sql.DB) (string, error) {
	var name string
	err := db.QueryRowContext(ctx, "SELECT current_setting('application_name')").Scan(&name)
	return name, err
}
