package redisstore

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// unreached is a go-redis hook that stands for a Cluster node no longer
// reachable: a command on a key under prefix fails, unsent, with the
// error of a refused connection, or, with hang, once its context has
// ended (a node that does not answer); the other commands of its pipeline
// run. With scripts, only scripts fail so.
type unreached struct {
	prefix  string
	hang    bool
	scripts bool
}

func (h unreached) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h unreached) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on(ctx, cmd) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}

func (h unreached) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var sent []redis.Cmder
		var err error
		var unsent []redis.Cmder
		for _, cmd := range cmds {
			if h.matches(cmd) {
				unsent = append(unsent, cmd)
			} else {
				sent = append(sent, cmd)
			}
		}
		if len(sent) > 0 {
			if e := next(ctx, sent); e != nil {
				return e
			}
		}
		for _, cmd := range unsent {
			h.on(ctx, cmd)
			err = cmd.Err()
		}
		return err
	}
}

// on sets the error of cmd and reports true when cmd names a key under
// h.prefix (see matches); with h.hang, once ctx has ended.
func (h unreached) on(ctx context.Context, cmd redis.Cmder) bool {
	if !h.matches(cmd) {
		return false
	}
	if h.hang {
		<-ctx.Done()
		cmd.SetErr(ctx.Err())
		return true
	}
	cmd.SetErr(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	return true
}

// matches reports whether cmd names a key under h.prefix: its first key,
// or that of a script.
func (h unreached) matches(cmd redis.Cmder) bool {
	args := cmd.Args()
	i := 1
	if name := cmd.Name(); name == "eval" || name == "evalsha" {
		i = 3
	} else if h.scripts {
		return false
	}
	if len(args) <= i {
		return false
	}
	k, ok := args[i].(string)
	return ok && strings.HasPrefix(k, h.prefix)
}

// A creation on a Cluster reserves its token's digest and id keys in one
// pipeline, each in its own slot: when the id's node cannot be reached,
// or does not answer before the operation's time is up, the digest's
// pointer, set on another node, goes again, rather than stay (for ever,
// for a token without expiry) pointing at no token.
func TestReservationOnAnUnreachedNodeIsUndone(t *testing.T) {
	for name, hang := range map[string]bool{"refused": false, "hung": true} {
		t.Run(name, func(t *testing.T) {
			w := newCrashWorld(t)
			w.s.timeout = 100 * time.Millisecond
			w.s.c.AddHook(unreached{prefix: w.s.prefix + "tid:", hang: hang})
			tok := w.token("a-token-whose-id-node-is-down", time.Time{})
			err := w.s.CreateToken(t.Context(), tok, storage.TokenLimit{LiveAt: crashT0}, audited("token.create", tok.ID))
			require.Error(t, err)
			assertNoKey(t, w.s, w.s.prefix+"tok:"+hexDigest(tok.Digest), "the digest's pointer of a reservation that failed")
			_, err = w.s.ReadAccess(t.Context(), storage.AccessQuery{Digest: tok.Digest})
			require.ErrorIs(t, err, storage.ErrNotFound)
		})
	}
}

// A creation of a revoked token's value claims the digest's key over its
// tombstone, in a pipeline after the reservation's: when the digest's node
// cannot be reached then, the id key the reservation set goes again, and
// the tombstone stays.
func TestClaimOnAnUnreachedNodeIsUndone(t *testing.T) {
	w := newCrashWorld(t)
	ctx := t.Context()
	revoked := w.token("a-token-revoked-then-created-again", crashT0.Add(time.Hour))
	require.NoError(t, w.s.CreateToken(ctx, revoked, storage.TokenLimit{LiveAt: crashT0}, nil))
	require.NoError(t, w.s.DeleteToken(ctx, "acme", w.user.ID, revoked.ID, storage.Revocation{At: crashT0}, nil))
	w.s.c.AddHook(unreached{prefix: w.s.prefix + "tok:", scripts: true})
	again := w.token("a-token-revoked-then-created-again", crashT0.Add(time.Hour))
	err := w.s.CreateToken(ctx, again, storage.TokenLimit{LiveAt: crashT0}, nil)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assertNoKey(t, w.s, w.s.prefix+"tid:"+again.ID, "the id's key of a claim that failed")
	_, err = w.s.ReadAccess(ctx, storage.AccessQuery{Digest: again.Digest, LiveAt: crashT0})
	require.ErrorIs(t, err, storage.ErrRevoked, "the tombstone stays")
}

// On a Cluster, an operation that reaches no node has the client read the
// map of the slots again, so that the requests for the slots of a master
// that died go to the replica that took over as soon as it has (a dead
// master sends no MOVED, after which go-redis would read it); a reply of
// Redis, such as an error of a command, does not.
func TestUnreachedNodeReloadsTheSlotMap(t *testing.T) {
	ctx := t.Context()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c, Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NotNil(t, s.reload, "a Store on a Cluster reloads its slot map")
	var reloads atomic.Int64
	s.reload = func() { reloads.Add(1) }

	_, err = s.ReadAccess(ctx, storage.AccessQuery{Digest: sha256.Sum256([]byte("a-token"))})
	require.Error(t, err)
	assert.Equal(t, int64(1), reloads.Load(), "reloads after a read access that reached no node")
	err = s.SetInstances(ctx, "acme", "some-user", storage.InstanceConfig{}, nil)
	require.Error(t, err)
	assert.Equal(t, int64(2), reloads.Load(), "reloads after a script that reached no node")

	// A reply: the digest's pointer holds a hash, which GET refuses.
	w := newCrashWorld(t)
	w.s.reload = func() { reloads.Add(1) }
	digest := sha256.Sum256([]byte("another-token"))
	require.NoError(t, w.s.c.HSet(ctx, w.s.prefix+"tok:"+hexDigest(digest), "f", "v").Err())
	_, err = w.s.ReadAccess(ctx, storage.AccessQuery{Digest: digest})
	require.ErrorContains(t, err, "WRONGTYPE")
	assert.Equal(t, int64(2), reloads.Load(), "reloads after a reply of Redis")
}

// again sends a command again on the answers by which a Cluster tells that
// it did not run it while a slot moved, and on no other; never once ctx
// has ended.
func TestAgainOnlyOnASlotMoving(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{errors.New("MOVED 3999 127.0.0.1:6381"), true},
		{errors.New("ASK 3999 127.0.0.1:6381"), true},
		{errors.New("ERR Script attempted to access a non local key in a cluster node script"), false},
		{errors.New("CLUSTERDOWN The cluster is down"), false},
		{redis.Nil, false},
		{nil, false},
	} {
		wait := time.Millisecond
		assert.Equal(t, c.want, again(t.Context(), c.err, &wait), "%v", c.err)
		if c.want {
			assert.Equal(t, 2*time.Millisecond, wait, "the next wait, after %v", c.err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	wait := time.Hour
	assert.False(t, again(ctx, errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), &wait), "after ctx ended")
	wait = lastMoveWait
	require.True(t, again(t.Context(), errors.New("ASK 1 127.0.0.1:6381"), &wait))
	assert.Equal(t, lastMoveWait, wait, "the longest wait")
}
