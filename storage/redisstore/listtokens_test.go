package redisstore

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// A token listing answers the records as they are at each call, by the
// liveness of the moment, and what it returns is the caller's own.
func TestListTokensReadsAfresh(t *testing.T) {
	ctx := t.Context()
	s, u, t0 := mirrorStore(t, mirrorCases[0]) // miniredis
	require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
	create := func(i int, expires time.Time) storage.Token {
		t.Helper()
		tok := storage.Token{ID: uuid.NewString(), Org: "acme", UserID: u.ID,
			Digest: sha256.Sum256(fmt.Appendf(nil, "token %d", i)), Name: fmt.Sprint("t", i),
			Type: "read_write", CreatedAt: t0.Add(time.Duration(i) * time.Second), ExpiresAt: expires}
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}, nil))
		return tok
	}
	ids := func(ts []storage.Token) (out []string) {
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	create(0, time.Time{})
	create(1, t0.Add(time.Hour))

	first, err := s.ListTokens(ctx, "acme", u.ID, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{"t0", "t1"}, ids(first))
	first[0].Name = "changed by the caller"
	again, err := s.ListTokens(ctx, "acme", u.ID, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{"t0", "t1"}, ids(again), "a caller's change stays its own")
	later, err := s.ListTokens(ctx, "acme", u.ID, t0.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, []string{"t0"}, ids(later), "an expired token leaves a list decoded before")

	third := create(2, time.Time{})
	after, err := s.ListTokens(ctx, "acme", u.ID, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{"t0", "t1", "t2"}, ids(after), "a new record is read")
	require.NoError(t, s.DeleteToken(ctx, "acme", u.ID, third.ID, storage.Revocation{At: t0}, nil))
	after, err = s.ListTokens(ctx, "acme", u.ID, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{"t0", "t1"}, ids(after), "a deleted record is gone")
}
