package servicetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/servicetest"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

var t0 = time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)

// Writes that succeed are counted, writes that fail and reads are not.
func TestCounterCountsAcceptedWrites(t *testing.T) {
	ctx := context.Background()
	c := servicetest.NewCounter(memstore.New())
	require.NoError(t, c.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: t0}, nil))
	require.ErrorIs(t, c.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: t0}, nil), storage.ErrAlreadyExists)
	require.ErrorIs(t, c.CreateUser(ctx, storage.User{ID: "u1", Org: "nowhere", Username: "a", FoldedUsername: "a"}, storage.UserLimit{}, nil), storage.ErrNotFound)
	_, err := c.GetOrg(ctx, "acme")
	require.NoError(t, err)
	assert.Equal(t, int64(1), c.Writes())
	require.NoError(t, c.CreateUser(ctx, storage.User{ID: "u1", Org: "acme", Username: "a", FoldedUsername: "a", CreatedAt: t0}, storage.UserLimit{}, nil))
	require.NoError(t, c.AddFeedback(ctx, storage.Feedback{ID: "f1", PagePath: "/", Text: "x", CreatedAt: t0}))
	assert.Equal(t, int64(3), c.Writes())
}

// Snapshots are equal exactly when what the store holds for the orgs is:
// users, tokens, expired ones included, Duckling reports and Dives.
func TestSnapshotSeesEveryChange(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: t0}, nil))
	require.NoError(t, s.CreateUser(ctx, storage.User{ID: "u1", Org: "acme", Username: "a", FoldedUsername: "a", CreatedAt: t0}, storage.UserLimit{}, nil))
	snap := func() servicetest.State {
		st, err := servicetest.Snapshot(ctx, s, []string{"acme", "missing"}, []string{"d1"})
		require.NoError(t, err)
		return st
	}
	before := snap()
	assert.Equal(t, before, snap(), "nothing changed")
	assert.NotContains(t, before.Orgs, "missing")

	for _, change := range []func() error{
		func() error {
			return s.CreateToken(ctx, storage.Token{ID: "t1", Org: "acme", UserID: "u1", Type: "read_write",
				CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}, storage.TokenLimit{}, nil)
		},
		func() error {
			return s.SetInstances(ctx, "acme", "u1", storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "giga"}}, nil)
		},
		func() error {
			return s.SetDuckling(ctx, storage.Duckling{Org: "acme", UserID: "u1", ID: "rw", Active: true, At: t0})
		},
		func() error {
			return s.PutDive(ctx, storage.Dive{ID: "d1", Org: "acme", Title: "Sales", Version: 1}, nil)
		},
	} {
		require.NoError(t, change())
		after := snap()
		assert.NotEqual(t, before, after)
		before = after
	}
	assert.Len(t, before.Tokens["u1"], 1, "an expired token is still listed")
}
