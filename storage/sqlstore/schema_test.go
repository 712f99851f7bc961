package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// eachEngine runs test on a fresh database of each engine: a SQLite file,
// and a PostgreSQL schema when the server is configured.
func eachEngine(t *testing.T, test func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, testdb.SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { test(t, testdb.Postgres(t)) })
}

// An empty database is brought to the current version at Open, one row of
// schema_version per version.
func TestMigrateFromEmpty(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		assertVersion(t, s, len(migrations))
		assert.True(t, hasIndex(t, s, "users_by_kind"))
	})
}

// Migrating a database that is current does nothing, at Open or by Migrate.
func TestMigrateTwice(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		require.NoError(t, s.CreateOrg(t.Context(), storage.Org{ID: "kept", CreatedAt: time.UnixMilli(1)}, nil))
		require.NoError(t, s.Migrate(t.Context()))
		again := openTest(t, dsn)
		assertVersion(t, again, len(migrations))
		_, err := again.GetOrg(t.Context(), "kept")
		require.NoError(t, err)
	})
}

// Processes that start together on one empty database migrate one after
// another: every Open succeeds, and each version is applied once.
func TestMigrateConcurrentOpens(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		const n = 4
		var wg sync.WaitGroup
		stores := make([]*Store, n)
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				stores[i], errs[i] = Open(t.Context(), dsn, Options{Timeout: testdb.Timeout, MaxConns: 2})
			})
		}
		wg.Wait()
		for i := range n {
			require.NoError(t, errs[i], "Open %d", i)
			t.Cleanup(stores[i].Close)
		}
		assertVersion(t, stores[0], len(migrations))
	})
}

// An Open that meets a new SQLite file whose write lock another
// connection holds, before the file is in WAL mode (as when processes
// open a new file together), waits for it, where SQLite refuses at once.
func TestOpenWaitsForTheWriterOfANewFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "new.db")
	other, err := sql.Open("sqlite", "file:"+path+"?_journal_mode=DELETE")
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close() })
	c, err := other.Conn(ctx)
	require.NoError(t, err)
	_, err = c.ExecContext(ctx, "CREATE TABLE other (a)")
	require.NoError(t, err)
	_, err = c.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, err := c.ExecContext(context.Background(), "COMMIT")
		done <- errors.Join(err, c.Close())
	}()

	s, err := Open(ctx, "sqlite:"+path, Options{Timeout: testdb.Timeout})
	require.NoError(t, <-done)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assertVersion(t, s, len(migrations))
}

// openAt opens dsn with its schema brought to version v, as a build of
// that version left it; the caller closes it.
func openAt(t *testing.T, dsn string, v int) *Store {
	t.Helper()
	s, err := open(dsn, Options{Timeout: testdb.Timeout})
	require.NoError(t, err)
	require.NoError(t, s.migrate(t.Context(), v))
	return s
}

// A database created at version 1, with records in it, is migrated to the
// current version at Open, and keeps its records.
func TestMigrateFromVersion1(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		old := openAt(t, dsn, 1)
		assertVersion(t, old, 1)
		assert.False(t, hasIndex(t, old, "users_by_kind"))
		require.NoError(t, old.CreateOrg(ctx, storage.Org{ID: "o", CreatedAt: time.UnixMilli(1)}, nil))
		for _, name := range []string{"bot", "human"} {
			u := storage.User{ID: "id-" + name, Org: "o", Username: name, FoldedUsername: name, Role: "Member", IsServiceAccount: name == "bot"}
			require.NoError(t, old.CreateUser(ctx, u, storage.UserLimit{}, nil))
		}
		old.Close()

		s := openTest(t, dsn)
		assertVersion(t, s, len(migrations))
		assert.True(t, hasIndex(t, s, "users_by_kind"))
		sa := true
		p, err := s.ListUsers(ctx, "o", storage.UserQuery{ServiceAccount: &sa, Limit: 10})
		require.NoError(t, err)
		require.Len(t, p.Users, 1)
		assert.Equal(t, "bot", p.Users[0].FoldedUsername)
		assert.Equal(t, 1, p.Total)
	})
}

// A database at version 4 with audit events is migrated to version 5:
// the events kept are numbered in their former order (time, then id),
// per org, and the next event of each org follows its last.
func TestMigrateEventsToSeq(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		old := openAt(t, dsn, 4)
		insert := old.d.rewrite("INSERT INTO audit_events (org, at, id, actor_id, actor_username, actor_token_id, action," +
			" target_kind, target_id, target_username, request_id) VALUES ($1, $2, $3, '', 'system', '', 'dive.register', 'dive', 'd', '', '')")
		for _, org := range []string{"a", "b"} {
			_, err := old.wdb.ExecContext(ctx, old.d.rewrite("INSERT INTO orgs (id, created_at) VALUES ($1, 1)"), org)
			require.NoError(t, err)
		}
		for _, ev := range []struct {
			org, id string
			at      int64
		}{{"a", "a-2", 2000}, {"a", "a-1b", 1000}, {"a", "a-1a", 1000}, {"b", "b-1", 500}} {
			_, err := old.wdb.ExecContext(ctx, insert, ev.org, ev.at, ev.id)
			require.NoError(t, err)
		}
		old.Close()

		s := openTest(t, dsn)
		assertVersion(t, s, len(migrations))
		assert.True(t, hasIndex(t, s, "audit_events_by_at"))
		e := storage.Event{ID: "a-new", Org: "a", At: time.UnixMilli(1), ActorUsername: "system", Action: "dive.register"}
		require.NoError(t, s.PutDive(ctx, storage.Dive{Org: "a", ID: "d", Title: "d", Version: 1}, &storage.Audit{Event: e}))
		seqs := func(org string) map[string]int64 {
			page, err := s.ListEvents(ctx, org, storage.EventQuery{Limit: 10})
			require.NoError(t, err)
			out := map[string]int64{}
			for _, e := range page.Events {
				out[e.ID] = e.Seq
			}
			return out
		}
		assert.Equal(t, map[string]int64{"a-1a": 1, "a-1b": 2, "a-2": 3, "a-new": 4}, seqs("a"))
		assert.Equal(t, map[string]int64{"b-1": 1}, seqs("b"))
	})
}

// A database migrated by a newer build is not touched.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		s := openTest(t, dsn)
		_, err := s.wdb.ExecContext(t.Context(), s.d.rewrite("INSERT INTO schema_version (version) VALUES ($1)"), len(migrations)+1)
		require.NoError(t, err)
		_, err = Open(t.Context(), dsn, Options{Timeout: testdb.Timeout})
		require.ErrorContains(t, err, "newer than this build knows")
	})
}

func assertVersion(t *testing.T, s *Store, want int) {
	t.Helper()
	v, err := s.Version(t.Context())
	require.NoError(t, err)
	assert.Equal(t, want, v, "schema version")
	var rows int
	require.NoError(t, s.db.QueryRowContext(t.Context(), "SELECT count(*) FROM schema_version").Scan(&rows))
	assert.Equal(t, want, rows, "rows of schema_version")
}

// hasIndex reports whether the Store's database has the index name.
func hasIndex(t *testing.T, s *Store, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1"
	if s.d == sqliteDialect {
		q = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), testdb.Timeout)
	defer cancel()
	var n int
	require.NoError(t, s.db.QueryRowContext(ctx, q, name).Scan(&n))
	return n == 1
}

// A database at version 6 holding users keyed under the fold earlier
// versions gave usernames ("µ" for "Μ", "ς" for "Σ", lower-case
// Cherokee) is migrated to version 7: those users are re-keyed under
// their simple case folding, found and ordered by it, with their tokens
// and Duckling reports; other users and orgs are left as they were.
func TestMigrateRefold(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		old := openAt(t, dsn, 6)
		for _, org := range []string{"o", "p"} {
			require.NoError(t, old.CreateOrg(ctx, storage.Org{ID: org, CreatedAt: time.UnixMilli(1)}, nil))
		}
		users := []struct{ org, id, name, key string }{
			{"o", "u-maria", "Μαρία", "\u00B5\u03B1\u03C1\u03AF\u03B1"},
			{"o", "u-sofos", "Σοφός", "\u03C2\u03BF\u03C6\u03CC\u03C2"},
			{"o", "u-ali", "Ꭰli", "\uAB70li"},
			{"o", "u-angel", "Ángel", "ángel"},
			{"o", "u-zoe", "zoe", "zoe"},
			{"p", "u-mu", "Μ", "\u00B5"},
		}
		for i, u := range users {
			require.NoError(t, old.CreateUser(ctx, storage.User{ID: u.id, Org: u.org, Username: u.name,
				FoldedUsername: u.key, Role: "Member", IsServiceAccount: i%2 == 0}, storage.UserLimit{}, nil))
		}
		digest := storage.Digest{1}
		require.NoError(t, old.CreateToken(ctx, storage.Token{ID: "t-maria", Org: "o", UserID: "u-maria", Digest: digest,
			Name: "t", Type: "read_write", CreatedAt: time.UnixMilli(2)}, storage.TokenLimit{}, nil))
		require.NoError(t, old.SetDuckling(ctx, storage.Duckling{Org: "o", UserID: "u-maria", ID: "rw", Active: true, At: time.UnixMilli(3)}))
		require.NoError(t, old.SetDuckling(ctx, storage.Duckling{Org: "o", UserID: "u-zoe", ID: "rw", Active: true, At: time.UnixMilli(3)}))
		old.Close()

		s := openTest(t, dsn)
		assertVersion(t, s, len(migrations))
		keys := func(q storage.UserQuery) []string {
			q.Limit = cmp.Or(q.Limit, 10)
			p, err := s.ListUsers(ctx, "o", q)
			require.NoError(t, err)
			var ks []string
			for _, u := range p.Users {
				ks = append(ks, u.FoldedUsername)
			}
			return ks
		}
		maria, sofos, ali := "\u03BC\u03B1\u03C1\u03AF\u03B1", "\u03C3\u03BF\u03C6\u03CC\u03C3", "\u13A0li"
		assert.Equal(t, []string{"zoe", "ángel", maria, sofos, ali}, keys(storage.UserQuery{}))
		assert.Equal(t, []string{maria, sofos}, keys(storage.UserQuery{After: "ángel", Limit: 2}))
		sa := true
		assert.Equal(t, []string{"zoe", maria, ali}, keys(storage.UserQuery{ServiceAccount: &sa}))

		u, err := s.GetUser(ctx, "o", maria)
		require.NoError(t, err)
		assert.Equal(t, "u-maria", u.ID)
		assert.Equal(t, "Μαρία", u.Username)
		_, err = s.GetUser(ctx, "o", users[0].key)
		require.ErrorIs(t, err, storage.ErrNotFound)
		mu, err := s.GetUser(ctx, "p", "\u03BC")
		require.NoError(t, err)
		assert.Equal(t, "u-mu", mu.ID)

		a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: digest, Username: maria, Tokens: true, LiveAt: time.UnixMilli(4)})
		require.NoError(t, err)
		assert.Equal(t, maria, a.Credential.User.FoldedUsername)
		require.True(t, a.TargetFound)
		require.Len(t, a.Tokens, 1)
		assert.Equal(t, "t-maria", a.Tokens[0].ID)

		act, err := s.ListActivity(ctx, "o")
		require.NoError(t, err)
		require.Len(t, act, 2)
		assert.Equal(t, []string{"zoe", maria}, []string{act[0].User.FoldedUsername, act[1].User.FoldedUsername})

		err = s.CreateUser(ctx, storage.User{ID: "u-maria2", Org: "o", Username: "μαρία", FoldedUsername: maria, Role: "Member"}, storage.UserLimit{}, nil)
		require.ErrorIs(t, err, storage.ErrAlreadyExists)
	})
}
