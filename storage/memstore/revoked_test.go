package memstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// Tombstones past their time are dropped by later writes, the oldest
// first, a bounded number at each: the map and the queue of their ends
// hold no more than the tombstones still in their time plus a batch.
func TestRevokedTombstonesAreBounded(t *testing.T) {
	ctx := context.Background()
	s := New()
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "o", CreatedAt: t0}, nil))
	u := storage.User{ID: "u", Org: "o", Username: "u", FoldedUsername: "u", Role: "Member", CreatedAt: t0}
	require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
	revoke := func(i int, at time.Time, life time.Duration) storage.Digest {
		t.Helper()
		tok := storage.Token{ID: fmt.Sprintf("t%d", i), Org: "o", UserID: "u", Digest: sha256.Sum256(fmt.Appendf(nil, "%d", i)),
			Name: "t", Type: "read_write", CreatedAt: at}
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{LiveAt: at}, nil))
		require.NoError(t, s.DeleteToken(ctx, "o", "u", tok.ID, storage.Revocation{At: at, KeepUntil: at.Add(life)}, nil))
		return tok.Digest
	}
	first := revoke(0, t0, time.Hour)
	for i := 1; i < 100; i++ {
		revoke(i, t0, time.Hour)
	}
	assert.Len(t, s.revoked, 100)
	// An hour later, each revocation drops several of those past their
	// time, until none is left.
	later := t0.Add(time.Hour)
	for i := 100; i < 130; i++ {
		revoke(i, later, time.Hour)
	}
	assert.Len(t, s.revoked, 30, "only the tombstones still in their time")
	assert.Len(t, s.revokedEnds, 30)
	assert.Len(t, s.orgs["o"].revokedEnds, 30, "the org's queue, which no bound drains here, drops them too")
	_, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: first, LiveAt: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrRevoked, "dropped, though asked about a time it lasted")
}
