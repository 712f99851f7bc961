package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// When PostgreSQL ends every connection of the pool at once (a restart, a
// failover, pg_terminate_backend), the first connection found cut makes
// the others be pinged when next taken and replaced, rather than each
// failing an operation of its own; a read that failed on the first runs
// again, and succeeds. A write is not run again: the first, when it meets
// the cut, fails alone.
func TestPostgresCutConnectionsFailNoRead(t *testing.T) {
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

	// The listing's statement prepared on the pool before the cuts, as
	// the first two rounds' statement is by their first round.
	_, err = s.ListTokens(t.Context(), "acme", "nobody", time.Now())
	require.NoError(t, err)
	for round := range 5 {
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

		// The third round reads with a statement not yet used, which each
		// connection prepares the first time it runs it: the cut is then
		// found by a failed preparation. The fourth reads rows (a
		// listing), the last writes.
		op, mayFail := func(int) error { _, err := s.GetOrg(context.Background(), "acme"); return err }, 0
		switch round {
		case 2:
			op = func(int) error { _, err := s.GetUser(context.Background(), "acme", "nobody"); return err }
		case 3:
			op = func(int) error {
				_, err := s.ListTokens(context.Background(), "acme", "nobody", time.Now())
				return err
			}
		case 4:
			op = func(i int) error {
				return s.CreateOrg(context.Background(), storage.Org{ID: fmt.Sprint("org", i), CreatedAt: time.Now()}, nil)
			}
			mayFail = 1
		}
		failed := 0
		for i := range 2 * conns {
			if err := op(i); err != nil && !errors.Is(err, storage.ErrNotFound) {
				failed++
			}
		}
		require.LessOrEqual(t, failed, mayFail, "round %d: operations failed after the connections were cut", round)
	}
}

// A statement whose own context ends while it runs (a caller gone, an
// operation's timeout) closes its connection, as a cut would, but says
// nothing of the others: no connection of the pool is pinged for it.
func TestPostgresCanceledStatementIsNoCut(t *testing.T) {
	const conns = 8
	s, err := Open(t.Context(), testdb.Postgres(t), Options{MaxConns: conns})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	takeAll := func() {
		var held []*sql.Conn
		for range conns {
			c, err := s.db.Conn(t.Context())
			require.NoError(t, err)
			require.NoError(t, c.PingContext(t.Context()))
			held = append(held, c)
		}
		for _, c := range held {
			require.NoError(t, c.Close())
		}
	}
	takeAll()
	for _, end := range []func() (context.Context, context.CancelFunc){
		func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 50*time.Millisecond)
		},
		func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		},
	} {
		ctx, cancel := end()
		_, err = s.db.ExecContext(ctx, "SELECT pg_sleep(5)")
		cancel()
		require.Error(t, err)
		require.Zero(t, s.loss.at.Load(), "a statement ended by its own context taken for a cut")
	}
}

// appName is the application_name the connections of db give the server.
func appName(ctx context.Context, db *sql.DB) (string, error) {
	var name string
	err := db.QueryRowContext(ctx, "SELECT current_setting('application_name')").Scan(&name)
	return name, err
}
