// Package redisstore is the Redis storage adapter: several orgadmin
// processes can share one Redis server or one Redis Cluster.
//
// All keys of one organization share one hash tag, so every change that
// spans several of them runs as one Lua script, atomically, on a single
// server and on a Cluster alike. Token and embed-session digests are looked
// up through pointer keys outside the org's slot; see the comment on the
// scripts for the layout and for the order in which a Cluster writes them.
//
// Round trips: on a single server, authenticating a token is one (two
// when the request names a user that does not exist, and the first time
// on records an earlier version wrote), on a Cluster two (three in those
// cases); every other method is one, except SetPrivileges, two (it reads
// the user's record, then writes it if it is still the one read), and
// that reserving and releasing the pointer keys of a token or a session
// on a Cluster adds one each. A page of users is one round trip however
// deep it starts (a sorted set read BYLEX from a keyset cursor).
//
// A Cluster may move an org's slot to another node while the Store
// serves: the org's scripts and reads wait for the move to end, within
// Options.Timeout (see Store.run).
//
// On a Cluster the pointer keys of a token or a session are reserved
// before the org's script stores it, so a process that dies between the
// two leaves them behind: they point at nothing and never authenticate.
// A creation of the same token value takes such a reservation over once
// it is older than the reservation grace (1 minute, or 10 times
// Options.Timeout when that is longer: no creation can still send its
// script then) and the token it names does not exist, so that a fixed
// value (a seeded token, a bootstrap token given again at a restart) is
// not refused for ever. The grace is counted between the two tokens'
// creation times, from the clocks of the servers that made them: servers
// whose clocks differ by more than the grace could take over the
// reservation of a creation still under way. A reservation written by an
// earlier version, which holds no time, is never taken over. See
// CreateToken.
//
// Upgrading: an upgrade from a version that keyed users by the earlier
// fold of their usernames (before orgadmin.FoldUsername was the Unicode
// simple case folding) must stop every process of that version, then call
// Store.Migrate once before the store serves, which re-keys those users.
// It is safe to run from several processes at once, and costs one round
// trip once done.
//
// Expiry is decided by the caller's clock, never by Redis: expired tokens
// and sessions are still returned by the lookups that the contract says do
// not check expiry. Redis key expiry only cleans up, a grace period after
// a record's own lifetime has passed.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/internal/bounded"
	"github.com/orgadmin/orgadmin/storage"
)

// Defaults of Options.
const (
	DefaultPrefix      = "orgadmin:"
	DefaultTimeout     = 2 * time.Second
	DefaultMaxFeedback = 100_000
	DefaultExpiryGrace = time.Hour
)

// Options configures a Store. The zero value of each field means its
// default.
type Options struct {
	// Prefix starts every key the Store writes (default "orgadmin:"), so
	// that several stores can share one Redis. It must not contain '{' or
	// '}', which would break the hash tags.
	Prefix string
	// Timeout bounds each operation, retries included (default 2 s). A
	// Redis that is down, slow or drops connections makes the operation
	// fail with an error once it has passed. On a Cluster, ten times it
	// (1 minute at least) is the reservation grace: the age past which a
	// token's reservation left by a dead creation is taken over (see
	// CreateToken). Stores sharing a Redis should use the same Timeout.
	Timeout time.Duration
	// MaxFeedback is how many feedback submissions the Store keeps; older
	// ones are dropped (default 100 000).
	MaxFeedback int
	// ExpiryGrace is how long Redis keeps the keys of a token or an embed
	// session after its lifetime has passed, counted from its creation
	// (default 1 hour). The caller's clock, not Redis, decides expiry; this
	// only bounds how long the dead keys stay.
	ExpiryGrace time.Duration
}

// Store is a storage.Store on Redis. Every call reads Redis, so several
// processes see each other's changes at once; all it keeps in process is
// where a token's records are (its org and user), which never changes.
type Store struct {
	c       redis.UniversalClient
	prefix  string
	timeout time.Duration
	maxFB   int
	grace   time.Duration
	// single is true on one server, where the pointer keys are written in
	// the same script as the org's keys. On a Cluster they live in other
	// slots and are written in order around it.
	single bool
	// step, when set (by tests), is called between the writes of a
	// Cluster-mode operation; an error stops the operation there, as a
	// crash would.
	step func(name string) error
	// locs is where the records of the tokens authenticated are.
	locs bounded.Map[storage.Digest, location]
	// reload, on a Cluster, has the client read the map of the slots
	// again (see unreached); nil on one server.
	reload func()
}

var _ storage.Store = (*Store)(nil)

// New returns a Store on c, which the caller owns and closes. c must be a
// *redis.Client (one server, or Sentinel failover) or a
// *redis.ClusterClient, created with ContextTimeoutEnabled so that
// Options.Timeout bounds each call; a ClusterClient must read from
// masters only (a replica lags: a token revoked would still work there
// for a moment), and a Sentinel client must not be ReplicaOnly. New does not contact Redis: a
// program calls Migrate once before the store serves, which re-keys what
// an earlier version stored (one GET once done).
func New(c redis.UniversalClient, opts Options) (*Store, error) {
	s := &Store{
		c:       c,
		prefix:  opts.Prefix,
		timeout: opts.Timeout,
		maxFB:   opts.MaxFeedback,
		grace:   opts.ExpiryGrace,
		locs:    bounded.Map[storage.Digest, location]{Max: maxLocations},
	}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if strings.ContainsAny(s.prefix, "{}") {
		return nil, fmt.Errorf("redisstore: prefix %q contains a brace", s.prefix)
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.maxFB <= 0 {
		s.maxFB = DefaultMaxFeedback
	}
	if s.grace <= 0 {
		s.grace = DefaultExpiryGrace
	}
	var ctxTimeouts bool
	switch c := c.(type) {
	case *redis.Client:
		s.single, ctxTimeouts = true, c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		o := c.Options()
		if o.ReadOnly { // which RouteByLatency and RouteRandomly set too
			return nil, errors.New("redisstore: the Cluster client must read from masters only (not ReadOnly, RouteByLatency or RouteRandomly): a replica lags its master, and would still show a token revoked or a user deleted")
		}
		ctxTimeouts = o.ContextTimeoutEnabled
		s.reload = func() { c.ReloadState(context.Background()) }
	default:
		return nil, fmt.Errorf("redisstore: unsupported client %T (want *redis.Client or *redis.ClusterClient)", c)
	}
	if !ctxTimeouts {
		return nil, errors.New("redisstore: the client must be created with ContextTimeoutEnabled, or a slow Redis could outlast the operation timeout")
	}
	return s, nil
}

// op bounds one operation by the Store's timeout.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// orgKey is the key of org's record, and KEYS[1] of the org's scripts.
func (s *Store) orgKey(org string) string {
	return s.prefix + "{o:" + org + "}:org"
}

func (s *Store) orgBase(org string) string {
	return s.prefix + "{o:" + org + "}:"
}

func single(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// run runs a script of org: once, unless it is resendable.
//
// On a Cluster the script declares, beside the org's record, the org's
// key "moving", which never exists. A script reaches keys it does not
// declare (they share the org's slot), and while the slot moves from one
// node to another Redis checks only the declared ones: a script would
// then run on whichever node holds its record and find there some of the
// org's keys and not others, failing half-way or, on the node the slot
// moves to, writing a key that the move then cannot bring over (BUSYKEY):
// two copies of the org. With a declared key missing on both nodes, each
// refuses the script before it runs (TRYAGAIN), and run sends it again
// (resendable or not, since it did not run) until the move is done or ctx
// ends (see again).
func (s *Store) run(ctx context.Context, sc *redis.Script, org string, args ...any) *redis.Cmd {
	if s.single {
		return s.runOnce(ctx, sc, []string{s.orgKey(org)}, args)
	}
	base := s.orgBase(org)
	keys := []string{base + "org", base + "moving"}
	for wait := firstMoveWait; ; {
		cmd := s.runOnce(ctx, sc, keys, args)
		if !again(ctx, cmd.Err(), &wait) {
			s.unreached(cmd.Err())
			return cmd
		}
	}
}

// unreached takes err, the error of an operation on a Cluster: when it
// says that a node did not answer (a connection refused, cut or timed
// out) or that the Cluster is down, the client reads its map of the
// slots again, in the background (ClusterClient.ReloadState; at most
// every 200 ms). go-redis reads the map again after a MOVED or ASK, which
// a master that died never sends, and otherwise only every
// ClusterStateReloadInterval (60 s by default): the requests for the
// slots of a master whose replica has taken over would fail until then.
// Every request reads its credential (ReadAccess), and every write runs
// a script (run), so both tell.
func (s *Store) unreached(err error) {
	if s.reload == nil || err == nil {
		return
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || redis.IsClusterDownError(err) {
		s.reload()
	}
}

// again reports whether to send again a command that failed with err,
// an answer by which a Cluster tells that it did not run the command
// because a slot the command reads is moving or has moved between nodes:
// TRYAGAIN while its keys are split between the two, which lasts as long
// as the move does; MOVED or ASK that go-redis did not follow within its
// few redirects, as it does not for an MGET before its map of the slots
// is read again (v9.22 routes MGET by slot from that map alone). It
// waits *wait first, or until ctx ends (then it returns false), and
// doubles *wait up to lastMoveWait.
func again(ctx context.Context, err error, wait *time.Duration) bool {
	if err == nil || !moving(err) {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(*wait):
	}
	*wait = min(2**wait, lastMoveWait)
	return true
}

// moving reports whether err is a Cluster's answer that a slot is moving
// or has moved (see again).
func moving(err error) bool {
	if redis.IsTryAgainError(err) {
		return true
	}
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	_, ok := redis.IsAskError(err)
	return ok
}

// The first and the longest wait of again.
const (
	firstMoveWait = 5 * time.Millisecond
	lastMoveWait  = 100 * time.Millisecond
)

// runOnce runs a script of org on keys: once, unless it is resendable.
func (s *Store) runOnce(ctx context.Context, sc *redis.Script, keys []string, args []any) *redis.Cmd {
	if resendable[sc] {
		return sc.Run(ctx, s.c, keys, args...)
	}
	return sc.Run(ctx, once{s.c}, keys, args...)
}

// resendable are the scripts that answer alike however often they run:
// the reads, and the writes that set a value whole. go-redis resends a
// command whose connection broke before its answer came (MaxRetries);
// any other script may have run then, and a second run would answer as
// if the first had not: the username taken, the user or token not found,
// a token's pointers released as if it had never been stored.
var resendable = map[*redis.Script]bool{
	getUserScript:      true,
	userByIDScript:     true,
	listUsersScript:    true,
	migrateRecsScript:  true,
	migrateOrgScript:   true,
	credentialScript:   true,
	listActivityScript: true,
	embedTargetScript:  true,
	setInstancesScript: true,
	setDucklingScript:  true,
	putDiveScript:      true,
}

// once is a redis.Scripter whose EVAL and EVALSHA go-redis never resends
// (a NOSCRIPT answer, which means the script did not run, still falls
// back to EVAL). A script whose answer was lost fails with the error of
// the connection.
type once struct{ redis.UniversalClient }

func (o once) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return o.eval(ctx, "eval", script, keys, args)
}

func (o once) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return o.eval(ctx, "evalsha", sha1, keys, args)
}

// eval sends the command name (EVAL or EVALSHA) of payload; args must be
// scalars, as go-redis sends them as they are.
func (o once) eval(ctx context.Context, name, payload string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, payload, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmd := redis.NewCmd(ctx, append(cmdArgs, args...)...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // routes the command to the keys' slot
	}
	_ = o.Process(ctx, onceCmd{cmd})
	return cmd
}

// onceCmd is a command go-redis does not resend.
type onceCmd struct{ *redis.Cmd }

// NoRetry implements redis.Cmder.
func (onceCmd) NoRetry() bool { return true }

// status maps the status a script returns to the contract's sentinels.
func status(op string, v any, err error) error {
	if err != nil {
		return fmt.Errorf("redisstore: %s: %w", op, err)
	}
	switch v {
	case "OK":
		return nil
	case "NOTFOUND":
		return storage.ErrNotFound
	case "EXISTS":
		return storage.ErrAlreadyExists
	case "LIMIT":
		return storage.ErrLimitExceeded
	case "CONFLICT":
		return storage.ErrConflict
	}
	return fmt.Errorf("redisstore: %s: unexpected reply %v", op, v)
}

// failed wraps a Redis error of op.
func failed(op string, err error) error {
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// ttl is how long Redis keeps a record that lives from created to expires:
// its lifetime plus the grace, in milliseconds.
func (s *Store) ttl(created, expires time.Time) int64 {
	life := max(expires.Sub(created), 0)
	return (life + s.grace).Milliseconds()
}

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rec := encode(orgDoc{ID: o.ID, Created: millis(o.CreatedAt)})
	if a != nil {
		v, err := s.run(ctx, createOrgScript, o.ID, withAudit(a, rec)...).Result()
		return status("create org", v, err)
	}
	ok, err := s.c.SetNX(ctx, s.orgKey(o.ID), rec, 0).Result()
	if err != nil {
		return failed("create org", err)
	}
	if !ok {
		return storage.ErrAlreadyExists
	}
	return nil
}

// GetOrg implements storage.Store.
func (s *Store) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.c.Get(ctx, s.orgKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return storage.Org{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.Org{}, failed("get org", err)
	}
	var d orgDoc
	if err := decode(v, &d); err != nil {
		return storage.Org{}, err
	}
	return storage.Org{ID: id, CreatedAt: fromMillis(d.Created)}, nil
}

// AddFeedback implements storage.Store. The Store keeps the newest
// Options.MaxFeedback submissions.
func (s *Store) AddFeedback(ctx context.Context, f storage.Feedback) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	doc := feedbackDoc{PagePath: f.PagePath, Text: f.Text, PageTitle: f.PageTitle, Source: f.Source, Created: millis(f.CreatedAt)}
	keys := []string{s.prefix + "{fb}:h", s.prefix + "{fb}:q"}
	for wait := firstMoveWait; ; {
		v, err := addFeedbackScript.Run(ctx, once{s.c}, keys, f.ID, encode(doc), s.maxFB).Result()
		if !again(ctx, err, &wait) {
			return status("add feedback", v, err)
		}
	}
}

// MarkSeeded implements storage.Store: the marks of an org are one set.
func (s *Store) MarkSeeded(ctx context.Context, org string, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	members := make([]any, len(keys))
	for i, k := range keys {
		members[i] = k
	}
	if err := s.c.SAdd(ctx, s.orgBase(org)+"seeded", members...).Err(); err != nil {
		return failed("mark seeded", err)
	}
	return nil
}

// SeedMarks implements storage.Store.
func (s *Store) SeedMarks(ctx context.Context, org string) ([]string, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	keys, err := s.c.SMembers(ctx, s.orgBase(org)+"seeded").Result()
	if err != nil {
		return nil, failed("seed marks", err)
	}
	return keys, nil
}

// Ping implements storage.Store: it reports whether Redis answers within
// the timeout (on a Cluster, every master).
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var err error
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
	} else {
		err = s.c.Ping(ctx).Err()
	}
	if err != nil {
		return failed("ping", err)
	}
	return nil
}
