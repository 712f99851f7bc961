package sqlstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// Each revocation deletes up to revokedTrimBatch tombstones past their
// time, the oldest first: those of revoked tokens never pile up.
func TestRevokedTombstonesAreTrimmed(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, testdb.SQLite(t))
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "o", CreatedAt: t0}, nil))
	u := storage.User{ID: "u", Org: "o", Username: "u", FoldedUsername: "u", Role: "Member", CreatedAt: t0}
	require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
	revoke := func(i int, at time.Time) {
		t.Helper()
		tok := storage.Token{ID: fmt.Sprintf("t%d", i), Org: "o", UserID: "u", Digest: sha256.Sum256(fmt.Appendf(nil, "%d", i)),
			Name: "t", Type: "read_write", CreatedAt: at}
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
		require.NoError(t, s.DeleteToken(ctx, "o", "u", tok.ID, storage.Revocation{At: at, KeepUntil: at.Add(time.Hour)}, nil))
	}
	count := func() int {
		var n int
		require.NoError(t, s.db.QueryRowContext(ctx, "SELECT count(*) FROM revoked_tokens").Scan(&n))
		return n
	}
	for i := range 2 * revokedTrimBatch {
		revoke(i, t0)
	}
	assert.Equal(t, 2*revokedTrimBatch, count())
	later := t0.Add(time.Hour)
	revoke(100, later)
	assert.Equal(t, revokedTrimBatch+1, count(), "one batch of those past their time gone, one tombstone more")
	revoke(101, later)
	assert.Equal(t, 2, count(), "only those still in their time")
}
