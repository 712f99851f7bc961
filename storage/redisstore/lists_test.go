package redisstore

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// A token list is decoded again unless toks:<uid> reads byte for byte the
// same; a list decoded before still answers by the liveness of the
// moment; and what a listing returns is the caller's own.
func TestDecodedListsFollowTheBytes(t *testing.T) {
	ctx := t.Context()
	s, u, t0 := mirrorStore(t, mirrorCases[0]) // miniredis
	require.NoError(t, s.CreateUser(ctx, u))
	create := func(i int, expires time.Time) storage.Token {
		t.Helper()
		tok := storage.Token{ID: uuid.NewString(), Org: "acme", UserID: u.ID,
			Digest: sha256.Sum256(fmt.Appendf(nil, "token %d", i)), Name: fmt.Sprint("t", i),
			Type: "read_write", CreatedAt: t0.Add(time.Duration(i) * time.Second), ExpiresAt: expires}
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{}))
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
	require.NoError(t, s.DeleteToken(ctx, "acme", u.ID, third.ID, t0))
	after, err = s.ListTokens(ctx, "acme", u.ID, t0)
	require.NoError(t, err)
	assert.Equal(t, []string{"t0", "t1"}, ids(after), "a deleted record is gone")

	// The same bytes give the same decoded records; other bytes, their own.
	recs, err := s.c.Get(ctx, s.orgBase("acme")+"toks:"+u.ID).Result()
	require.NoError(t, err)
	a, va, err := s.decodedTokens("acme", u.ID, recs)
	require.NoError(t, err)
	b, vb, err := s.decodedTokens("acme", u.ID, recs)
	require.NoError(t, err)
	assert.Same(t, &a[0], &b[0], "decoded once")
	assert.NotZero(t, va)
	assert.Equal(t, va, vb, "one version")
	edited := strings.Replace(recs, `"n":"t0"`, `"n":"t9"`, 1)
	require.NotEqual(t, recs, edited)
	c, vc, err := s.decodedTokens("acme", u.ID, edited)
	require.NoError(t, err)
	assert.Equal(t, []string{"t9", "t1"}, ids(c))
	assert.Greater(t, vc, va, "other bytes, a new version")
	_, vd, err := s.decodedTokens("acme", u.ID, recs)
	require.NoError(t, err)
	assert.Greater(t, vd, vc, "the first bytes again: a new version still")
}

// The Store keeps at most lists.max decoded lists, and none larger than
// maxListBytes.
func TestDecodedListsBounded(t *testing.T) {
	s := newStore(t, miniClient(t), true)
	s.lists.Max = 2
	rec := func(name string) string {
		return encode(toTokenDoc(storage.Token{ID: uuid.NewString(), Name: name, Type: "read_write",
			Digest: sha256.Sum256([]byte(name)), CreatedAt: time.Unix(1, 0)}))
	}
	for i := range 5 {
		_, _, err := s.decodedTokens("acme", fmt.Sprint("user-", i), rec(fmt.Sprint("t", i)))
		require.NoError(t, err)
		assert.LessOrEqual(t, s.lists.Len(), 2)
	}
	_, kept := s.lists.Get(listKey{"acme", "user-4"})
	assert.True(t, kept, "the latest list is kept")

	big := rec(strings.Repeat("n", maxListBytes))
	ts, version, err := s.decodedTokens("acme", "big", big)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Zero(t, version, "a list not kept has no version")
	_, kept = s.lists.Get(listKey{"acme", "big"})
	assert.False(t, kept, "a list over maxListBytes is not kept")
}
