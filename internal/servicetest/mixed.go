package servicetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// Shape of testMixedOperations.
const (
	workers          = 4
	accountsOfWorker = 2
	// maxKnownTokens makes a worker revoke rather than create once an
	// account holds that many tokens it knows of.
	maxKnownTokens = 8
)

// configs are the instance configurations the workers PUT, as the API
// answers them: each differs from the others in every side, so a mix of
// two is none of them.
var configs = []string{
	`{"read_write":{"instance_size":"jumbo","cooldown_seconds":120},"read_scaling":{"instance_size":"mega","flock_size":3,"cooldown_seconds":400}}`,
	`{"read_write":{"instance_size":"pulse"},"read_scaling":{"instance_size":"giga","flock_size":7,"cooldown_seconds":900}}`,
	`{"read_write":{"instance_size":"giga","cooldown_seconds":3600},"read_scaling":{"instance_size":"pulse","flock_size":0}}`,
	`{"read_write":{"instance_size":"mega","cooldown_seconds":61},"read_scaling":{"instance_size":"jumbo","flock_size":12,"cooldown_seconds":62}}`,
	`{"read_write":{"instance_size":"standard","cooldown_seconds":7200},"read_scaling":{"instance_size":"standard","flock_size":64,"cooldown_seconds":86400}}`,
}

// defaultConfig is the configuration of a new user.
const defaultConfig = `{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`

// Workers send a mix of requests about accounts of their own while the
// network fails in every way of faults, one after the other, with
// healthy spells between. Each answer must be 200 with its exact body or
// the 500 of a store failure, unless earlier answers left the outcome
// open (after a 500 a user may or may not exist, so creating it again may
// find the name taken). Afterwards, with the network healthy, the stored
// state is read directly and must be whole: see check.
func testMixedOperations(t *testing.T, e *env) {
	seed := uint64(time.Now().UnixNano()) // #nosec G115 -- any bits make a seed
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0)) // #nosec G404 -- a test's operation mix, replayable from its seed
	var probs problems
	shared := &sharedConfig{sent: map[string]bool{canonical(defaultConfig): true}}
	_, err := e.direct.CreateServiceAccount(t.Context(), e.admin, orgadmin.CreateServiceAccountInput{Username: "shared"})
	require.NoError(t, err)

	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = &worker{e: e, probs: &probs, shared: shared, rng: rand.New(rand.NewPCG(seed, uint64(i)+1))} // #nosec G115 G404 -- i is small; a replayable test mix
		for j := range accountsOfWorker {
			ws[i].accounts = append(ws[i].accounts, &account{
				name:    fmt.Sprintf("w%d_a%d", i, j),
				state:   absent,
				configs: map[string]bool{canonical(defaultConfig): true},
			})
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(stop)
		}()
	}

	// The plan: every fault for a spell, and short ones too, many of them,
	// which strike requests part-way more often than long spells do.
	between := func(min, max time.Duration) time.Duration {
		return min + time.Duration(rng.Int64N(int64(max-min)))
	}
	type spell struct {
		f                fault
		healthy, faulted time.Duration
	}
	var plan []spell
	fs := faults(e.timeout)
	for _, f := range fs {
		plan = append(plan, spell{f, between(150*time.Millisecond, 400*time.Millisecond), between(200*time.Millisecond, 500*time.Millisecond)})
	}
	for range 3 {
		f := fault{name: "server gone briefly", off: true}
		plan = append(plan, spell{f, between(100*time.Millisecond, 300*time.Millisecond), between(10*time.Millisecond, e.timeout/2)})
	}
	for range 12 {
		f := fs[rng.IntN(len(fs))]
		plan = append(plan, spell{f, between(20*time.Millisecond, 60*time.Millisecond), between(5*time.Millisecond, 40*time.Millisecond)})
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	faultErr := func() error {
		for _, sp := range plan {
			time.Sleep(sp.healthy)
			if err := e.inject(sp.f); err != nil {
				return err
			}
			time.Sleep(sp.faulted)
			if err := e.heal(sp.f); err != nil {
				return err
			}
		}
		time.Sleep(300 * time.Millisecond)
		return nil
	}()
	close(stop)
	wg.Wait()
	require.NoError(t, faultErr)
	var sent, succeeded int
	for _, w := range ws {
		sent, succeeded = sent+w.sent, succeeded+w.succeeded
	}
	t.Logf("%d requests while the faults came and went, %d answered 200", sent, succeeded)
	probs.report(t)

	require.Equal(t, http.StatusOK, e.waitFor(http.MethodGet, "/healthz").status, "/healthz after the faults")
	for _, w := range ws {
		for _, a := range w.accounts {
			t.Run("after/"+a.name, func(t *testing.T) { check(t, e, a) })
		}
	}
	c, err := e.direct.GetInstanceConfig(t.Context(), e.admin, "shared")
	require.NoError(t, err)
	b, _ := json.Marshal(configJSON(c))
	assert.True(t, shared.sent[canonical(string(b))], "the configuration of the account all workers set is %s, which none sent", b)
	page, err := e.direct.ListUsers(t.Context(), e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(1000)})
	require.NoError(t, err)
	assert.Equal(t, len(page.Users), page.TotalCount, "users listed and counted")
}

// presence is what a worker's answers prove about one of its accounts.
type presence int

const (
	unknown presence = iota
	present
	absent
)

func (p presence) String() string { return [...]string{"unknown", "present", "absent"}[p] }

// account is a worker's record of one of its accounts (service accounts
// named by the worker; no one else touches them). seq numbers the requests
// about it, so that what an answer proves can be placed in time.
type account struct {
	name  string
	state presence
	seq   int
	// deletes lists the seq of every deletion requested, whatever its
	// answer; gone lists each seq at which an answer proved the account
	// absent.
	deletes []int
	gone    []int
	// configs holds every configuration sent (canonical JSON), and the
	// default.
	configs  map[string]bool
	tokens   []*knownToken
	sessions []*knownSession
	// lostTokens counts token creations that failed: each may have
	// stored a token whose value no one knows.
	lostTokens int
}

// knownToken is a token whose value the worker was given.
type knownToken struct {
	value, id string
	seq       int
	// revoking: its deletion was requested; revoked: and answered 200.
	revoking, revoked bool
}

// knownSession is an embed session whose value the worker was given.
type knownSession struct {
	value string
	seq   int
}

// after reports whether one of seqs is after seq.
func after(seqs []int, seq int) bool {
	return len(seqs) > 0 && seqs[len(seqs)-1] > seq
}

// mustWork reports whether what was created at seq is certainly still
// there: no deletion of the account was requested since.
func (a *account) mustWork(seq int) bool { return !after(a.deletes, seq) }

// mustFail reports whether what was created at seq is certainly gone: an
// answer since proved the account absent.
func (a *account) mustFail(seq int) bool { return after(a.gone, seq) }

func (a *account) tokenMustWork(tk *knownToken) bool { return a.mustWork(tk.seq) && !tk.revoking }
func (a *account) tokenMustFail(tk *knownToken) bool { return a.mustFail(tk.seq) || tk.revoked }

// problems collects what the workers saw go wrong.
type problems struct {
	mu   sync.Mutex
	list []string
}

func (p *problems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

func (p *problems) report(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range p.list {
		if i == 20 {
			t.Errorf("and %d more", len(p.list)-i)
			break
		}
		t.Error(s)
	}
}

// sharedConfig records the configurations sent for the account every
// worker sets.
type sharedConfig struct {
	mu   sync.Mutex
	sent map[string]bool
}

// worker sends requests about its accounts, one at a time, and checks
// each answer against what earlier answers proved.
type worker struct {
	e        *env
	probs    *problems
	shared   *sharedConfig
	rng      *rand.Rand
	accounts []*account
	// sent counts the requests sent, succeeded those answered 200.
	sent, succeeded int
}

func (w *worker) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch w.rng.IntN(20) {
		case 0, 1:
			w.sharedConfig()
		case 2:
			w.listUsers()
		default:
			w.step(w.accounts[w.rng.IntN(len(w.accounts))])
		}
		time.Sleep(time.Duration(w.rng.IntN(5)) * time.Millisecond)
	}
}

// step sends one request about a, chosen by what is known of it.
func (w *worker) step(a *account) {
	switch a.state {
	case absent:
		w.createUser(a)
		return
	case unknown:
		if w.rng.IntN(2) == 0 {
			w.createUser(a)
		} else {
			w.deleteUser(a)
		}
		return
	}
	var live []*knownToken
	for _, tk := range a.tokens {
		if !tk.revoking {
			live = append(live, tk)
		}
	}
	switch r := w.rng.IntN(10); {
	case len(live) > 0 && (r == 0 || len(live) >= maxKnownTokens):
		w.deleteToken(a, live[w.rng.IntN(len(live))])
	case r <= 2:
		w.createToken(a)
	case r <= 4:
		w.putConfig(a)
	case r == 5:
		w.getConfig(a)
	case r == 6:
		w.createSession(a)
	case r == 7:
		w.listTokens(a)
	default:
		w.deleteUser(a)
	}
}

// send sends one request about a and returns the answer and the request's
// seq. An answer that is neither 200 nor the 500 of a store failure is
// returned for the caller to judge; no answer at all is a problem.
func (w *worker) send(a *account, method, path, body string) (answer, int) {
	a.seq++
	return w.do(method, path, body), a.seq
}

// do sends one request and counts it; no answer at all is a problem.
func (w *worker) do(method, path, body string) answer {
	ans := w.e.do(method, path, body)
	w.sent++
	if ans.status == http.StatusOK {
		w.succeeded++
	}
	if ans.err != nil {
		w.probs.add("%s %s: %s", method, path, ans)
	}
	return ans
}

// unexpected records an answer that no earlier answer allows.
func (w *worker) unexpected(a *account, what string, ans answer) {
	w.probs.add("%s, account %s %s: unexpected answer %s", what, a.name, a.state, ans)
}

// sawPresent records an answer that proves a present; it is a problem
// when a was known absent.
func (w *worker) sawPresent(a *account, what string, ans answer) {
	if a.state == absent {
		w.probs.add("%s: %s is gone, yet the API answered %s", what, a.name, ans)
	}
	a.state = present
}

// sawAbsent records an answer that proves a absent at seq; it is a
// problem when a was known present.
func (w *worker) sawAbsent(a *account, seq int, what string, ans answer) {
	if a.state == present {
		w.probs.add("%s: %s exists, yet the API answered %s", what, a.name, ans)
	}
	a.state = absent
	a.gone = append(a.gone, seq)
}

const taken = `{"message":"Bad Request","code":"BAD_REQUEST","issues":[{"message":"Username is already taken","path":["username"],"code":"already_exists"}]}`

func (w *worker) createUser(a *account) {
	ans, seq := w.send(a, http.MethodPost, "/v1/users", `{"username":"`+a.name+`"}`)
	switch {
	case ans.is(http.StatusOK, `{"username":"`+a.name+`"}`):
		if a.state == present {
			w.probs.add("create user: %s exists, yet its creation succeeded", a.name)
		}
		a.state = present
		a.gone = append(a.gone, seq) // it was absent until then
	case ans.is(http.StatusBadRequest, taken):
		if a.state == absent {
			w.probs.add("create user: %s is gone, yet the API answered %s", a.name, ans)
		}
		a.state = present
	case ans.failed() || ans.err != nil:
		a.state = unknown
	default:
		w.unexpected(a, "create user", ans)
	}
}

func (w *worker) deleteUser(a *account) {
	a.deletes = append(a.deletes, a.seq+1)
	ans, seq := w.send(a, http.MethodDelete, "/v1/users/"+a.name, "")
	switch {
	case ans.is(http.StatusOK, `{"username":"`+a.name+`"}`):
		if a.state == absent {
			w.probs.add("delete user: %s is gone, yet its deletion succeeded", a.name)
		}
		a.state = absent
		a.gone = append(a.gone, seq)
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		w.sawAbsent(a, seq, "delete user", ans)
	case ans.failed() || ans.err != nil:
		a.state = unknown
	default:
		w.unexpected(a, "delete user", ans)
	}
}

func (w *worker) createToken(a *account) {
	name := fmt.Sprint("t", a.seq+1)
	ans, seq := w.send(a, http.MethodPost, "/v1/users/"+a.name+"/tokens", `{"name":"`+name+`"}`)
	switch {
	case ans.err == nil && ans.status == http.StatusOK:
		var tok struct {
			Token string `json:"token"`
			ID    string `json:"id"`
		}
		_ = json.Unmarshal(ans.body, &tok)
		if !validToken(ans, name) {
			w.unexpected(a, "create token", ans)
			return
		}
		w.sawPresent(a, "create token", ans)
		a.tokens = append(a.tokens, &knownToken{value: tok.Token, id: tok.ID, seq: seq})
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		w.sawAbsent(a, seq, "create token", ans)
	case ans.failed() || ans.err != nil:
		a.lostTokens++
	default:
		w.unexpected(a, "create token", ans)
	}
}

// validToken reports whether a is the 200 of a token creation named
// name.
func validToken(a answer, name string) bool {
	var tok map[string]any
	if json.Unmarshal(a.body, &tok) != nil {
		return false
	}
	value, _ := tok["token"].(string)
	id, _ := tok["id"].(string)
	created, _ := tok["created_ts"].(string)
	if !strings.HasPrefix(value, "oat_") || id == "" || created == "" {
		return false
	}
	for _, k := range []string{"token", "id", "created_ts"} {
		delete(tok, k)
	}
	return assert.ObjectsAreEqual(map[string]any{"name": name, "read_only": false, "token_type": "read_write"}, tok)
}

func (w *worker) deleteToken(a *account, tk *knownToken) {
	wasRevoking := tk.revoking
	tk.revoking = true
	ans, _ := w.send(a, http.MethodDelete, "/v1/users/"+a.name+"/tokens/"+tk.id, "")
	switch {
	case ans.is(http.StatusOK, `{}`):
		if a.tokenMustFail(tk) {
			w.probs.add("delete token: a token of %s that cannot exist any more was deleted", a.name)
		}
		w.sawPresent(a, "delete token", ans)
		tk.revoked = true
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		// The token or the account is gone: which, the answer does not say.
		if a.state == present && a.mustWork(tk.seq) && !wasRevoking {
			w.probs.add("delete token: a live token of %s was not found: %s", a.name, ans)
		}
	case ans.failed() || ans.err != nil:
	default:
		w.unexpected(a, "delete token", ans)
	}
}

func (w *worker) putConfig(a *account) {
	body := configs[w.rng.IntN(len(configs))]
	a.configs[canonical(body)] = true
	ans, seq := w.send(a, http.MethodPut, "/v1/users/"+a.name+"/instances", `{"config":`+body+`}`)
	switch {
	case ans.is(http.StatusOK, body):
		w.sawPresent(a, "set instances", ans)
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		w.sawAbsent(a, seq, "set instances", ans)
	case ans.failed() || ans.err != nil:
	default:
		w.unexpected(a, "set instances", ans)
	}
}

func (w *worker) getConfig(a *account) {
	ans, seq := w.send(a, http.MethodGet, "/v1/users/"+a.name+"/instances", "")
	switch {
	case ans.err == nil && ans.status == http.StatusOK:
		if !a.configs[canonical(string(ans.body))] {
			w.probs.add("get instances: %s has a configuration no one sent: %s", a.name, ans.body)
		}
		w.sawPresent(a, "get instances", ans)
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		w.sawAbsent(a, seq, "get instances", ans)
	case ans.failed() || ans.err != nil:
	default:
		w.unexpected(a, "get instances", ans)
	}
}

func (w *worker) createSession(a *account) {
	ans, seq := w.send(a, http.MethodPost, "/v1/dives/"+w.e.dive+"/embed-session", `{"username":"`+a.name+`"}`)
	var s struct {
		Session string `json:"session"`
	}
	switch {
	case ans.err == nil && ans.status == http.StatusOK && json.Unmarshal(ans.body, &s) == nil &&
		strings.HasPrefix(s.Session, "oas_") && ans.is(http.StatusOK, `{"session":"`+s.Session+`"}`):
		w.sawPresent(a, "create embed session", ans)
		a.sessions = append(a.sessions, &knownSession{value: s.Session, seq: seq})
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		w.sawAbsent(a, seq, "create embed session", ans)
	case ans.failed() || ans.err != nil:
	default:
		w.unexpected(a, "create embed session", ans)
	}
}

// listUsers lists every user and checks that the worker's accounts known
// to exist are listed and those known to be gone are not. (The count is
// checked at the end only: with creations running, a store may count and
// list at two instants, as MongoDB does without a transaction.)
func (w *worker) listUsers() {
	ans := w.do(http.MethodGet, "/v1/users?limit=1000", "")
	var page struct {
		Users []struct {
			Username string `json:"username"`
		} `json:"users"`
	}
	switch {
	case ans.failed():
		return
	case ans.err != nil || ans.status != http.StatusOK || json.Unmarshal(ans.body, &page) != nil:
		w.probs.add("list users: unexpected answer %s", ans)
		return
	}
	listed := make(map[string]bool, len(page.Users))
	for _, u := range page.Users {
		listed[u.Username] = true
	}
	for _, a := range w.accounts {
		if a.state == present && !listed[a.name] || a.state == absent && listed[a.name] {
			w.probs.add("list users: %s is %s, and listed: %v", a.name, a.state, listed[a.name])
		}
	}
}

func (w *worker) listTokens(a *account) {
	ans, seq := w.send(a, http.MethodGet, "/v1/users/"+a.name+"/tokens", "")
	var list struct {
		Tokens []struct {
			ID string `json:"id"`
		} `json:"tokens"`
	}
	switch {
	case ans.err == nil && ans.status == http.StatusOK && json.Unmarshal(ans.body, &list) == nil:
		w.sawPresent(a, "list tokens", ans)
		listed := make(map[string]bool)
		for _, tk := range list.Tokens {
			listed[tk.ID] = true
		}
		known := 0
		for _, tk := range a.tokens {
			if listed[tk.id] {
				known++
			}
			switch {
			case a.tokenMustWork(tk) && !listed[tk.id]:
				w.probs.add("list tokens: a live token of %s is not listed", a.name)
			case a.tokenMustFail(tk) && listed[tk.id]:
				w.probs.add("list tokens: a token of %s that cannot exist any more is listed", a.name)
			}
		}
		if unknown := len(listed) - known; unknown > a.lostTokens {
			w.probs.add("list tokens: %s has %d tokens no one was given, of %d creations that failed", a.name, unknown, a.lostTokens)
		}
	case ans.status == http.StatusNotFound && ans.code() == "NOT_FOUND":
		w.sawAbsent(a, seq, "list tokens", ans)
	case ans.failed() || ans.err != nil:
	default:
		w.unexpected(a, "list tokens", ans)
	}
}

// sharedConfig sets or reads the configuration of the account every
// worker sets.
func (w *worker) sharedConfig() {
	if w.rng.IntN(2) == 0 {
		body := configs[w.rng.IntN(len(configs))]
		w.shared.mu.Lock()
		w.shared.sent[canonical(body)] = true
		w.shared.mu.Unlock()
		ans := w.do(http.MethodPut, "/v1/users/shared/instances", `{"config":`+body+`}`)
		if !ans.is(http.StatusOK, body) && !ans.failed() {
			w.probs.add("set instances of shared: unexpected answer %s", ans)
		}
		return
	}
	ans := w.do(http.MethodGet, "/v1/users/shared/instances", "")
	switch {
	case ans.failed():
	case ans.err == nil && ans.status == http.StatusOK:
		w.shared.mu.Lock()
		ok := w.shared.sent[canonical(string(ans.body))]
		w.shared.mu.Unlock()
		if !ok {
			w.probs.add("get instances of shared: a configuration no one sent: %s", ans.body)
		}
	default:
		w.probs.add("get instances of shared: unexpected answer %s", ans)
	}
}

// canonical returns the JSON document s in a canonical form, for
// comparison.
func canonical(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "invalid JSON: " + s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// check reads a, with the network healthy, through the direct Service, and
// requires that what is stored is whole and agrees with every answer the
// worker got.
func check(t *testing.T, e *env, a *account) {
	ctx := t.Context()
	u, err := e.direct.GetUser(ctx, "acme", a.name)
	there := err == nil
	if !there {
		require.ErrorIs(t, err, orgadmin.ErrNotFound)
	}
	switch a.state {
	case present:
		require.True(t, there, "the answers proved %s present; it is gone", a.name)
	case absent:
		require.False(t, there, "the answers proved %s gone; it is there", a.name)
	}
	checkTrail(t, e, a.name, there)
	page, err := e.direct.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(1000)})
	require.NoError(t, err)
	listed := slices.ContainsFunc(page.Users, func(lu orgadmin.User) bool { return lu.Username == a.name })
	require.Equal(t, there, listed, "%s: found by name %v, listed %v", a.name, there, listed)

	authenticates := func(tk *knownToken) bool {
		c, err := e.direct.Authenticate(ctx, tk.value)
		if err != nil {
			require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
			return false
		}
		require.True(t, there && c.UserID() == u.ID, "a token of %s authenticates as %s/%s", a.name, c.Username(), c.UserID())
		return true
	}
	resolves := func(s *knownSession) bool {
		es, err := e.direct.ResolveEmbedSession(ctx, s.value)
		if err != nil {
			require.ErrorIs(t, err, orgadmin.ErrNotFound)
			return false
		}
		require.True(t, there && es.Username == a.name, "a session of %s resolves for %s", a.name, es.Username)
		return true
	}

	if !there {
		for _, tk := range a.tokens {
			require.False(t, authenticates(tk), "a token of %s, which is gone, authenticates", a.name)
		}
		for _, s := range a.sessions {
			require.False(t, resolves(s), "a session of %s, which is gone, resolves", a.name)
		}
		_, err := e.direct.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: a.name})
		require.NoError(t, err, "%s is gone, yet its name cannot be created again", a.name)
		toks, err := e.direct.ListTokens(ctx, e.admin, a.name)
		require.NoError(t, err)
		require.Empty(t, toks, "%s created again has tokens", a.name)
		c, err := e.direct.GetInstanceConfig(ctx, e.admin, a.name)
		require.NoError(t, err)
		b, _ := json.Marshal(configJSON(c))
		require.Equal(t, canonical(defaultConfig), canonical(string(b)), "%s created again", a.name)
		for _, tk := range a.tokens {
			require.False(t, authenticates(tk), "a token of %s before it was created again authenticates", a.name)
		}
		return
	}

	toks, err := e.direct.ListTokens(ctx, e.admin, a.name)
	require.NoError(t, err)
	ids := make(map[string]bool)
	for _, tk := range toks {
		ids[tk.ID] = true
	}
	known := 0
	for _, tk := range a.tokens {
		works := authenticates(tk)
		require.Equal(t, ids[tk.id], works, "a token of %s: listed %v, authenticates %v", a.name, ids[tk.id], works)
		if a.tokenMustWork(tk) {
			require.True(t, works, "a token of %s that nothing revoked does not work", a.name)
		}
		if a.tokenMustFail(tk) {
			require.False(t, works, "a revoked token of %s, or one of a deleted incarnation, works", a.name)
		}
		if works {
			known++
		}
	}
	require.LessOrEqual(t, len(toks)-known, a.lostTokens, "%s: tokens listed that no one was given, beyond the creations that failed", a.name)
	e.requireTokensWork(t, u)

	c, err := e.direct.GetInstanceConfig(ctx, e.admin, a.name)
	require.NoError(t, err)
	b, _ := json.Marshal(configJSON(c))
	require.True(t, a.configs[canonical(string(b))], "%s has a configuration no one sent: %s", a.name, b)

	for _, s := range a.sessions {
		works := resolves(s)
		if a.mustWork(s.seq) {
			require.True(t, works, "a session of %s, which nothing deleted, does not resolve", a.name)
		}
		if a.mustFail(s.seq) {
			require.False(t, works, "a session of a deleted incarnation of %s resolves", a.name)
		}
	}
}

// checkTrail requires that the audit trail agrees with what is stored of
// the account name, there or not: each of its creations and deletions
// recorded once, every token listed with its creation and without its
// deletion, and its configuration the one the latest change recorded
// set (or the default, when none did since it was created).
func checkTrail(t testing.TB, e *env, name string, there bool) {
	t.Helper()
	ctx := t.Context()
	var events []orgadmin.AuditEvent // newest first
	q := orgadmin.AuditQuery{TargetUsername: name, Limit: orgadmin.Some(1000)}
	for {
		page, err := e.direct.AuditEvents(ctx, e.admin, q)
		require.NoError(t, err)
		events = append(events, page.Events...)
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
	}
	var creates, deletes int
	for _, ev := range events {
		switch ev.Action {
		case orgadmin.ActionUserCreate:
			creates++
		case orgadmin.ActionUserDelete:
			deletes++
		}
	}
	want := 0
	if there {
		want = 1
	}
	require.Equal(t, want, creates-deletes, "%s: %d creations and %d deletions in the trail; it is there: %v", name, creates, deletes, there)
	if !there {
		return
	}
	// The events of the account as it is now: those since its latest
	// creation. Their order is that of time, not of the trail: a store
	// that confirms an event after its change (mongostore) may confirm a
	// change's event after the event of a later change.
	var born time.Time
	for _, ev := range events {
		if ev.Action == orgadmin.ActionUserCreate && ev.At.After(born) {
			born = ev.At
		}
	}
	events = slices.DeleteFunc(events, func(ev orgadmin.AuditEvent) bool { return ev.At.Before(born) })
	slices.SortStableFunc(events, func(a, b orgadmin.AuditEvent) int { return b.At.Compare(a.At) })

	toks, err := e.direct.ListTokens(ctx, e.admin, name)
	require.NoError(t, err)
	for _, tk := range toks {
		created := slices.ContainsFunc(events, func(ev orgadmin.AuditEvent) bool {
			return ev.Action == orgadmin.ActionTokenCreate && ev.TargetID == tk.ID
		})
		deleted := slices.ContainsFunc(events, func(ev orgadmin.AuditEvent) bool {
			return ev.Action == orgadmin.ActionTokenDelete && ev.TargetID == tk.ID
		})
		require.True(t, created, "%s: token %s is listed and its creation is not in the trail", name, tk.ID)
		require.False(t, deleted, "%s: token %s is listed and its deletion is in the trail", name, tk.ID)
	}

	c, err := e.direct.GetInstanceConfig(ctx, e.admin, name)
	require.NoError(t, err)
	b, _ := json.Marshal(configJSON(c))
	set := slices.IndexFunc(events, func(ev orgadmin.AuditEvent) bool { return ev.Action == orgadmin.ActionInstancesSet })
	if set < 0 {
		require.Equal(t, canonical(defaultConfig), canonical(string(b)), "%s: no configuration change in the trail, and not the default", name)
		return
	}
	require.Equal(t, canonical(string(events[set].After)), canonical(string(b)), "%s: the configuration is not the one the trail's latest change set", name)
}
