package storagetest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/orgadmin/orgadmin/storage"
)

// The Model group drives a store through long random sequences of
// operations, each drawn from small pools of arguments (three orgs,
// usernames that differ only in case, reused token digests and ids, a
// clock that stands still or jumps to an expiry), and compares every
// answer, and every so often the whole state the store shows, with
// refStore: a plain reading of the contract. Hand-written subtests check
// one guarantee each; this finds what their combinations break.
//
// Each seed is a subtest of its own (Model/Seed3) on a fresh store; its
// operations depend on the seed alone (and on the answers of the store,
// which the reference checks), so a failure replays exactly. On the first
// mismatch the test fails with the seed, the operation's index and the
// operations that led to it.
//
// The environment scales a run:
//
//	ORGADMIN_MODEL_OPS    operations per seed (default: the store's, see ModelOps)
//	ORGADMIN_MODEL_SEEDS  the seeds: a list of numbers and ranges, "7" or "1-200,512"
//	ORGADMIN_MODEL_LOG    when set, a failure prints every operation of its seed,
//	                      not only the last 20
//
// With -short, one seed runs a few dozen operations.

// defaultModelOps is the number of operations per seed on a store that
// sets no ModelOps. With the default seeds, the group takes about 3 s
// under the race detector on SQLite or miniredis, and well under one on
// memory or a Redis server.
const defaultModelOps = 500

// defaultModelSeeds are the seeds a run uses without ORGADMIN_MODEL_SEEDS.
var defaultModelSeeds = []uint64{1, 2, 3, 4}

// modelEventSlack is how many events beyond the largest MaxPerOrg its
// writes gave an org may hold, as in testEventBound: the contract bounds
// the slack without saying by how much.
const modelEventSlack = 100

// modelRetentions are how long before the clock a run's writes drop
// events (their DropBefore), zero for never.
var modelRetentions = []time.Duration{0, time.Minute, 10 * time.Minute, time.Hour, 24 * time.Hour}

// modelCheckEvery is how many operations run between two comparisons of
// the whole state.
const modelCheckEvery = 50

// Option tunes Run: a KnownDefect, ModelOps or Groups.
type Option interface {
	apply(c *runConfig)
}

// runConfig is what Run's options set.
type runConfig struct {
	known    []KnownDefect
	modelOps int
	groups   []string // nil: every group
}

// Groups runs only the named groups of the suite ("Users", "Model", ...):
// for a second run of the suite on a store configured another way, which
// only some of the groups reach.
type Groups []string

func (g Groups) apply(c *runConfig) { c.groups = append(c.groups, g...) }

func (k KnownDefect) apply(c *runConfig) { c.known = append(c.known, k) }

// ModelOps sets how many operations each seed of the Model group runs on
// the store (default 500): fewer for a store that takes milliseconds per
// operation. ORGADMIN_MODEL_OPS overrides it.
type ModelOps int

func (n ModelOps) apply(c *runConfig) { c.modelOps = int(n) }

// modelTests returns the Model group for the configuration c: one
// subtest per seed.
func modelTests(t *testing.T, c runConfig) []subtest {
	ops := defaultModelOps
	if c.modelOps > 0 {
		ops = c.modelOps
	}
	seeds := defaultModelSeeds
	if testing.Short() {
		ops, seeds = min(ops, 40), seeds[:1]
	}
	if v := os.Getenv("ORGADMIN_MODEL_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ORGADMIN_MODEL_OPS=%q: want a positive number", v)
		}
		ops = n
	}
	if v := os.Getenv("ORGADMIN_MODEL_SEEDS"); v != "" {
		var err error
		if seeds, err = parseSeeds(v); err != nil {
			t.Fatalf("ORGADMIN_MODEL_SEEDS=%q: %v", v, err)
		}
	}
	tests := make([]subtest, len(seeds))
	for i, seed := range seeds {
		tests[i] = subtest{fmt.Sprintf("Seed%d", seed), func(t *testing.T, s storage.Store) {
			runModel(t, s, seed, ops)
		}}
	}
	return tests
}

// parseSeeds reads a list of seeds: numbers and ranges ("3-9"), comma
// separated.
func parseSeeds(v string) ([]uint64, error) {
	var seeds []uint64
	for part := range strings.SplitSeq(v, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil {
				return nil, err
			}
		}
		if b < a || b-a > 1_000_000 {
			return nil, fmt.Errorf("range %q", part)
		}
		for n := a; n <= b; n++ {
			seeds = append(seeds, n)
		}
	}
	return seeds, nil
}

// The pools the operations draw from.
var (
	// modelNames are usernames that fold, by pairs or threes, to six.
	modelNames = []string{"alice", "Alice", "ALICE", "bob", "Bob", "a_b", "A_B", "a.b", "Émile", "émile", "zoé", "ZOÉ"}
	// modelAfters are ListUsers cursors: folded names and names between.
	modelAfters = []string{"a", "a.b", "a_b", "alice", "b", "bob", "c", "émile", "zoé", "zz", "\u00ff"}
	// modelPrivileges are privilege lists, nil and empty among them.
	modelPrivileges = [][]string{nil, {}, {"a"}, {"a", "b"}, {"b", "a"}, {"member_management.view_all_members"}}
	modelConfigs    = []storage.InstanceConfig{configA, configB, {}, {
		ReadWrite:   storage.InstanceSide{Size: "giga", CooldownSeconds: 86400},
		ReadScaling: storage.InstanceSide{Size: "pulse", FlockSize: 64},
	}}
	modelDucklings = []string{"rw", "rs.0", "rs.1", "rs.2"}
	modelStates    = [][]byte{nil, []byte(`{}`), []byte(`{"tab":"overview","n":1}`), []byte(`{"é":["☃",null,true]}`)}
	modelResources = [][]storage.Resource{nil, {{URL: "md:sales", Alias: "sales"}}, {{URL: "md:a"}, {URL: "md:_share/b/c", Alias: "b"}}}
	// modelLifetimes are the lifetimes of tokens and sessions.
	modelLifetimes = []time.Duration{time.Millisecond, time.Second, time.Minute, 10 * time.Minute, time.Hour, 24 * time.Hour}
	modelActions   = []string{"org.create", "user.create", "user.grant_privilege", "instances.set", "user.delete", "token.create", "token.delete", "dive.register", "embed_session.create"}
	// modelDives are the Dive IDs of every org.
	modelDives = []string{"dive-1", "dive-2", "dive-3"}
	// modelSeedKeys are the keys MarkSeeded records.
	modelSeedKeys = []string{"user:alice", "user:bob", "token:ci", "dive:dive-1", "dive:dive-2", "é:☃"}
)

// modelRun is one seed's run: the store, the reference, what was made
// (to draw arguments from, in the order made) and the log of operations.
type modelRun struct {
	t    *testing.T
	s    storage.Store
	ref  *refStore
	seed uint64
	rng  *rand.Rand
	// check draws the arguments of the whole-state comparisons, apart
	// from rng, so that how often they run changes no operation.
	check *rand.Rand
	now   time.Time
	// retention is how long before the clock writes drop events; bounded
	// tells whether they bound an org's events (MaxPerOrg, drawn for each
	// write), and lazy whether the store may leave its trimming to a
	// cleanup, which the run does not call (it also drops the expired
	// tokens ReadAccess must still find).
	retention time.Duration
	bounded   bool
	lazy      bool

	orgs     []string
	markOrgs []string // orgs never made that MarkSeeded was given
	users    []storage.User
	tokens   []storage.Token
	sessions []storage.EmbedSession
	digests  int // digests minted so far

	log []string
	// stats counts the operations by name and outcome, for the log.
	stats map[string]int
}

// runModel runs ops random operations of seed on s.
func runModel(t *testing.T, s storage.Store, seed uint64, ops int) {
	m := &modelRun{
		t: t, s: s, ref: newRefStore(), seed: seed,
		rng:   rand.New(rand.NewPCG(seed, 0x6f7267)),     // #nosec G404 -- a test's operations, reproducible from the seed; nothing secret
		check: rand.New(rand.NewPCG(seed, 0x636865636b)), // #nosec G404 -- as rng
		now:   t0, stats: map[string]int{},
	}
	m.ref.clock = m.now
	for range 3 {
		m.orgs = append(m.orgs, m.uuid())
	}
	// Of the default seeds, two bound the events and two do not, and each
	// keeps them for another time.
	m.retention, m.bounded = modelRetentions[seed%uint64(len(modelRetentions))], seed%2 == 1
	_, m.lazy = s.(cleaner)
	for i := range ops {
		m.step(i)
		if (i+1)%modelCheckEvery == 0 || i == ops-1 {
			m.checkState(i)
		}
	}
	var counts []string
	for k, n := range m.stats {
		counts = append(counts, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(counts)
	t.Logf("seed %d: %d operations, clock at %s, events kept %s, bounded %v, %d found dropped; by outcome: %s",
		seed, ops, m.now.Format(time.RFC3339Nano), m.retention, m.bounded, m.ref.eventsGone, strings.Join(counts, ", "))
}

// step runs operation i.
func (m *modelRun) step(i int) {
	type op struct {
		weight int
		run    func() (string, error)
	}
	ops := []op{
		{3, m.createOrg}, {2, m.getOrg},
		{14, m.createUser}, {6, m.getUser}, {6, m.setPrivileges}, {4, m.setInstances}, {5, m.deleteUser},
		{6, m.listUsers}, {2, m.walkUsers},
		{14, m.createToken}, {12, m.readAccess}, {5, m.listTokens}, {7, m.deleteToken},
		{5, m.setDuckling}, {3, m.listActivity},
		{4, m.putDive}, {2, m.createDive}, {2, m.getDive}, {4, m.getEmbedTarget},
		{7, m.createSession}, {5, m.sessionByDigest},
		{2, m.markSeeded}, {2, m.seedMarks},
		{3, m.listEvents},
		{6, m.advance},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := m.rng.IntN(total)
	for _, o := range ops {
		if n -= o.weight; n < 0 {
			desc, err := o.run()
			m.log = append(m.log, fmt.Sprintf("%d: %s", i, desc))
			name, rest, _ := strings.Cut(desc, " ")
			if j := strings.LastIndex(rest, "-> "); j >= 0 {
				name += " " + strings.Fields(rest[j+3:])[0]
			}
			m.stats[name]++
			if err != nil {
				m.fail(i, err)
			}
			return
		}
	}
}

// fail ends the run at operation i with what the reference found.
func (m *modelRun) fail(i int, err error) {
	m.t.Helper()
	tail := m.log
	if os.Getenv("ORGADMIN_MODEL_LOG") == "" {
		tail = m.log[max(0, len(m.log)-20):]
	}
	m.t.Fatalf("model mismatch: seed %d, operation %d (clock %s):\n  %v\nthe last operations:\n  %s\nreplay: ORGADMIN_MODEL_SEEDS=%d ORGADMIN_MODEL_OPS=%d go test -run '/Model/Seed%d$'",
		m.seed, i, m.now.Format(time.RFC3339Nano), err, strings.Join(tail, "\n  "), m.seed, i+1, m.seed)
}

// uuid returns a version 4 UUID drawn from the run's generator.
func (m *modelRun) uuid() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], m.rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], m.rng.Uint64())
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuid.UUID(b).String()
}

// newDigest returns a digest never used before in the run.
func (m *modelRun) newDigest(kind string) storage.Digest {
	m.digests++
	return digest(fmt.Sprintf("model %d %s %d", m.seed, kind, m.digests))
}

func pick[E any](r *rand.Rand, s []E) E { return s[r.IntN(len(s))] }

// chance reports true with probability p.
func (m *modelRun) chance(p float64) bool { return m.rng.Float64() < p }

// org returns an org of the pool, created or not.
func (m *modelRun) org() string { return pick(m.rng, m.orgs) }

// user returns a user to act on: mostly one made before (deleted or not),
// at times one never made.
func (m *modelRun) user() storage.User {
	if len(m.users) == 0 || m.chance(0.1) {
		return storage.User{ID: m.uuid(), Org: m.org(), Username: "ghost", FoldedUsername: "ghost"}
	}
	return pickRecent(m.rng, m.users)
}

// pickRecent returns an element of s, favouring the last ones: the
// records made last are more often alive.
func pickRecent[E any](r *rand.Rand, s []E) E {
	n := len(s)
	return s[n-1-min(r.IntN(n), r.IntN(n))]
}

// audit returns an Audit of action by the system on target, at the
// clock's instant, in org: it drops the events older than the run's
// retention (mostly), and in a bounded run those beyond a small bound
// drawn for the write.
func (m *modelRun) audit(org, action, kind, id, username string) *storage.Audit {
	a := &storage.Audit{Event: storage.Event{
		ID: m.uuid(), Org: org, At: m.now, ActorUsername: "system",
		Action: action, TargetKind: kind, TargetID: id, TargetUsername: username,
	}}
	if m.retention > 0 && m.chance(0.9) {
		a.DropBefore = m.now.Add(-m.retention)
	}
	if m.bounded {
		a.MaxPerOrg = 3 + m.rng.IntN(18)
	}
	return a
}

// short abbreviates an id for the log.
func short(id string) string { return id[:min(8, len(id))] }

func shortDigest(d storage.Digest) string { return fmt.Sprintf("%x", d[:4]) }

func (m *modelRun) describeUser(u storage.User) string {
	return fmt.Sprintf("%s(%s@%s)", u.Username, short(u.ID), short(u.Org))
}

func (m *modelRun) createOrg() (string, error) {
	o := storage.Org{ID: m.org(), CreatedAt: m.now}
	a := m.audit(o.ID, "org.create", "org", o.ID, "")
	err := m.s.CreateOrg(m.t.Context(), o, a)
	desc := fmt.Sprintf("CreateOrg %s -> %s", short(o.ID), classify(err))
	return desc, m.ref.createOrg(o, a, err)
}

func (m *modelRun) getOrg() (string, error) {
	id := m.org()
	got, err := m.s.GetOrg(m.t.Context(), id)
	return fmt.Sprintf("GetOrg %s -> %s", short(id), classify(err)), m.ref.getOrg(id, got, err)
}

func (m *modelRun) createUser() (string, error) {
	name := pick(m.rng, modelNames)
	sa := m.chance(0.6)
	u := storage.User{
		ID: m.uuid(), Org: m.org(), Username: name, FoldedUsername: strings.ToLower(name),
		Description: pick(m.rng, []string{"", "a user", "ünïcode"}), IsServiceAccount: sa,
		Role: pick(m.rng, []string{"Member", "Admin"}), Privileges: slices.Clone(pick(m.rng, modelPrivileges)),
		CreatedAt: m.now.Add(-time.Duration(m.rng.IntN(3)) * time.Millisecond), Instances: pick(m.rng, modelConfigs),
	}
	if !sa {
		u.Email, u.FirstName, u.LastName = u.FoldedUsername+"@example.com", "First", "Last "+name
	}
	if m.chance(0.1) {
		// The ID of a user of the org made before, deleted or not.
		for _, v := range slices.Backward(m.users) {
			if v.Org == u.Org {
				u.ID = v.ID
				break
			}
		}
	}
	lim := storage.UserLimit{}
	if m.chance(0.3) {
		lim.Max = 1 + m.rng.IntN(6)
	}
	a := m.audit(u.Org, "user.create", "user", u.ID, u.Username)
	err := m.s.CreateUser(m.t.Context(), u, lim, a)
	desc := fmt.Sprintf("CreateUser %s sa=%v max=%d -> %s", m.describeUser(u), sa, lim.Max, classify(err))
	if err == nil {
		m.users = append(m.users, u)
	}
	e := m.ref.createUser(u, lim, a, err)
	scribble(u.Privileges, "spoiled") // the store keeps a copy
	return desc, e
}

func (m *modelRun) getUser() (string, error) {
	org, folded := m.org(), strings.ToLower(pick(m.rng, modelNames))
	if len(m.users) > 0 && m.chance(0.5) {
		org = pickRecent(m.rng, m.users).Org
	}
	got, err := m.s.GetUser(m.t.Context(), org, folded)
	desc := fmt.Sprintf("GetUser %s@%s -> %s", folded, short(org), classify(err))
	if e := m.ref.getUser(org, folded, got, err); e != nil {
		return desc, e
	}
	spoil(got)
	return desc, nil
}

func (m *modelRun) setPrivileges() (string, error) {
	u := m.user()
	from := pick(m.rng, modelPrivileges)
	if cur, ok := m.ref.user(u.Org, u.ID); ok && m.chance(0.7) {
		from = slices.Clone(cur.Privileges)
	}
	to := slices.Clone(pick(m.rng, modelPrivileges))
	a := m.audit(u.Org, "user.grant_privilege", "user", u.ID, u.Username)
	err := m.s.SetPrivileges(m.t.Context(), u.Org, u.ID, from, to, a)
	desc := fmt.Sprintf("SetPrivileges %s %q -> %q -> %s", m.describeUser(u), from, to, classify(err))
	e := m.ref.setPrivileges(u.Org, u.ID, from, to, a, err)
	scribble(to, "spoiled") // the store keeps a copy
	return desc, e
}

func (m *modelRun) setInstances() (string, error) {
	u := m.user()
	i := m.rng.IntN(len(modelConfigs))
	a := m.audit(u.Org, "instances.set", "user", u.ID, u.Username)
	err := m.s.SetInstances(m.t.Context(), u.Org, u.ID, modelConfigs[i], a)
	desc := fmt.Sprintf("SetInstances %s config%d -> %s", m.describeUser(u), i, classify(err))
	return desc, m.ref.setInstances(u.Org, u.ID, modelConfigs[i], a, err)
}

func (m *modelRun) deleteUser() (string, error) {
	u := m.user()
	a := m.audit(u.Org, "user.delete", "user", u.ID, u.Username)
	got, err := m.s.DeleteUser(m.t.Context(), u.Org, u.ID, a)
	desc := fmt.Sprintf("DeleteUser %s -> %s", m.describeUser(u), classify(err))
	return desc, m.ref.deleteUser(u.Org, u.ID, a, got, err)
}

// userQuery draws a ListUsers query from r.
func userQuery(r *rand.Rand) storage.UserQuery {
	q := storage.UserQuery{Limit: 1 + r.IntN(7)}
	switch r.IntN(4) {
	case 0:
		q.After = pick(r, modelAfters)
	case 1:
		q.Offset = r.IntN(8)
	}
	switch r.IntN(3) {
	case 0:
		q.ServiceAccount = ptr(true)
	case 1:
		q.ServiceAccount = ptr(false)
	}
	return q
}

// kept is the record a query's Into holds before the page.
var (
	keptUser  = storage.User{ID: "kept", Username: "kept", FoldedUsername: "kept"}
	keptToken = storage.Token{ID: "kept", Name: "kept"}
)

// into returns, at times, a slice to pass as a query's Into: kept, in an
// array with room (or not) whose elements beyond it hold garbage; nil
// otherwise.
func into[E any](m *modelRun, kept, garbage E) []E {
	if !m.chance(0.3) {
		return nil
	}
	array := make([]E, 1+m.rng.IntN(8))
	for i := range array {
		array[i] = garbage
	}
	array[0] = kept
	return array[:1]
}

// cutInto checks that got starts with kept, what the query's Into held,
// and returns the rest.
func cutInto[E any](got []E, kept E) ([]E, error) {
	if len(got) == 0 || !reflect.DeepEqual(got[0], kept) {
		return got, fmt.Errorf("the records do not follow what Into held: %+v", got)
	}
	return got[1:], nil
}

// spoil mutates what a store returned, once checked, as a caller may:
// a store that shares memory with its callers shows it in a later read.
func spoil(us ...storage.User) {
	for _, u := range us {
		scribble(u.Privileges, "spoiled")
	}
}

func (m *modelRun) listUsers() (string, error) {
	org, q := m.org(), userQuery(m.rng)
	q.Into = into(m, keptUser, storage.User{ID: "garbage"})
	got, err := m.s.ListUsers(m.t.Context(), org, q)
	desc := fmt.Sprintf("ListUsers %s %s into=%v -> %s %v", short(org), describe(q), q.Into != nil, classify(err), foldedNames(got.Users))
	if q.Into != nil && err == nil {
		var e error
		if got.Users, e = cutInto(got.Users, keptUser); e != nil {
			return desc, e
		}
	}
	if e := m.ref.listUsers(org, q, got, err); e != nil {
		return desc, e
	}
	spoil(got.Users...)
	return desc, nil
}

// walkUsers walks an org's users page by page, by After or by Offset.
func (m *modelRun) walkUsers() (string, error) {
	org := m.org()
	byOffset := m.chance(0.3)
	q := userQuery(m.rng)
	q.After, q.Offset = "", 0
	desc, err := m.walk(org, q, byOffset)
	return fmt.Sprintf("walk ListUsers %s byOffset=%v %s", short(org), byOffset, desc), err
}

// walk reads every page of q, checking each; it returns the names seen.
func (m *modelRun) walk(org string, q storage.UserQuery, byOffset bool) (string, error) {
	var seen []string
	for pages := 0; pages < 100; pages++ {
		got, err := m.s.ListUsers(m.t.Context(), org, q)
		if e := m.ref.listUsers(org, q, got, err); e != nil {
			return fmt.Sprint(seen), fmt.Errorf("page %d, query %s: %w", pages, describe(q), e)
		}
		seen = append(seen, foldedNames(got.Users)...)
		if err != nil || !got.More {
			return fmt.Sprint(seen), nil
		}
		if len(got.Users) == 0 {
			return fmt.Sprint(seen), fmt.Errorf("query %s: More with an empty page", describe(q))
		}
		if byOffset {
			q.Offset += len(got.Users)
		} else {
			q.After = got.Users[len(got.Users)-1].FoldedUsername
		}
	}
	return fmt.Sprint(seen), fmt.Errorf("the walk of %s does not end", short(org))
}

func (m *modelRun) createToken() (string, error) {
	u := m.user()
	t := storage.Token{
		ID: m.uuid(), Org: u.Org, UserID: u.ID, Digest: m.newDigest("token"),
		Name: pick(m.rng, []string{"ci", "bootstrap", "a token"}), Description: pick(m.rng, []string{"", "nightly"}),
		Type:      pick(m.rng, []string{"read_write", "read_scaling"}),
		CreatedAt: m.now.Add(-time.Duration(m.rng.IntN(3)) * time.Millisecond),
	}
	if m.chance(0.6) {
		t.ExpiresAt = m.now.Add(pick(m.rng, modelLifetimes))
	}
	reuse := ""
	if len(m.tokens) > 0 && m.chance(0.12) {
		t.Digest = pick(m.rng, m.tokens).Digest
		reuse = " (a digest used before)"
	}
	if len(m.tokens) > 0 && m.chance(0.06) {
		t.ID = pick(m.rng, m.tokens).ID
		reuse += " (an id used before)"
	}
	var lim storage.TokenLimit
	switch m.rng.IntN(3) {
	case 0:
		lim = storage.TokenLimit{Max: 1 + m.rng.IntN(4), LiveAt: m.now}
	case 1:
		lim = storage.TokenLimit{LiveAt: m.now}
	}
	a := m.audit(u.Org, "token.create", "token", t.ID, u.Username)
	err := m.s.CreateToken(m.t.Context(), t, lim, a)
	desc := fmt.Sprintf("CreateToken %s of %s digest %s expires %s max=%d%s -> %s",
		short(t.ID), m.describeUser(u), shortDigest(t.Digest), m.since(t.ExpiresAt), lim.Max, reuse, classify(err))
	if err == nil {
		m.tokens = append(m.tokens, t)
	}
	return desc, m.ref.createToken(t, lim, a, err)
}

// since describes the instant at from the run's clock.
func (m *modelRun) since(at time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return "now+" + at.Sub(m.now).String()
}

// digestToRead returns a token digest to present: mostly one used before.
func (m *modelRun) digestToRead() storage.Digest {
	if len(m.tokens) == 0 || m.chance(0.1) {
		return m.newDigest("unknown")
	}
	return pick(m.rng, m.tokens).Digest
}

// liveAt returns the instant a read of live tokens asks about: mostly
// the clock's, at times an earlier one (a token's expiry among them),
// at which a store may or may not still hold a token a creation let it
// delete.
func (m *modelRun) liveAt(r *rand.Rand) time.Time {
	switch r.IntN(8) {
	case 0:
		return m.now.Add(-pick(r, modelLifetimes))
	case 1:
		if len(m.tokens) > 0 {
			if t := pick(r, m.tokens); !t.ExpiresAt.IsZero() && t.ExpiresAt.Before(m.now) {
				return t.ExpiresAt.Add(-time.Duration(r.IntN(2)) * time.Millisecond)
			}
		}
	}
	return m.now
}

func (m *modelRun) readAccess() (string, error) {
	q := storage.AccessQuery{Digest: m.digestToRead(), LiveAt: m.liveAt(m.rng)}
	if m.chance(0.7) {
		q.Username = strings.ToLower(pick(m.rng, modelNames))
		q.Tokens = m.chance(0.6)
	} else {
		q.Tokens = m.chance(0.2)
	}
	q.Into = into(m, keptToken, storage.Token{ID: "garbage"})
	got, err := m.s.ReadAccess(m.t.Context(), q)
	desc := fmt.Sprintf("ReadAccess %s target %q tokens=%v at %s into=%v -> %s found=%v %v",
		shortDigest(q.Digest), q.Username, q.Tokens, m.since(q.LiveAt), q.Into != nil, classify(err), got.TargetFound, tokenIDs(got.Tokens))
	if q.Into != nil && got.Tokens != nil {
		var e error
		if got.Tokens, e = cutInto(got.Tokens, keptToken); e != nil {
			return desc, e
		}
	}
	if e := m.ref.readAccess(q, got, err); e != nil {
		return desc, e
	}
	spoil(got.Credential.User, got.Target)
	for i := range got.Tokens {
		got.Tokens[i].Name = "spoiled"
	}
	return desc, nil
}

func (m *modelRun) listTokens() (string, error) {
	u, at := m.user(), m.liveAt(m.rng)
	got, err := m.s.ListTokens(m.t.Context(), u.Org, u.ID, at)
	desc := fmt.Sprintf("ListTokens %s at %s -> %s %v", m.describeUser(u), m.since(at), classify(err), tokenIDs(got))
	if e := m.ref.listTokens(u.Org, u.ID, at, got, err); e != nil {
		return desc, e
	}
	for i := range got {
		got[i].Name = "spoiled"
	}
	return desc, nil
}

func (m *modelRun) deleteToken() (string, error) {
	u := m.user()
	id := m.uuid()
	if len(m.tokens) > 0 && m.chance(0.9) {
		t := pickRecent(m.rng, m.tokens)
		id = t.ID
		if m.chance(0.8) {
			u = storage.User{ID: t.UserID, Org: t.Org, Username: "owner"}
		}
	}
	r := storage.Revocation{At: m.now, KeepUntil: m.now.Add(pick(m.rng, modelLifetimes))}
	a := m.audit(u.Org, "token.delete", "token", id, u.Username)
	err := m.s.DeleteToken(m.t.Context(), u.Org, u.ID, id, r, a)
	desc := fmt.Sprintf("DeleteToken %s of %s keep %s -> %s", short(id), m.describeUser(u), m.since(r.KeepUntil), classify(err))
	return desc, m.ref.deleteToken(u.Org, u.ID, id, r, a, err)
}

func (m *modelRun) setDuckling() (string, error) {
	u := m.user()
	d := storage.Duckling{Org: u.Org, UserID: u.ID, ID: pick(m.rng, modelDucklings), Active: m.chance(0.5),
		At: m.now.Add(-time.Duration(m.rng.IntN(2000)) * time.Millisecond)}
	err := m.s.SetDuckling(m.t.Context(), d)
	desc := fmt.Sprintf("SetDuckling %s %s active=%v -> %s", m.describeUser(u), d.ID, d.Active, classify(err))
	return desc, m.ref.setDuckling(d, err)
}

func (m *modelRun) listActivity() (string, error) {
	org := m.org()
	got, err := m.s.ListActivity(m.t.Context(), org)
	desc := fmt.Sprintf("ListActivity %s -> %s %v", short(org), classify(err), activityNames(got))
	if e := m.ref.listActivity(org, got, err); e != nil {
		return desc, e
	}
	for _, a := range got {
		spoil(a.User)
		scribble(a.Ducklings, storage.Duckling{ID: "spoiled"})
	}
	return desc, nil
}

func (m *modelRun) createSession() (string, error) {
	u := m.user()
	es := storage.EmbedSession{
		Digest: m.newDigest("session"), Org: u.Org, DiveID: pick(m.rng, modelDives),
		Version: 1 + m.rng.IntN(3), UserID: u.ID, Username: u.Username,
		Resources: slices.Clone(pick(m.rng, modelResources)), InitialState: slices.Clone(pick(m.rng, modelStates)),
		AffinityKey: pick(m.rng, []string{"k1", "k2"}), CreatedAt: m.now,
		ExpiresAt: m.now.Add(pick(m.rng, modelLifetimes)),
	}
	if d, ok := m.ref.dives[refKey{es.Org, es.DiveID}]; ok && m.chance(0.8) {
		// A session of the Dive as stored, as the service mints it.
		es.Version, es.Resources = d.Version, slices.Clone(d.RequiredResources)
	}
	reuse := ""
	if len(m.sessions) > 0 && m.chance(0.12) {
		es.Digest = pick(m.rng, m.sessions).Digest
		reuse = " (a digest used before)"
	}
	var lim storage.SessionLimit
	switch m.rng.IntN(3) {
	case 0:
		lim = storage.SessionLimit{Max: 1 + m.rng.IntN(3), LiveAt: m.now}
	case 1:
		lim = storage.SessionLimit{Max: -m.rng.IntN(2), LiveAt: m.now}
	}
	a := m.audit(u.Org, "embed_session.create", "embed_session", es.DiveID, u.Username)
	err := m.s.CreateEmbedSession(m.t.Context(), es, lim, a)
	desc := fmt.Sprintf("CreateEmbedSession %s of %s expires %s max=%d%s -> %s",
		shortDigest(es.Digest), m.describeUser(u), m.since(es.ExpiresAt), lim.Max, reuse, classify(err))
	if err == nil {
		m.sessions = append(m.sessions, es)
	}
	e := m.ref.createSession(es, lim, a, err)
	// The store keeps a copy.
	scribble(es.Resources, storage.Resource{URL: "spoiled"})
	scribble(es.InitialState, 'X')
	return desc, e
}

func (m *modelRun) sessionByDigest() (string, error) {
	d := m.newDigest("unknown")
	if len(m.sessions) > 0 && m.chance(0.9) {
		d = pickRecent(m.rng, m.sessions).Digest
	}
	got, err := m.s.EmbedSessionByDigest(m.t.Context(), d)
	desc := fmt.Sprintf("EmbedSessionByDigest %s -> %s", shortDigest(d), classify(err))
	if e := m.ref.sessionByDigest(d, got, err); e != nil {
		return desc, e
	}
	scribble(got.Resources, storage.Resource{URL: "spoiled"})
	scribble(got.InitialState, 'X')
	return desc, nil
}

// diveOrg returns an org to put or read a Dive in: mostly one a user
// was made in.
func (m *modelRun) diveOrg() string {
	if len(m.users) > 0 && m.chance(0.5) {
		return pickRecent(m.rng, m.users).Org
	}
	return m.org()
}

func (m *modelRun) putDive() (string, error)    { return m.writeDive(false) }
func (m *modelRun) createDive() (string, error) { return m.writeDive(true) }

// writeDive stores a Dive with PutDive, or with CreateDive when create.
func (m *modelRun) writeDive(create bool) (string, error) {
	d := storage.Dive{
		ID: pick(m.rng, modelDives), Org: m.diveOrg(), Title: pick(m.rng, []string{"Sales", "Churn", "ünïcode ☃"}),
		Version: 1 + m.rng.IntN(3), RequiredResources: slices.Clone(pick(m.rng, modelResources)),
	}
	a := m.audit(d.Org, "dive.register", "dive", d.ID, "")
	write, name := m.s.PutDive, "PutDive"
	if create {
		write, name = m.s.CreateDive, "CreateDive"
	}
	err := write(m.t.Context(), d, a)
	desc := fmt.Sprintf("%s %s@%s v%d -> %s", name, d.ID, short(d.Org), d.Version, classify(err))
	e := m.ref.putDive(d, create, a, err)
	scribble(d.RequiredResources, storage.Resource{URL: "spoiled"}) // the store keeps a copy
	return desc, e
}

func (m *modelRun) getDive() (string, error) {
	org, id := m.diveOrg(), pick(m.rng, modelDives)
	got, err := m.s.GetDive(m.t.Context(), org, id)
	desc := fmt.Sprintf("GetDive %s@%s -> %s", id, short(org), classify(err))
	if e := m.ref.getDive(org, id, got, err); e != nil {
		return desc, e
	}
	scribble(got.RequiredResources, storage.Resource{URL: "spoiled"})
	return desc, nil
}

func (m *modelRun) getEmbedTarget() (string, error) {
	org, id, folded := m.diveOrg(), pick(m.rng, modelDives), strings.ToLower(pick(m.rng, modelNames))
	got, err := m.s.GetEmbedTarget(m.t.Context(), org, id, folded)
	desc := fmt.Sprintf("GetEmbedTarget %s %s@%s -> %s dive=%v user=%v", id, folded, short(org), classify(err), got.DiveFound, got.UserFound)
	if e := m.ref.embedTarget(org, id, folded, got, err); e != nil {
		return desc, e
	}
	scribble(got.Dive.RequiredResources, storage.Resource{URL: "spoiled"})
	spoil(got.User)
	return desc, nil
}

func (m *modelRun) markSeeded() (string, error) {
	org := m.org()
	if m.chance(0.1) {
		org = m.uuid() // an org never made: marks need none
		m.markOrgs = append(m.markOrgs, org)
	}
	var keys []string
	for _, i := range m.rng.Perm(len(modelSeedKeys))[:m.rng.IntN(4)] {
		keys = append(keys, modelSeedKeys[i])
	}
	err := m.s.MarkSeeded(m.t.Context(), org, keys)
	desc := fmt.Sprintf("MarkSeeded %s %q -> %s", short(org), keys, classify(err))
	e := m.ref.markSeeded(org, keys, err)
	scribble(keys, "spoiled") // the store keeps a copy
	return desc, e
}

func (m *modelRun) seedMarks() (string, error) {
	org := m.org()
	if len(m.markOrgs) > 0 && m.chance(0.2) {
		org = pick(m.rng, m.markOrgs)
	}
	got, err := m.s.SeedMarks(m.t.Context(), org)
	desc := fmt.Sprintf("SeedMarks %s -> %s %q", short(org), classify(err), got)
	if e := m.ref.seedMarks(org, got, err); e != nil {
		return desc, e
	}
	scribble(got, "spoiled")
	return desc, nil
}

// eventQuery draws a query of events from r: mostly all of them, at
// times by action or kind of target, and at times since an instant
// before now, as a caller filters out the expired events that linger.
func eventQuery(r *rand.Rand, now time.Time) storage.EventQuery {
	var q storage.EventQuery
	switch r.IntN(5) {
	case 0:
		q.Action = pick(r, modelActions)
	case 1:
		q.TargetKind = pick(r, []string{"org", "user", "token", "dive", "embed_session"})
	}
	if r.IntN(4) == 0 {
		q.Since = now.Add(-pick(r, modelLifetimes))
	}
	return q
}

func (m *modelRun) listEvents() (string, error) {
	org, q, limit := m.org(), eventQuery(m.rng, m.now), 1+m.rng.IntN(6)
	got, err := m.walkEvents(org, q, limit)
	desc := fmt.Sprintf("ListEvents %s action=%q kind=%q since %s by %d: %d events", short(org), q.Action, q.TargetKind, m.since(q.Since), limit, len(got))
	if err != nil {
		return desc, err
	}
	if err := m.ref.listEvents(org, q, got); err != nil {
		return desc, err
	}
	return desc, m.checkBound(org, got)
}

// checkBound checks that a listing of org's events holds no more than
// the bound its writes gave, give or take the slack; a store that may
// leave its trimming to a cleanup is not held to it here.
func (m *modelRun) checkBound(org string, got []storage.Event) error {
	if !m.bounded || m.lazy {
		return nil
	}
	if bound := m.ref.maxBound[org]; len(got) > bound+modelEventSlack {
		return fmt.Errorf("%d events listed in %s, beyond its bound %d and a slack of %d", len(got), short(org), bound, modelEventSlack)
	}
	return nil
}

// walkEvents reads every page of q, limit at a time, from the newest.
func (m *modelRun) walkEvents(org string, q storage.EventQuery, limit int) ([]storage.Event, error) {
	q.Limit = limit
	var all []storage.Event
	for range 10_000 {
		page, err := m.s.ListEvents(m.t.Context(), org, q)
		if err != nil {
			return nil, fmt.Errorf("ListEvents: %w", err)
		}
		if len(page.Events) > limit {
			return nil, fmt.Errorf("ListEvents: %d events in a page of %d", len(page.Events), limit)
		}
		all = append(all, page.Events...)
		if !page.More {
			return all, nil
		}
		if len(page.Events) == 0 {
			return nil, fmt.Errorf("ListEvents: More with an empty page")
		}
		q.BeforeSeq = page.Events[len(page.Events)-1].Seq
	}
	return nil, fmt.Errorf("ListEvents: the walk does not end")
}

// advance moves the clock: by a little, by a lot, or to the instant a
// token or a session expires, the boundary where it stops being live.
func (m *modelRun) advance() (string, error) {
	before := m.now
	switch m.rng.IntN(5) {
	case 0:
		m.now = m.now.Add(time.Millisecond)
	case 1:
		m.now = m.now.Add(time.Duration(m.rng.IntN(600_000)) * time.Millisecond)
	case 2:
		m.now = m.now.Add(pick(m.rng, modelLifetimes))
	default:
		var ends []time.Time
		for _, t := range m.tokens {
			if t.ExpiresAt.After(m.now) {
				ends = append(ends, t.ExpiresAt)
			}
		}
		for _, es := range m.sessions {
			if es.ExpiresAt.After(m.now) {
				ends = append(ends, es.ExpiresAt)
			}
		}
		if len(ends) > 0 {
			m.now = pick(m.rng, ends)
		}
	}
	m.ref.clock = m.now
	return fmt.Sprintf("clock +%s", m.now.Sub(before)), nil
}

// checkState compares the whole state the store shows with the
// reference: every org's users walked by cursor, every user and its
// tokens, every digest of a token or a session ever made, every org's
// activity and events.
func (m *modelRun) checkState(i int) {
	m.t.Helper()
	fail := func(what string, err error) {
		m.t.Helper()
		m.fail(i, fmt.Errorf("state after operation %d, %s: %w", i, what, err))
	}
	ctx := m.t.Context()
	for _, org := range m.orgs {
		q := storage.UserQuery{Limit: 1 + m.check.IntN(4)}
		if m.check.IntN(3) == 0 {
			q.ServiceAccount = ptr(m.check.IntN(2) == 0)
		}
		if _, err := m.walk(org, q, false); err != nil {
			fail("users of "+short(org), err)
		}
		acts, err := m.s.ListActivity(ctx, org)
		if err := m.ref.listActivity(org, acts, err); err != nil {
			fail("activity of "+short(org), err)
		}
		q2 := eventQuery(m.check, m.now)
		events, err := m.walkEvents(org, q2, 1+m.check.IntN(8))
		if err == nil {
			err = m.ref.listEvents(org, q2, events)
		}
		if err == nil {
			err = m.checkBound(org, events)
		}
		if err != nil {
			fail("events of "+short(org), err)
		}
		for _, id := range modelDives {
			d, err := m.s.GetDive(ctx, org, id)
			if err := m.ref.getDive(org, id, d, err); err != nil {
				fail("dive "+id+" of "+short(org), err)
			}
		}
	}
	for _, org := range append(m.orgs, m.markOrgs...) {
		marks, err := m.s.SeedMarks(ctx, org)
		if err := m.ref.seedMarks(org, marks, err); err != nil {
			fail("marks of "+short(org), err)
		}
	}
	for _, u := range m.users {
		if _, ok := m.ref.user(u.Org, u.ID); !ok {
			continue
		}
		got, err := m.s.GetUser(ctx, u.Org, u.FoldedUsername)
		if err := m.ref.getUser(u.Org, u.FoldedUsername, got, err); err != nil {
			fail("user "+m.describeUser(u), err)
		}
		at := m.liveAt(m.check)
		toks, err := m.s.ListTokens(ctx, u.Org, u.ID, at)
		if err := m.ref.listTokens(u.Org, u.ID, at, toks, err); err != nil {
			fail("tokens at "+m.since(at)+" of "+m.describeUser(u), err)
		}
	}
	read := make(map[storage.Digest]bool, len(m.tokens))
	for _, t := range m.tokens {
		if read[t.Digest] {
			continue
		}
		read[t.Digest] = true
		q := storage.AccessQuery{Digest: t.Digest, LiveAt: m.now}
		got, err := m.s.ReadAccess(ctx, q)
		if err := m.ref.readAccess(q, got, err); err != nil {
			fail("digest "+shortDigest(t.Digest)+" of token "+short(t.ID), err)
		}
	}
	for _, es := range m.sessions {
		if read[es.Digest] {
			continue
		}
		read[es.Digest] = true
		got, err := m.s.EmbedSessionByDigest(ctx, es.Digest)
		if err := m.ref.sessionByDigest(es.Digest, got, err); err != nil {
			fail("session "+shortDigest(es.Digest), err)
		}
	}
}
