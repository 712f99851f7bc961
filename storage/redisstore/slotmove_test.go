package redisstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// slotMove moves the slot of a hash tag from the master that serves it to
// another, as redis-cli --cluster reshard does (the importing and
// migrating marks, MIGRATE of the keys, then the slot's new owner on
// every master), one step at a time for the test. Other tests sharing the
// Cluster may write keys of their own in the same slot meanwhile.
type slotMove struct {
	t        *testing.T
	slot     int64
	src, dst *redis.Client
	dstID    string
	masters  []*redis.Client
	done     bool
}

// startSlotMove marks the slot of the keys tagged {tag} as moving to
// another master of c. The move is finished when t ends, if the test has
// not finished it (and however far it got).
func startSlotMove(t *testing.T, c *redis.ClusterClient, tag string) *slotMove {
	ctx := t.Context()
	slot, err := c.ClusterKeySlot(ctx, "{"+tag+"}").Result()
	require.NoError(t, err)
	shards, err := c.ClusterShards(ctx).Result()
	require.NoError(t, err)
	m := &slotMove{t: t, slot: slot}
	var srcID string
	masters := map[string]*redis.Client{} // by node id
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.Role != "master" {
				continue
			}
			client := redis.NewClient(&redis.Options{Addr: net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))})
			t.Cleanup(func() { _ = client.Close() })
			masters[n.ID] = client
			m.masters = append(m.masters, client)
			for _, r := range sh.Slots {
				if r.Start <= slot && slot <= r.End {
					m.src, srcID = client, n.ID
				}
			}
		}
	}
	require.NotNil(t, m.src, "no master serves slot %d", slot)
	for id, client := range masters {
		if id != srcID {
			m.dst, m.dstID = client, id
		}
	}
	require.NotNil(t, m.dst, "the Cluster has one master")
	t.Cleanup(m.finish)
	require.NoError(t, m.dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	require.NoError(t, m.src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.dstID).Err())
	return m
}

// migrate moves keys from the slot's first master to the second.
func (m *slotMove) migrate(keys ...string) {
	m.t.Helper()
	require.NoError(m.t, m.migrateWith(nil, keys))
}

// migrateWith sends MIGRATE of keys, with the options opts, to the first
// master. A key gone meanwhile is skipped (NOKEY).
func (m *slotMove) migrateWith(opts []any, keys []string) error {
	host, port, err := net.SplitHostPort(m.dst.Options().Addr)
	if err != nil {
		return err
	}
	args := append([]any{"MIGRATE", host, port, "", 0, 5000}, opts...)
	args = append(args, "KEYS")
	for _, k := range keys {
		args = append(args, k)
	}
	return m.src.Do(context.Background(), args...).Err()
}

// keys returns the keys of the slot that n holds, sorted.
func (m *slotMove) keys(n *redis.Client) ([]string, error) {
	keys, err := n.ClusterGetKeysInSlot(context.Background(), int(m.slot), 100_000).Result()
	sort.Strings(keys)
	return keys, err
}

// snapshot returns the keys under prefix on either master, with their
// serialized values.
func (m *slotMove) snapshot(prefix string) map[string]string {
	m.t.Helper()
	snap := map[string]string{}
	for name, n := range map[string]*redis.Client{"first": m.src, "second": m.dst} {
		keys, err := m.keys(n)
		require.NoError(m.t, err)
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) {
				continue // another test's
			}
			// The second master serves the key after ASKING only.
			p := n.Pipeline()
			p.Do(context.Background(), "ASKING")
			v := p.Dump(context.Background(), k)
			_, err := p.Exec(context.Background())
			require.NoError(m.t, err)
			snap[name+" "+k] = v.Val()
		}
	}
	return snap
}

// finish moves the slot's remaining keys and makes the second master the
// slot's owner: on itself first, then on the first and the others. It
// goes on after an error, which it reports, so that the Cluster is left
// whole for other tests even when this one failed: a key the second
// master holds already (which a write there made while the slot moved)
// is replaced.
func (m *slotMove) finish() {
	if m.done {
		return
	}
	m.done = true
	rest, err := m.keys(m.src)
	if err == nil && len(rest) > 0 {
		err = m.migrateWith([]any{"REPLACE"}, rest)
	}
	if err != nil {
		m.t.Errorf("moving the rest of slot %d: %v", m.slot, err)
	}
	ctx := context.Background()
	for _, n := range append([]*redis.Client{m.dst, m.src}, m.masters...) {
		if err := n.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "NODE", m.dstID).Err(); err != nil {
			m.t.Errorf("CLUSTER SETSLOT %d NODE on %s: %v", m.slot, n.Options().Addr, err)
		}
	}
}

// TestClusterSlotMove moves an org's slot to another master, key by key,
// while the org's audited writes run: while the org's keys are split
// between the two masters, neither runs a write, wherever the org's
// record is (a write run there would find some keys and not others, and
// a key it wrote on the second would stop the move with BUSYKEY); a write
// sent then is done once the move ends; and the org is whole after it.
func TestClusterSlotMove(t *testing.T) {
	c := clusterClient(t)
	s := newStore(t, c, false)
	ctx := t.Context()
	org := "moving-" + testdb.RandomHex(4)
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	audit := func(action, target string) *storage.Audit {
		return &storage.Audit{Event: storage.Event{
			ID: uuid.NewString(), Org: org, At: t0, ActorUsername: "system", Action: action, TargetID: target,
		}}
	}
	user := func(name string) storage.User {
		return storage.User{
			ID: uuid.NewString(), Org: org, Username: name, FoldedUsername: name,
			IsServiceAccount: true, Role: "Member", CreatedAt: t0,
		}
	}
	token := func(u storage.User, value string) storage.Token {
		return storage.Token{
			ID: uuid.NewString(), Org: org, UserID: u.ID, Digest: sha256.Sum256([]byte(value)),
			Name: value, Type: "read_write", CreatedAt: t0,
		}
	}
	config := storage.InstanceConfig{
		ReadWrite:   storage.InstanceSide{Size: "jumbo"},
		ReadScaling: storage.InstanceSide{Size: "pulse", FlockSize: 2},
	}
	robot, bot := user("robot"), user("bot")
	first := token(robot, "first-token-value")
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: org, CreatedAt: t0}, audit("org.create", org)))
	require.NoError(t, s.CreateUser(ctx, robot, storage.UserLimit{}, audit("user.create", robot.ID)))
	require.NoError(t, s.CreateUser(ctx, bot, storage.UserLimit{}, audit("user.create", bot.ID)))
	require.NoError(t, s.CreateToken(ctx, first, storage.TokenLimit{LiveAt: t0}, audit("token.create", first.ID)))

	// Each write runs while the slot moves. A token or session creation
	// reserves its pointer keys (in other slots) before the org's script:
	// when it ends on the Cluster's refusal (rather than on its deadline
	// while its script was under way, which may have run it), it has
	// released them (pointers lists them, for each attempt).
	var pointers []string
	n := 0
	session := func() storage.EmbedSession {
		n++
		return storage.EmbedSession{
			Digest: sha256.Sum256(fmt.Appendf(nil, "a-session-value-%d", n)), Org: org, DiveID: uuid.NewString(),
			Version: 1, UserID: robot.ID, Username: robot.Username, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
		}
	}
	writes := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"create user", func(ctx context.Context) error {
			return s.CreateUser(ctx, user("carol"), storage.UserLimit{}, audit("user.create", "carol"))
		}},
		{"set instances", func(ctx context.Context) error {
			return s.SetInstances(ctx, org, robot.ID, config, audit("user.set_instances", robot.ID))
		}},
		{"create token", func(ctx context.Context) error {
			n++
			t := token(robot, fmt.Sprintf("second-token-value-%d", n))
			pointers = []string{s.prefix + "tok:" + hexDigest(t.Digest), s.prefix + "tid:" + t.ID}
			return s.CreateToken(ctx, t, storage.TokenLimit{LiveAt: t0}, audit("token.create", t.ID))
		}},
		{"create embed session", func(ctx context.Context) error {
			es := session()
			pointers = []string{s.prefix + "ses:" + hexDigest(es.Digest)}
			return s.CreateEmbedSession(ctx, es, storage.SessionLimit{LiveAt: t0}, audit("session.create", robot.ID))
		}},
		{"delete user", func(ctx context.Context) error {
			_, err := s.DeleteUser(ctx, org, bot.ID, audit("user.delete", bot.ID))
			return err
		}},
	}
	// The Store reads the credential of a token it has met with an MGET
	// of the org's keys: on a Cluster, its user (name:<folded>) and its
	// record (trec:<id>).
	_, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: first.Digest})
	require.NoError(t, err)

	mv := startSlotMove(t, c, "o:"+org)
	base := s.orgBase(org)
	refused := func(where string) {
		t.Helper()
		before := mv.snapshot(base)
		for _, w := range writes {
			pointers = nil
			wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			err := w.run(wctx)
			cancel()
			require.Error(t, err, "%s, with the org record on the %s master", w.name, where)
			if moving(err) {
				for _, k := range pointers {
					assertNoKey(t, s, k, "%s refused, with the org record on the %s master", w.name, where)
				}
			}
		}
		assert.Equal(t, before, mv.snapshot(base), "the org's keys changed, with its record on the %s master", where)
	}

	mv.migrate(base+"users", base+"uid", base+"events", base+"name:robot")
	refused("first")
	mv.migrate(base + "org")
	refused("second")

	// A write go-redis would not send again, and reads of several of the
	// org's keys, which it sends again a few times (MaxRedirects), all
	// sent while the slot moves, are done when it ends.
	wrote, read := make(chan error, 1), make(chan error, 1)
	go func() {
		wrote <- s.CreateUser(ctx, user("dave"), storage.UserLimit{}, audit("user.create", "dave"))
	}()
	go func() {
		a, err := s.ReadAccess(ctx, storage.AccessQuery{Digest: first.Digest})
		if err == nil && a.Credential.Token.ID != first.ID {
			err = fmt.Errorf("read the credential of token %s", a.Credential.Token.ID)
		}
		read <- err
	}()
	listed := make(chan error, 1)
	go func() {
		page, err := s.ListUsers(ctx, org, storage.UserQuery{Limit: 10})
		if err == nil && (len(page.Users) < 2 || page.Users[len(page.Users)-1].FoldedUsername != "robot") {
			err = fmt.Errorf("listed %d users", len(page.Users))
		}
		listed <- err
	}()
	time.Sleep(200 * time.Millisecond) // longer than go-redis's redirects
	mv.finish()
	require.NoError(t, <-wrote, "create user sent while the slot moved")
	require.NoError(t, <-read, "read access sent while the slot moved")
	require.NoError(t, <-listed, "list users sent while the slot moved")
	for k := range mv.snapshot(base) {
		assert.True(t, strings.HasPrefix(k, "second "), "%s: after the move, on the first master", k)
	}

	second := token(robot, "third-token-value")
	require.NoError(t, s.SetInstances(ctx, org, robot.ID, config, audit("user.set_instances", robot.ID)))
	require.NoError(t, s.CreateUser(ctx, user("carol"), storage.UserLimit{}, audit("user.create", "carol")))
	require.NoError(t, s.CreateToken(ctx, second, storage.TokenLimit{LiveAt: t0}, audit("token.create", second.ID)))
	require.NoError(t, s.CreateEmbedSession(ctx, session(), storage.SessionLimit{LiveAt: t0}, audit("session.create", robot.ID)))
	_, err = s.DeleteUser(ctx, org, bot.ID, audit("user.delete", bot.ID))
	require.NoError(t, err)

	got, err := s.GetUser(ctx, org, "robot")
	require.NoError(t, err)
	assert.Equal(t, config, got.Instances)
	page, err := s.ListUsers(ctx, org, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	var names []string
	for _, u := range page.Users {
		names = append(names, u.FoldedUsername)
	}
	assert.Equal(t, []string{"carol", "dave", "robot"}, names)
	toks, err := s.ListTokens(ctx, org, robot.ID, t0)
	require.NoError(t, err)
	var ids []string
	for _, tk := range toks {
		ids = append(ids, tk.ID)
	}
	assert.ElementsMatch(t, []string{first.ID, second.ID}, ids)
	events, err := s.ListEvents(ctx, org, storage.EventQuery{Limit: 100})
	require.NoError(t, err)
	var actions []string
	for _, e := range events.Events {
		actions = append(actions, e.Action)
	}
	assert.Equal(t, []string{
		"user.delete", "session.create", "token.create", "user.create", "user.set_instances",
		"user.create", "token.create", "user.create", "user.create", "org.create",
	}, actions, "the org's audit trail, newest first")
}

// TestClusterFeedbackSlotMove moves the slot of the feedback's keys (one
// slot for every org) while a submission is sent: its script, which
// declares both keys, is refused while they are split between two
// masters, and is done once the move ends.
func TestClusterFeedbackSlotMove(t *testing.T) {
	c := clusterClient(t)
	s := newStore(t, c, false)
	ctx := t.Context()
	require.NoError(t, s.AddFeedback(ctx, storage.Feedback{ID: uuid.NewString(), PagePath: "/a", Text: "first", CreatedAt: time.Now()}))
	mv := startSlotMove(t, c, "fb")
	mv.migrate(s.prefix + "{fb}:h")
	done := make(chan error, 1)
	id := uuid.NewString()
	go func() {
		done <- s.AddFeedback(ctx, storage.Feedback{ID: id, PagePath: "/b", Text: "second", CreatedAt: time.Now()})
	}()
	time.Sleep(200 * time.Millisecond) // longer than go-redis's redirects
	mv.finish()
	require.NoError(t, <-done, "feedback sent while its slot moved")
	ok, err := c.HExists(ctx, s.prefix+"{fb}:h", id).Result()
	require.NoError(t, err)
	assert.True(t, ok, "the feedback sent while its slot moved is stored")
	n, err := c.LLen(ctx, s.prefix+"{fb}:q").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "the feedback's order")
}
