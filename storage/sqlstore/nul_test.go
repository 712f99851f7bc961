package sqlstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// Any valid UTF-8 string is stored and read back as it was, NUL and the
// other control characters included (PostgreSQL's text holds no NUL), and
// a lookup by one finds nothing rather than failing.
func TestControlCharactersRoundTrip(t *testing.T) {
	eachEngine(t, func(t *testing.T, dsn string) {
		ctx := t.Context()
		s := openTest(t, dsn)
		const odd = "a\x00b\x01c\x02\x00\x01"
		org := "org" + odd
		require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: org, CreatedAt: time.UnixMilli(5)}, nil))
		got, err := s.GetOrg(ctx, org)
		require.NoError(t, err)
		assert.Equal(t, org, got.ID)
		u := storage.User{ID: "id" + odd, Org: org, Username: "u", FoldedUsername: "u", Description: odd, Role: "Member",
			Privileges: []string{odd}, Email: odd, FirstName: odd, LastName: "\x00", CreatedAt: time.UnixMilli(7).UTC()}
		u.Instances.ReadWrite.Size = odd
		require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{Max: 10}, nil))
		back, err := s.GetUser(ctx, org, "u")
		require.NoError(t, err)
		assert.Equal(t, u, back)
		_, err = s.GetUser(ctx, org, "u\x00")
		require.True(t, errors.Is(err, storage.ErrNotFound), "%v", err)
		p, err := s.ListUsers(ctx, org, storage.UserQuery{After: "\x00", Limit: 5})
		require.NoError(t, err)
		assert.Len(t, p.Users, 1)
		require.NoError(t, s.MarkSeeded(ctx, org, []string{odd}))
		marks, err := s.SeedMarks(ctx, org)
		require.NoError(t, err)
		assert.Equal(t, []string{odd}, marks)
		require.NoError(t, s.AddFeedback(ctx, storage.Feedback{ID: odd, Text: odd}))

		tok := storage.Token{ID: "t" + odd, Org: org, UserID: u.ID, Digest: [32]byte{1}, Name: odd, Description: odd, Type: odd, CreatedAt: time.UnixMilli(9).UTC()}
		require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{Max: 5, LiveAt: time.UnixMilli(9)}, nil))
		a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest, Username: "u", Tokens: true, LiveAt: time.UnixMilli(9)})
		require.NoError(t, err)
		assert.Equal(t, tok, a.Credential.Token)
		assert.Equal(t, u, a.Credential.User)
		assert.Equal(t, []storage.Token{tok}, a.Tokens)
		toks, err := s.ListTokens(ctx, org, u.ID, time.UnixMilli(9))
		require.NoError(t, err)
		assert.Equal(t, []storage.Token{tok}, toks)
		require.NoError(t, s.DeleteToken(ctx, org, u.ID, tok.ID, storage.Revocation{At: time.UnixMilli(9)}, nil))

		for _, id := range []string{"rw" + odd, "rs.0" + odd} {
			require.NoError(t, s.SetDuckling(ctx, storage.Duckling{Org: org, UserID: u.ID, ID: id, Active: true, At: time.UnixMilli(3).UTC()}))
		}
		acts, err := s.ListActivity(ctx, org)
		require.NoError(t, err)
		require.Len(t, acts, 1, "one user with two Ducklings")
		assert.ElementsMatch(t, []string{"rw" + odd, "rs.0" + odd}, []string{acts[0].Ducklings[0].ID, acts[0].Ducklings[1].ID})

		dive := storage.Dive{ID: "d" + odd, Org: org, Title: odd, Version: 1}
		require.NoError(t, s.PutDive(ctx, dive, nil))
		gotDive, err := s.GetDive(ctx, org, dive.ID)
		require.NoError(t, err)
		assert.Equal(t, dive, gotDive)
		target, err := s.GetEmbedTarget(ctx, org, dive.ID, "u")
		require.NoError(t, err)
		assert.Equal(t, dive, target.Dive)
		es := storage.EmbedSession{Digest: [32]byte{2}, Org: org, DiveID: dive.ID, UserID: u.ID, Username: odd, AffinityKey: odd,
			CreatedAt: time.UnixMilli(1).UTC(), ExpiresAt: time.UnixMilli(2).UTC()}
		require.NoError(t, s.CreateEmbedSession(ctx, es, storage.SessionLimit{}, nil))
		gotSession, err := s.EmbedSessionByDigest(ctx, es.Digest)
		require.NoError(t, err)
		assert.Equal(t, es, gotSession)
	})
}

// escapeNUL is reversed by unescapeNUL, keeps byte-wise order, and leaves
// strings without NUL or \x01 as they are.
func TestEscapeNULKeepsOrder(t *testing.T) {
	alphabet := []byte{0, 1, 2, 'a', 0xc3, 0xa9}
	var all []string
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		all = append(all, string(prefix))
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			gen(append(prefix[:len(prefix):len(prefix)], c), n-1)
		}
	}
	gen(nil, 3)
	for _, a := range all {
		require.Equal(t, a, unescapeNUL(escapeNUL(a)), "%q", a)
		for _, b := range all {
			require.Equal(t, a < b, escapeNUL(a) < escapeNUL(b), "%q, %q", a, b)
		}
	}
	assert.Equal(t, "user_1 é", escapeNUL("user_1 é"))
}
