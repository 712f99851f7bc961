package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// TestSeedLoads applies the generated seed to a real Service: the Admin's
// first token authenticates and lists every token, and every service
// account exists.
func TestSeedLoads(t *testing.T) {
	w, err := newWorld("loadtest", 25, 3)
	require.NoError(t, err)
	seed, err := orgadmin.DecodeSeed(bytes.NewReader(w.Seed))
	require.NoError(t, err)
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	require.NoError(t, svc.ApplySeed(ctx, seed))
	admin, err := svc.Authenticate(ctx, w.AdminToken)
	require.NoError(t, err)
	toks, err := svc.ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	assert.Len(t, toks, 3)
	page, err := svc.ListUsers(ctx, admin, orgadmin.ListUsersOptions{Limit: orgadmin.Ptr(1000)})
	require.NoError(t, err)
	assert.Equal(t, 26, page.TotalCount)
	assert.Len(t, w.Users, 25)
	assert.Equal(t, "sa00001", w.Users[0])
}

func TestWithDatabase(t *testing.T) {
	assert.Equal(t, "mongodb://127.0.0.1:27017/x", withDatabase("mongodb://127.0.0.1:27017/", "x"))
	assert.Equal(t, "mongodb://127.0.0.1:27017/x", withDatabase("mongodb://127.0.0.1:27017", "x"))
	assert.Equal(t, "mongodb://a:1,b:2/x?replicaSet=rs", withDatabase("mongodb://a:1,b:2/old?replicaSet=rs", "x"))
	assert.Equal(t, "mongodb://u:p@a:1/x?w=1", withDatabase("mongodb://u:p@a:1/?w=1", "x"))
}

func TestParseFlagsRefusesNonsense(t *testing.T) {
	for _, args := range [][]string{
		{"-stores", "postgres"},
		{"-workloads", "list-tokens,delete-everything"},
		{"-repeats", "0"},
		{"-duration", "500ms"},
		{"-threads", "4", "-connections", "2"},
		{"-users", "0"},
		{"extra"},
	} {
		_, err := parseFlags(args, &bytes.Buffer{})
		assert.Error(t, err, args)
	}
	o, err := parseFlags([]string{"-stores", "memory, memory,redis", "-workloads", "list-users"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, []string{"memory", "redis"}, o.stores)
	assert.Equal(t, []string{listUsers}, o.workloads)
}

func TestModuleVersion(t *testing.T) {
	assert.Regexp(t, `^v1\.`, moduleVersion("../../scripts/ferretdb/go.mod", "github.com/FerretDB/FerretDB"))
	assert.Equal(t, "unknown", moduleVersion("../../scripts/ferretdb/go.mod", "example.com/none"))
	assert.Equal(t, "unknown", moduleVersion("no-such-file", "x"))
}
