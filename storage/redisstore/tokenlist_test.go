package redisstore

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// mirrorCase is a client to check the mirror keys on, and whether the
// Store writes as on a single server or in a Cluster's order.
type mirrorCase struct {
	name   string
	client func(testing.TB) redis.UniversalClient
	single bool
}

// mirrorCases are miniredis, in both orders of writes, and the real
// server and Cluster.
var mirrorCases = []mirrorCase{
	{"miniredis", func(tb testing.TB) redis.UniversalClient { return miniClient(tb) }, true},
	{"miniredis cluster writes", func(tb testing.TB) redis.UniversalClient { return miniClient(tb) }, false},
	{"server", func(tb testing.TB) redis.UniversalClient { return serverClient(tb) }, true},
	{"cluster", func(tb testing.TB) redis.UniversalClient { return clusterClient(tb) }, false},
}

// mirrorStore returns a Store of tc holding the org acme, the user robot
// of acme (not yet created) and the time of both.
func mirrorStore(t *testing.T, tc mirrorCase) (*Store, storage.User, time.Time) {
	s := newStore(t, tc.client(t), tc.single)
	t0 := time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)
	require.NoError(t, s.CreateOrg(t.Context(), storage.Org{ID: "acme", CreatedAt: t0}, nil))
	u := storage.User{ID: uuid.NewString(), Org: "acme", Username: "Robot", FoldedUsername: "robot",
		IsServiceAccount: true, Role: "Member", CreatedAt: t0}
	return s, u, t0
}

// toks:<uid>, which listings read, holds exactly the records of tok:<uid>,
// and trec:<tid>, which authentication reads, each one of them, after
// every script that changes them: creation (first, later, at the
// limit with expired tokens dropped, refused at the limit), deletion of a
// token, and deletion of the user.
func TestTokenListMirrorsRecords(t *testing.T) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, u, t0 := mirrorStore(t, tc)
			require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
			base := s.orgBase("acme")

			var made []storage.Token
			requireMirror := func(step string) {
				t.Helper()
				// trec:<tid> holds each record, and expires as its
				// pointer does.
				for _, tok := range made {
					rec, err := s.c.HGet(ctx, base+"tok:"+u.ID, tok.ID).Result()
					live := err == nil
					mirror, err := s.c.Get(ctx, base+"trec:"+tok.ID).Result()
					if !live {
						require.ErrorIs(t, err, redis.Nil, "%s: trec:%s", step, tok.Name)
						continue
					}
					require.NoError(t, err, "%s: trec:%s", step, tok.Name)
					require.Equal(t, rec, mirror, step)
					ttl, err := s.c.PTTL(ctx, base+"trec:"+tok.ID).Result()
					require.NoError(t, err)
					pointerTTL, err := s.c.PTTL(ctx, s.prefix+"tok:"+hexDigest(tok.Digest)).Result()
					require.NoError(t, err)
					require.Equal(t, pointerTTL > 0, ttl > 0, "%s: trec:%s expires with its pointer", step, tok.Name)
					require.InDelta(t, pointerTTL, ttl, float64(time.Second), step)
				}
				recs, err := s.c.HVals(ctx, base+"tok:"+u.ID).Result()
				require.NoError(t, err, step)
				list, err := s.c.Get(ctx, base+"toks:"+u.ID).Result()
				if len(recs) == 0 {
					require.ErrorIs(t, err, redis.Nil, "%s: no records, no list", step)
					return
				}
				require.NoError(t, err, step)
				got := strings.Split(list, "\n")
				slices.Sort(recs)
				slices.Sort(got)
				require.Equal(t, recs, got, step)
			}
			create := func(i int, expires time.Time, max int, at time.Time) (storage.Token, error) {
				tok := storage.Token{ID: uuid.NewString(), Org: "acme", UserID: u.ID,
					Digest: sha256.Sum256(fmt.Appendf(nil, "token %d", i)), Name: fmt.Sprint("t", i),
					Type: "read_write", CreatedAt: t0.Add(time.Duration(i) * time.Second), ExpiresAt: expires}
				made = append(made, tok)
				return tok, s.CreateToken(ctx, tok, storage.TokenLimit{Max: max, LiveAt: at}, nil)
			}

			requireMirror("no token yet")
			var toks []storage.Token
			for i := range 4 {
				exp := time.Time{}
				if i%2 == 0 {
					exp = t0.Add(time.Hour) // live at t0, expired two hours later
				}
				tok, err := create(i, exp, 4, t0)
				require.NoError(t, err)
				toks = append(toks, tok)
				requireMirror(fmt.Sprint("created ", i))
			}
			_, err := create(10, time.Time{}, 4, t0)
			require.ErrorIs(t, err, storage.ErrLimitExceeded)
			requireMirror("refused at the limit")

			later := t0.Add(2 * time.Hour)
			_, err = create(11, time.Time{}, 4, later)
			require.NoError(t, err, "two expired tokens make room")
			requireMirror("created after dropping the expired")

			require.NoError(t, s.DeleteToken(ctx, "acme", u.ID, toks[1].ID, storage.Revocation{At: later}, nil))
			requireMirror("one deleted")
			listed, err := s.ListTokens(ctx, "acme", u.ID, later)
			require.NoError(t, err)
			assert.Len(t, listed, 2)

			_, err = s.DeleteUser(ctx, "acme", u.ID, nil)
			require.NoError(t, err)
			requireMirror("user deleted")
		})
	}
}

// name:<folded>, which a remembered location reads, holds exactly the user's
// users and inst fields after every script that changes them: creation,
// update, a new instance configuration, and deletion.
func TestUserMirrorsRecords(t *testing.T) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, u, _ := mirrorStore(t, tc)
			base := s.orgBase("acme")

			requireMirror := func(step string) {
				t.Helper()
				rec, err := s.c.HGet(ctx, base+"users", u.FoldedUsername).Result()
				if errors.Is(err, redis.Nil) {
					_, err := s.c.Get(ctx, base+"name:"+u.FoldedUsername).Result()
					require.ErrorIs(t, err, redis.Nil, "%s: no user, no mirror", step)
					return
				}
				require.NoError(t, err, step)
				inst, err := s.c.HGet(ctx, base+"inst", u.FoldedUsername).Result()
				require.NoError(t, err, step)
				mirror, err := s.c.Get(ctx, base+"name:"+u.FoldedUsername).Result()
				require.NoError(t, err, step)
				assert.Equal(t, rec+"\n"+inst, mirror, step)
			}

			requireMirror("no user yet")
			require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))
			requireMirror("created")
			require.NoError(t, s.SetPrivileges(ctx, "acme", u.ID, u.Privileges, []string{"read", "write"}, nil))
			requireMirror("privileges set")
			require.NoError(t, s.SetInstances(ctx, "acme", u.ID, storage.InstanceConfig{
				ReadWrite: storage.InstanceSide{Size: "jumbo", CooldownSeconds: 600}}, nil))
			requireMirror("instances set")
			// The same keyed by user id, as an earlier version wrote it,
			// goes with its user.
			legacy := base + "user:" + u.ID
			require.NoError(t, s.c.Set(ctx, legacy, "record\ninst", 0).Err())
			_, err := s.DeleteUser(ctx, "acme", u.ID, nil)
			require.NoError(t, err)
			requireMirror("deleted")
			_, err = s.c.Get(ctx, legacy).Result()
			require.ErrorIs(t, err, redis.Nil, "user:<uid> left behind")
		})
	}
}
