package mongostore

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// Concurrent embed session creations for one user pass the limit by at
// most the number running at once less one, which one Store bounds by
// Options.MaxInFlight; every other creation is refused with
// ErrLimitExceeded, and those that pass are stored whole.
func TestCreateEmbedSessionLimitPassedByAtMostTheCallsAtOnce(t *testing.T) {
	testURI(t)
	t.Parallel()
	const inFlight = 4
	s, err := New(t.Context(), newDB(t, client(t)), Options{Timeout: testTimeout, MaxInFlight: inFlight})
	require.NoError(t, err)
	ctx := t.Context()
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme", CreatedAt: t0}, nil))
	u := storage.User{ID: uuid.NewString(), Org: "acme", Username: "bot", FoldedUsername: "bot",
		IsServiceAccount: true, Role: "Member", CreatedAt: t0}
	require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))

	lim := storage.SessionLimit{Max: 3, LiveAt: t0}
	const racers = 32
	sessions := make([]storage.EmbedSession, racers)
	for i := range sessions {
		sessions[i] = storage.EmbedSession{Digest: sha256.Sum256(fmt.Appendf(nil, "session %d", i)), Org: "acme",
			DiveID: uuid.NewString(), Version: 1, UserID: u.ID, Username: u.Username, AffinityKey: fmt.Sprint(i),
			CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	}
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			errs[i] = s.CreateEmbedSession(ctx, sessions[i], lim, nil)
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, err := range errs {
		if err != nil {
			require.ErrorIs(t, err, storage.ErrLimitExceeded, "call %d", i)
			_, err := s.EmbedSessionByDigest(ctx, sessions[i].Digest)
			require.ErrorIs(t, err, storage.ErrNotFound, "refused session %d", i)
			continue
		}
		created++
		got, err := s.EmbedSessionByDigest(ctx, sessions[i].Digest)
		require.NoError(t, err, "session %d", i)
		assert.Equal(t, sessions[i].AffinityKey, got.AffinityKey)
	}
	assert.GreaterOrEqual(t, created, lim.Max)
	assert.LessOrEqual(t, created, lim.Max+inFlight-1)
	t.Logf("%d sessions created under a limit of %d", created, lim.Max)
}
