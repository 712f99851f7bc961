package redisstore

import (
	"crypto/sha256"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// sessionWorld is a Store of a mirrorCase with the service account robot
// of acme, created.
func sessionWorld(t *testing.T, tc mirrorCase) (*Store, storage.User, time.Time) {
	s, u, t0 := mirrorStore(t, tc)
	require.NoError(t, s.CreateUser(t.Context(), u, storage.UserLimit{}, nil))
	return s, u, t0
}

// testSession builds a session of u named value.
func testSession(u storage.User, value string, created, expires time.Time) storage.EmbedSession {
	return storage.EmbedSession{
		Digest: sha256.Sum256([]byte(u.ID + value)), Org: u.Org, DiveID: uuid.NewString(), Version: 1,
		UserID: u.ID, Username: u.Username, InitialState: []byte(`{"k":"v"}`), AffinityKey: value,
		CreatedAt: created, ExpiresAt: expires,
	}
}

// writeEarlierSession stores es as the previous version of
// createSessionScript did: its record and pointer, and its digest in the
// plain set sess:<uid>.
func writeEarlierSession(t *testing.T, s *Store, es storage.EmbedSession) {
	t.Helper()
	ctx := t.Context()
	hex := hexDigest(es.Digest)
	ttl := time.Duration(s.ttl(es.CreatedAt, es.ExpiresAt)) * time.Millisecond
	base := s.orgBase(es.Org)
	require.NoError(t, s.c.Set(ctx, base+"ses:"+es.UserID+":"+hex, encode(toSessionDoc(es)), ttl).Err())
	require.NoError(t, s.c.SAdd(ctx, base+"sess:"+es.UserID, hex).Err())
	require.NoError(t, s.c.Set(ctx, s.prefix+"ses:"+hex, es.Org+"\n"+es.UserID, ttl).Err())
}

// The sessions a user holds in the set sess:<uid> of the previous
// version count against the limit while live, by the expiry their records
// hold: the next creation moves them into sesz:<uid> and drops the set;
// a member whose record Redis dropped is left out.
func TestSessionsOfEarlierVersionCount(t *testing.T) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, u, t0 := sessionWorld(t, tc)
			base := s.orgBase("acme")
			short := testSession(u, "short", t0, t0.Add(30*time.Minute))
			hour := testSession(u, "hour", t0, t0.Add(time.Hour))
			long := testSession(u, "long", t0, t0.Add(2*time.Hour))
			for _, es := range []storage.EmbedSession{short, hour, long} {
				writeEarlierSession(t, s, es)
			}
			require.NoError(t, s.c.SAdd(ctx, base+"sess:"+u.ID, hexDigest(sha256.Sum256([]byte("dropped by Redis")))).Err())

			lim := storage.SessionLimit{Max: 3, LiveAt: t0.Add(45 * time.Minute)}
			fresh := testSession(u, "fresh", lim.LiveAt, lim.LiveAt.Add(time.Hour))
			require.NoError(t, s.CreateEmbedSession(ctx, fresh, lim, nil))
			over := testSession(u, "over", lim.LiveAt, lim.LiveAt.Add(time.Hour))
			require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded,
				"hour and long, written before, are live")

			assertNoKey(t, s, base+"sess:"+u.ID, "the set of the previous version is gone")
			scored, err := s.c.ZRangeWithScores(ctx, base+"sesz:"+u.ID, 0, -1).Result()
			require.NoError(t, err)
			got := map[string]float64{}
			for _, z := range scored {
				got[z.Member.(string)] = z.Score
			}
			assert.Equal(t, map[string]float64{
				hexDigest(hour.Digest):  float64(hour.ExpiresAt.UnixMilli()),
				hexDigest(long.Digest):  float64(long.ExpiresAt.UnixMilli()),
				hexDigest(fresh.Digest): float64(fresh.ExpiresAt.UnixMilli()),
			}, got, "sessions scored by expiry")
			_, err = s.EmbedSessionByDigest(ctx, short.Digest)
			require.ErrorIs(t, err, storage.ErrNotFound, "an expired session is dropped")
			for _, es := range []storage.EmbedSession{hour, long, fresh} {
				got, err := s.EmbedSessionByDigest(ctx, es.Digest)
				require.NoError(t, err)
				assert.Equal(t, es.AffinityKey, got.AffinityKey)
			}

			// Once hour expires, its place is free.
			lim.LiveAt = hour.ExpiresAt
			over.CreatedAt = lim.LiveAt
			require.NoError(t, s.CreateEmbedSession(ctx, over, lim, nil))

			// The sorted set lives as long as the last record it lists.
			list, err := s.c.PTTL(ctx, base+"sesz:"+u.ID).Result()
			require.NoError(t, err)
			for _, es := range []storage.EmbedSession{long, fresh, over} {
				rec, err := s.c.PTTL(ctx, base+"ses:"+u.ID+":"+hexDigest(es.Digest)).Result()
				require.NoError(t, err)
				require.Positive(t, rec, es.AffinityKey)
				assert.GreaterOrEqual(t, list, rec, "the list outlives the record of %s", es.AffinityKey)
			}
		})
	}
}

// DeleteUser removes the sessions of both sets: those of the previous
// version's set, never moved, and those of the sorted set, with a member
// of the previous version's set written after the move (by a process of
// the previous version still running).
func TestDeleteUserRemovesSessionsOfEarlierVersion(t *testing.T) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, u, t0 := sessionWorld(t, tc)
			other := storage.User{ID: uuid.NewString(), Org: "acme", Username: "Kiosk", FoldedUsername: "kiosk",
				IsServiceAccount: true, Role: "Member", CreatedAt: t0}
			require.NoError(t, s.CreateUser(ctx, other, storage.UserLimit{}, nil))
			base := s.orgBase("acme")
			lim := storage.SessionLimit{Max: 10, LiveAt: t0}

			var sessions []storage.EmbedSession
			for i := range 2 {
				old := testSession(other, "old "+strconv.Itoa(i), t0, t0.Add(time.Hour))
				writeEarlierSession(t, s, old)
				sessions = append(sessions, old)
			}
			moved := testSession(u, "moved", t0, t0.Add(time.Hour))
			writeEarlierSession(t, s, moved)
			created := testSession(u, "created", t0, t0.Add(time.Hour))
			require.NoError(t, s.CreateEmbedSession(ctx, created, lim, nil))
			late := testSession(u, "late", t0, t0.Add(time.Hour))
			writeEarlierSession(t, s, late)
			sessions = append(sessions, moved, created, late)
			for _, es := range sessions {
				_, err := s.EmbedSessionByDigest(ctx, es.Digest)
				require.NoError(t, err, "before the deletion")
			}

			for _, id := range []string{u.ID, other.ID} {
				_, err := s.DeleteUser(ctx, "acme", id, nil)
				require.NoError(t, err)
			}
			for _, es := range sessions {
				_, err := s.EmbedSessionByDigest(ctx, es.Digest)
				require.ErrorIs(t, err, storage.ErrNotFound, "session %s", es.AffinityKey)
				assertNoKey(t, s, base+"ses:"+es.UserID+":"+hexDigest(es.Digest), "the record of %s", es.AffinityKey)
			}
			for _, id := range []string{u.ID, other.ID} {
				assertNoKey(t, s, base+"sess:"+id, "the sets of the user")
				assertNoKey(t, s, base+"sesz:"+id, "the sets of the user")
			}
		})
	}
}

// A session listed in both sets, the previous version's and the sorted
// set, counts once; an expired one of the previous version's set counts
// not at all.
func TestSessionInBothSetsCountsOnce(t *testing.T) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, u, t0 := sessionWorld(t, tc)
			base := s.orgBase("acme")
			lim := storage.SessionLimit{Max: 3, LiveAt: t0}
			both := testSession(u, "both", t0, t0.Add(time.Hour))
			require.NoError(t, s.CreateEmbedSession(ctx, both, lim, nil))
			require.NoError(t, s.c.SAdd(ctx, base+"sess:"+u.ID, hexDigest(both.Digest)).Err())
			expired := testSession(u, "expired", t0.Add(-time.Hour), t0)
			writeEarlierSession(t, s, expired)

			for _, name := range []string{"second", "third"} {
				require.NoError(t, s.CreateEmbedSession(ctx, testSession(u, name, t0, t0.Add(time.Hour)), lim, nil), name)
			}
			require.ErrorIs(t, s.CreateEmbedSession(ctx, testSession(u, "fourth", t0, t0.Add(time.Hour)), lim, nil), storage.ErrLimitExceeded)
			n, err := s.c.ZCard(ctx, base+"sesz:"+u.ID).Result()
			require.NoError(t, err)
			assert.Equal(t, int64(3), n, "both, second and third")
			_, err = s.EmbedSessionByDigest(ctx, expired.Digest)
			require.ErrorIs(t, err, storage.ErrNotFound)
		})
	}
}

// A session refused at the limit leaves no key behind: no record, no
// member of the user's sets and, on a Cluster, no pointer of its digest
// (its reservation is released).
func TestSessionRefusedAtTheLimitLeavesNoKey(t *testing.T) {
	for _, tc := range mirrorCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, u, t0 := sessionWorld(t, tc)
			base := s.orgBase("acme")
			lim := storage.SessionLimit{Max: 1, LiveAt: t0}
			require.NoError(t, s.CreateEmbedSession(ctx, testSession(u, "held", t0, t0.Add(time.Hour)), lim, nil))
			over := testSession(u, "over", t0, t0.Add(time.Hour))
			require.ErrorIs(t, s.CreateEmbedSession(ctx, over, lim, nil), storage.ErrLimitExceeded)
			hex := hexDigest(over.Digest)
			assertNoKey(t, s, s.prefix+"ses:"+hex, "the refused session's pointer")
			assertNoKey(t, s, base+"ses:"+u.ID+":"+hex, "the refused session's record")
			_, err := s.c.ZScore(ctx, base+"sesz:"+u.ID, hex).Result()
			require.ErrorIs(t, err, redis.Nil, "the refused session is not listed")
		})
	}
}
