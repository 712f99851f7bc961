package sqlstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// Open says what is wrong with a data source it cannot use, and never
// shows a password.
func TestOpenRefusesBadDataSources(t *testing.T) {
	dir := t.TempDir()
	for dsn, want := range map[string]string{
		"mysql://u:hunter2@h/db":               `unsupported data source "mysql://u:xxxxx@h/db"`,
		"SQLITE:" + filepath.Join(dir, "u.db"): `unsupported data source "SQLITE:` + filepath.Join(dir, "u.db") + `"`,
		"sqlite://d.db":                        "sqlite://d.db: a URL with a host, not a path (want sqlite:PATH, as sqlite:d.db)",
		"sqlite:":                              "no file path",
		"sqlite:" + filepath.Join(dir, "a.db") + "?synchronous=off": `synchronous="off"`,
		"sqlite:" + filepath.Join(dir, "b.db") + "?cache=shared":    `unknown parameter "cache"`,
		"sqlite:" + filepath.Join(dir, "c.db") + "?%zz":             "invalid URL escape",
	} {
		_, err := Open(t.Context(), dsn, Options{})
		require.ErrorContains(t, err, want, dsn)
		assert.NotContains(t, err.Error(), "hunter2")
	}
	assert.Equal(t, "postgres://u:xxxxx@h:5432/db", redact("postgres://u:hunter2@h:5432/db"))
}

// A file name may hold the characters of a URL's query and fragment.
func TestSQLiteFileNameIsTakenWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a#b c%d.db")
	s := openTest(t, "sqlite:"+path)
	require.NoError(t, s.CreateOrg(t.Context(), storage.Org{ID: "o"}, nil))
	s.Close()
	assert.FileExists(t, path)
	_, err := openTest(t, "sqlite:"+path).GetOrg(t.Context(), "o")
	require.NoError(t, err)
	// An absolute path after "//", as a file URL with no host writes it.
	_, err = openTest(t, "sqlite://"+path).GetOrg(t.Context(), "o")
	require.NoError(t, err)
}

// Two Stores on one database, as two processes, creating tokens for one
// user at once: exactly the limit is created, and the rest are
// ErrLimitExceeded. On SQLite this is what BEGIN IMMEDIATE is for: with
// deferred transactions, which read (count) before they take the write
// lock, most of these fail at once with SQLITE_BUSY, whatever the busy
// timeout.
func TestSharedTokenLimit(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		stores := [2]*Store{openTest(t, dsn), openTest(t, dsn)}
		require.NoError(t, stores[0].CreateOrg(ctx, storage.Org{ID: "o"}, nil))
		require.NoError(t, stores[0].CreateUser(ctx, storage.User{ID: "u", Org: "o", Username: "u", FoldedUsername: "u", Role: "Member"}, storage.UserLimit{}, nil))
		const limit, tries = 5, 24
		lim := storage.TokenLimit{Max: limit, LiveAt: time.UnixMilli(1000)}
		var (
			wg          sync.WaitGroup
			mu          sync.Mutex
			created, at int
		)
		for i := range tries {
			wg.Go(func() {
				id := fmt.Sprint("t", i)
				err := stores[i%2].CreateToken(ctx, storage.Token{ID: id, Org: "o", UserID: "u", Digest: sha256.Sum256([]byte(id)), Type: "read_write", CreatedAt: time.UnixMilli(int64(i))}, lim, nil)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created++
				case errors.Is(err, storage.ErrLimitExceeded):
					at++
				default:
					t.Errorf("token %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, limit, created)
		assert.Equal(t, tries-limit, at)
		toks, err := stores[1].ListTokens(ctx, "o", "u", lim.LiveAt)
		require.NoError(t, err)
		assert.Len(t, toks, limit)
	})
}
