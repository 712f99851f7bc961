package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
)

// The README's tour, restarts and reseeding on a SQLite file, always, and
// on PostgreSQL when scripts/test.sh has started a server.

func TestReadmeTourSQLite(t *testing.T)   { testReadmeTour(t, "-store", testdb.SQLite(t)) }
func TestRestartsOnSQLite(t *testing.T)   { testRestarts(t, testdb.SQLite(t)) }
func TestReseedOnSQLite(t *testing.T)     { testReseed(t, testdb.SQLite(t)) }
func TestReadmeTourPostgres(t *testing.T) { testReadmeTour(t, "-store", testdb.Postgres(t)) }
func TestRestartsOnPostgres(t *testing.T) { testRestarts(t, testdb.Postgres(t)) }
func TestReseedOnPostgres(t *testing.T)   { testReseed(t, testdb.Postgres(t)) }

// A server on a SQLite file keeps what it was told across a restart: the
// user created over HTTP, that user's token, and the Admin's token, with
// no second Admin made.
func TestSQLiteFileSurvivesRestart(t *testing.T) {
	const adminToken = "oat_restart-test-admin-token-0123456789abcdefghijk"
	store := "sqlite:" + filepath.Join(t.TempDir(), "orgadmin.db")
	env := map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken}

	var reporterToken string
	t.Run("first start", func(t *testing.T) {
		base, _ := startServer(t, env, "-store", store)
		st, body := call(t, "POST", base+"/v1/users", adminToken, `{"username": "Reporter", "description": "nightly"}`)
		require.Equal(t, 200, st, body)
		st, body = call(t, "POST", base+"/v1/users/reporter/tokens", adminToken, `{"name": "ci"}`)
		require.Equal(t, 200, st, body)
		reporterToken = body["token"].(string)
	}) // the server stops as the subtest ends

	base, _ := startServer(t, env, "-store", store)
	st, body := call(t, "GET", base+"/v1/users", adminToken, "")
	require.Equal(t, 200, st, body)
	assert.Equal(t, 2.0, body["total_count"], "the Admin and Reporter, no second Admin")
	names := []string{}
	for _, u := range body["users"].([]any) {
		names = append(names, u.(map[string]any)["username"].(string))
	}
	assert.Equal(t, []string{"admin", "Reporter"}, names)
	st, body = call(t, "GET", base+"/v1/users/admin/tokens", adminToken, "")
	require.Equal(t, 200, st, body)
	assert.Len(t, body["tokens"], 1, "the Admin's one bootstrap token")
	st, body = call(t, "GET", base+"/v1/users/reporter/tokens", reporterToken, "")
	require.Equal(t, 200, st, body)
	assert.Len(t, body["tokens"], 1)
}

func TestBadSQLiteStoreIsRefused(t *testing.T) {
	err := run(context.Background(), []string{"-store", "sqlite:"}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "no file path")
	err = run(context.Background(), []string{"-store", "sqlite:" + filepath.Join(t.TempDir(), "x.db") + "?synchronous=off"}, func(string) string { return "" }, io.Discard, nil)
	require.ErrorContains(t, err, "synchronous")
}

// A start with $ORGADMIN_ADMIN_TOKEN makes it the Admin's bootstrap token
// even when it was revoked since (README): a value revoked because it
// leaked works again. The start says so, in a warning, rather than
// bringing it back silently; a start that finds it live says nothing.
func TestRevokedEnvTokenBroughtBackIsWarned(t *testing.T) {
	const adminToken = "oat_revoked-env-token-0123456789abcdefghijklmnopq"
	store := "sqlite:" + filepath.Join(t.TempDir(), "orgadmin.db")
	env := map[string]string{"ORGADMIN_ADMIN_TOKEN": adminToken}
	const warning = "ORGADMIN_ADMIN_TOKEN had been revoked"

	t.Run("first start: revoke it", func(t *testing.T) {
		base, stderr := startServer(t, env, "-store", store)
		st, body := call(t, "GET", base+"/v1/users/admin/tokens", adminToken, "")
		require.Equal(t, 200, st, body)
		id := body["tokens"].([]any)[0].(map[string]any)["id"].(string)
		st, body = call(t, "DELETE", base+"/v1/users/admin/tokens/"+id, adminToken, "")
		require.Equal(t, 200, st, body)
		st, _ = call(t, "GET", base+"/v1/users", adminToken, "")
		require.Equal(t, 401, st)
		assert.NotContains(t, stderr.String(), warning)
	})

	base, stderr := startServer(t, env, "-store", store)
	st, _ := call(t, "GET", base+"/v1/users", adminToken, "")
	assert.Equal(t, 200, st, "the variable is the operator's word")
	assert.Contains(t, stderr.String(), warning)
	assert.NotContains(t, stderr.String(), adminToken)

	t.Run("a start that finds it live", func(t *testing.T) {
		_, stderr := startServer(t, env, "-store", store)
		assert.NotContains(t, stderr.String(), warning)
	})
}

// A restart without -seed where "admin" can no longer be bootstrapped (an
// Admin deleted it and made a service account ADMIN) starts, with a
// warning and no bootstrap token: a restart must not fail.
func TestRestartWhereAdminIsNoLongerAnAdmin(t *testing.T) {
	store := "sqlite:" + filepath.Join(t.TempDir(), "orgadmin.db")
	const alice = "alice-admin-token-0000000001"
	seed := filepath.Join(t.TempDir(), "seed.json")
	require.NoError(t, os.WriteFile(seed, []byte(`{"organizations": [{"id": "default", "users": [
		{"username": "alice", "role": "Admin", "tokens": [{"name": "t", "value": "`+alice+`"}]}]}]}`), 0o600))
	t.Run("bootstrap, then admin replaced", func(t *testing.T) {
		base, _ := startServer(t, nil, "-store", store)
		// The seed adds the second Admin to the bootstrapped org.
		base2, _ := startServer(t, nil, "-store", store, "-seed", seed)
		for _, b := range []string{base, base2} {
			st, _ := call(t, "GET", b+"/v1/users", alice, "")
			require.Equal(t, 200, st)
		}
		st, body := call(t, "DELETE", base+"/v1/users/admin", alice, "")
		require.Equal(t, 200, st, body)
		st, body = call(t, "POST", base+"/v1/users", alice, `{"username": "ADMIN"}`)
		require.Equal(t, 200, st, body)
	})
	for _, env := range []map[string]string{nil, {"ORGADMIN_ADMIN_TOKEN": "env-supplied-admin-token"}} {
		base, stderr := startServer(t, env, "-store", store)
		assert.Contains(t, stderr.String(), `no bootstrap token: admin \"admin\" of org \"default\" cannot be bootstrapped (User ADMIN exists and is not an Admin)`)
		assert.NotContains(t, stderr.String(), "shown once")
		st, body := call(t, "GET", base+"/v1/users", alice, "")
		require.Equal(t, 200, st, body)
		assert.Equal(t, 2.0, body["total_count"], "alice and the service account ADMIN, no second admin")
		st, _ = call(t, "GET", base+"/v1/users", "env-supplied-admin-token", "")
		assert.Equal(t, 401, st)
	}
}
