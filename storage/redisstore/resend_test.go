package redisstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// answerLoser forwards connections to a Redis server. Armed with a marker,
// it lets the next request that contains the marker through, drops the
// server's answer and closes that connection: the command ran and its
// answer was lost, as when the network breaks at that moment.
type answerLoser struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	marker []byte
	conns  []net.Conn
}

func newAnswerLoser(t *testing.T, target string) *answerLoser {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &answerLoser{ln: ln, target: target}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c, up)
			}()
		}
	}()
	return p
}

// arm makes the proxy lose the answer to the next request containing
// marker.
func (p *answerLoser) arm(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = []byte(marker)
}

// armed reports whether the answer is still to be lost.
func (p *answerLoser) armed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.marker != nil
}

func (p *answerLoser) serve(c, up net.Conn) {
	defer c.Close()
	defer up.Close()
	lose := make(chan struct{})
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				p.mu.Lock()
				hit := p.marker != nil && bytes.Contains(buf[:n], p.marker)
				if hit {
					p.marker = nil
				}
				p.mu.Unlock()
				if hit {
					close(lose)
				}
				if _, err := up.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				_ = up.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		select {
		case <-lose:
			return // the answer is read from the server and never sent on
		default:
		}
		if n > 0 {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// lossyStore returns a store of org "acme" on miniredis that reaches it
// through an answerLoser, with go-redis's defaults (retries included, as a
// deployment would have), the same store reached directly, and the proxy.
// single chooses how pointer keys are written.
func lossyStore(t *testing.T, single bool) (s, direct *Store, p *answerLoser) {
	direct = newStore(t, miniClient(t), single)
	p = newAnswerLoser(t, direct.c.(*redis.Client).Options().Addr)
	c := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(c, Options{Prefix: direct.prefix, Timeout: 5 * time.Second})
	require.NoError(t, err)
	s.single = single
	require.NoError(t, s.CreateOrg(t.Context(), storage.Org{ID: "acme", CreatedAt: crashT0}, nil))
	return s, direct, p
}

// A write whose answer is lost is not sent again: go-redis resends a
// command whose connection broke before its answer came, and a second run
// would answer as if the first had not happened. The write fails (the
// service answers 500), and what it did stays done.
func TestWritesAreNotResent(t *testing.T) {
	for _, single := range []bool{true, false} {
		name := map[bool]string{true: "Server", false: "ClusterWrites"}[single]
		t.Run(name, func(t *testing.T) { testWritesAreNotResent(t, single) })
	}
}

func testWritesAreNotResent(t *testing.T, single bool) {
	ctx := t.Context()
	s, direct, p := lossyStore(t, single)
	// Loaded, so that the answers lost are those of the scripts' runs,
	// not of a NOSCRIPT.
	for _, sc := range []*redis.Script{createUserScript, createTokenScript, deleteTokenScript, setPrivilegesScript, deleteUserScript} {
		require.NoError(t, sc.Load(ctx, direct.c).Err())
	}

	// lost runs write with the answer to the request containing marker
	// lost, and requires that it fail with an error of the connection.
	lost := func(what, marker string, write func() error) {
		t.Helper()
		p.arm(marker)
		err := write()
		require.False(t, p.armed(), "%s: no request contained %q", what, marker)
		require.Error(t, err, "%s: its answer was lost", what)
		for _, sentinel := range []error{storage.ErrAlreadyExists, storage.ErrNotFound, storage.ErrLimitExceeded, storage.ErrConflict} {
			require.False(t, errors.Is(err, sentinel), "%s: resent, it answered %v", what, err)
		}
	}

	u := storage.User{ID: uuid.NewString(), Org: "acme", Username: "Robot", FoldedUsername: "robot",
		IsServiceAccount: true, Role: "Member", CreatedAt: crashT0}
	lost("CreateUser", u.ID, func() error { return s.CreateUser(ctx, u, storage.UserLimit{}, nil) })
	got, err := direct.GetUser(ctx, "acme", "robot")
	require.NoError(t, err, "the user was created")
	assert.Equal(t, u.ID, got.ID)

	tok := storage.Token{ID: uuid.NewString(), Org: "acme", UserID: u.ID, Digest: sha256.Sum256([]byte("lost")),
		Name: "ci", Type: "read_write", CreatedAt: crashT0}
	// On a Cluster the marker skips the reservation of the pointers, which
	// carries the id too, and hits the script, whose arguments carry the
	// token's record.
	lost("CreateToken", `"ci"`, func() error { return s.CreateToken(ctx, tok, storage.TokenLimit{Max: 10, LiveAt: crashT0}, nil) })
	a, err := direct.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest})
	require.NoError(t, err, "the token was created, and authenticates")
	assert.Equal(t, tok.ID, a.Credential.Token.ID)

	lost("DeleteToken", tok.ID, func() error { return s.DeleteToken(ctx, "acme", u.ID, tok.ID, storage.Revocation{At: crashT0}, nil) })
	_, err = direct.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest})
	require.ErrorIs(t, err, storage.ErrNotFound, "the token was deleted")

	lost("SetPrivileges", "privilege.lost", func() error {
		return s.SetPrivileges(ctx, "acme", u.ID, nil, []string{"privilege.lost"}, nil)
	})
	got, err = direct.GetUser(ctx, "acme", "robot")
	require.NoError(t, err)
	assert.Equal(t, []string{"privilege.lost"}, got.Privileges, "the privileges were set")

	lost("DeleteUser", u.ID, func() error { _, err := s.DeleteUser(ctx, "acme", u.ID, nil); return err })
	_, err = direct.GetUser(ctx, "acme", "robot")
	require.ErrorIs(t, err, storage.ErrNotFound, "the user was deleted")
}

// On a Cluster a token's pointer keys are reserved by a pipeline that
// go-redis resends when its answer is lost. The second attempt finds the
// keys holding the values the first one wrote: they are this call's own,
// and the token is created, not refused as a duplicate.
func TestResentReservationIsOwn(t *testing.T) {
	ctx := t.Context()
	s, direct, p := lossyStore(t, false)
	u := storage.User{ID: uuid.NewString(), Org: "acme", Username: "robot", FoldedUsername: "robot",
		IsServiceAccount: true, Role: "Member", CreatedAt: crashT0}
	require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))

	tok := storage.Token{ID: uuid.NewString(), Org: "acme", UserID: u.ID, Digest: sha256.Sum256([]byte("resent")),
		Name: "ci", Type: "read_write", CreatedAt: crashT0}
	p.arm("\r\nnx\r\n") // SET NX: the reservation, not the script
	require.NoError(t, s.CreateToken(ctx, tok, storage.TokenLimit{Max: 10, LiveAt: crashT0}, nil))
	require.False(t, p.armed(), "the reservation's answer was lost")
	a, err := direct.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest})
	require.NoError(t, err, "the token authenticates")
	assert.Equal(t, tok.ID, a.Credential.Token.ID)

	// A key held by another value is still refused, and this call's own
	// reservation undone.
	other := tok
	other.ID = uuid.NewString()
	require.ErrorIs(t, s.CreateToken(ctx, other, storage.TokenLimit{Max: 10, LiveAt: crashT0}, nil), storage.ErrAlreadyExists)
	assertNoKey(t, direct, direct.prefix+"tid:"+other.ID, "the refused token's id is not left reserved")
}
