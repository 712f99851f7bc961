package servicetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
)

// FaultTimeout is the default per-operation timeout of the stores under test
// (FaultTarget.Timeout): short, so that faults make operations fail often.
const FaultTimeout = 300 * time.Millisecond

// hangAfter, in timeouts, bounds every request the tests send: one that
// has not answered by then hangs. It is generous, as only "returned" is
// asserted, never how fast.
const hangAfter = 20

// recoverWithin bounds how long the service may take to answer again once
// the network is healthy (clients reconnect with back-off).
const recoverWithin = 30 * time.Second

// FaultTarget is the database of one adapter under test.
type FaultTarget struct {
	// Upstreams are the addresses of the database's servers: one, or
	// the masters of a Cluster. Each gets a proxy of its own.
	Upstreams []string
	// NewStores returns a Store that reaches each address of Upstreams
	// through the address proxied maps it to, with the per-operation
	// timeout FaultTimeout, and a Store of the same data, on fresh data, that
	// reaches the servers directly. Both are released when t ends.
	NewStores func(t testing.TB, proxied map[string]string) (faulty, direct storage.Store)
	// Timeout is the faulty store's per-operation timeout, by which the
	// faults are shaped; zero means the package's FaultTimeout. A server whose
	// operations take several round trips, or that a busy machine slows,
	// needs more.
	Timeout time.Duration
}

// RunFaults checks what the API answers, and what a store keeps, when the
// network between the service and its database fails: answers slower
// than the store's timeout, connections reset or cut, the database gone
// and back, while requests are in flight. It puts a toxiproxy server (see
// ToxiproxyEnv) between an API server and the real database of target,
// and runs each test in parallel, on fresh data behind proxies of its own;
// it skips t when ToxiproxyEnv is not set.
//
// What must hold: every request returns, with 200 and its exact body or
// with 500 INTERNAL_SERVER_ERROR; /healthz answers 503 while the database
// is unreachable and 200 once it is back; and afterwards, read directly,
// nothing is half-written: a user is fully there or fully gone, every
// token that authenticates is listed and every listed token authenticates,
// an instance configuration is one of the bodies sent.
func RunFaults(t *testing.T, target FaultTarget) {
	tp := connect(t)
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"DownAndBack", testDownAndBack},
		{"ReplyLost", testReplyLost},
		{"MixedOperations", testMixedOperations},
		{"GoReplyLost", testGoReplyLost},
		{"SlowWrites", testSlowWrites},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newEnv(t, tp, target))
		})
	}
}

// env is an API server on a store reached through proxies, with the org
// "acme", its Admin "admin" and a Dive, and a Service on the same data
// reached directly.
type env struct {
	proxies []*proxy
	url     string
	hc      *http.Client
	token   string // the Admin's

	direct      *orgadmin.Service
	faulty      *orgadmin.Service // on the store behind the proxies
	directStore storage.Store
	timeout     time.Duration   // the faulty store's per-operation timeout
	admin       orgadmin.Caller // the Admin, on direct
	dive        string
}

func newEnv(t *testing.T, tp *toxiproxy, target FaultTarget) *env {
	t.Helper()
	timeout := cmp.Or(target.Timeout, FaultTimeout)
	e := &env{hc: &http.Client{Timeout: hangAfter * timeout}, timeout: timeout}
	proxied := make(map[string]string, len(target.Upstreams))
	for _, u := range target.Upstreams {
		p := tp.newProxy(t, u)
		e.proxies = append(e.proxies, p)
		proxied[u] = p.listen
	}
	faulty, direct := target.NewStores(t, proxied)

	ctx := t.Context()
	e.direct, e.directStore = orgadmin.New(direct, orgadmin.Config{}), direct
	var err error
	e.token, err = e.direct.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	e.admin, err = e.direct.Authenticate(ctx, e.token)
	require.NoError(t, err)
	e.dive = uuid.NewString()
	require.NoError(t, e.direct.RegisterDive(ctx, "acme", orgadmin.Dive{ID: e.dive, Title: "Sales", Version: 1}))

	svc := orgadmin.New(faulty, orgadmin.Config{})
	e.faulty = svc
	// The server's errors (an internal error's cause, above all) are
	// shown when the test fails.
	var logged testdb.SyncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server's errors:\n%s", logged.String())
		}
	})
	errorsOnly := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError}))
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpserver.New(svc, httpserver.Config{Logger: errorsOnly}))
	mux.Handle("GET /healthz", httpserver.Health(svc))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.url = srv.URL
	return e
}

// answer is what the API answered to one request. err is set when no
// answer came (a request that hung, above all).
type answer struct {
	status int
	body   []byte
	err    error
}

func (a answer) String() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.status, strings.TrimSpace(string(a.body)))
}

// do sends one request as the Admin; body, when not empty, is JSON.
func (e *env) do(method, path, body string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, r)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: b, err: err}
}

// internalError is the exact body of every 500.
const internalError = `{"message":"Internal Error","code":"INTERNAL_SERVER_ERROR"}`

// is reports whether a is status with a body equal, as JSON, to body.
func (a answer) is(status int, body string) bool {
	return a.err == nil && a.status == status && sameJSON(a.body, []byte(body))
}

// failed reports whether a is the 500 every store failure gives.
func (a answer) failed() bool { return a.is(http.StatusInternalServerError, internalError) }

// code returns the "code" of a's JSON body, or "".
func (a answer) code() string {
	var b struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(a.body, &b)
	return b.Code
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// fault is one way the network between the service and its database
// fails. Answers are delayed, never requests: a request delayed beyond its
// timeout would run on the server after later ones, and no client could
// tell what to expect of it.
type fault struct {
	name   string
	toxics []toxic
	off    bool // the proxies are disabled: the server is gone
	// down means nothing gets through: /healthz must answer 503.
	down bool
}

// faults returns every fault the tests inject.
func faults(timeout time.Duration) []fault {
	ms := timeout.Milliseconds()
	one := func(name, typ, stream string, attr string, v int64) []toxic {
		return []toxic{{Name: name, Type: typ, Stream: stream, Attributes: map[string]int64{attr: v}}}
	}
	return []fault{
		{name: "answers slower than the timeout", toxics: one("slow", "latency", "downstream", "latency", 3*ms), down: true},
		{name: "answers dropped", toxics: one("drop", "timeout", "downstream", "timeout", 0), down: true},
		{name: "requests dropped then connections closed", toxics: one("drop", "timeout", "upstream", "timeout", ms/2), down: true},
		{name: "connections reset on request", toxics: one("reset", "reset_peer", "upstream", "timeout", 0), down: true},
		{name: "connections reset on answer", toxics: one("reset", "reset_peer", "downstream", "timeout", 0), down: true},
		{name: "connections closed after a few requests", toxics: one("cut", "limit_data", "upstream", "bytes", 2000)},
		{name: "connections closed after a few answers", toxics: one("cut", "limit_data", "downstream", "bytes", 2000)},
		{name: "server gone", off: true, down: true},
	}
}

// inject applies f to every proxy.
func (e *env) inject(f fault) error {
	for _, p := range e.proxies {
		if f.off {
			if err := p.enable(false); err != nil {
				return err
			}
		}
		for _, x := range f.toxics {
			if err := p.add(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// heal undoes inject(f).
func (e *env) heal(f fault) error {
	for _, p := range e.proxies {
		for _, x := range f.toxics {
			if err := p.remove(x.Name); err != nil {
				return err
			}
		}
		if f.off {
			if err := p.enable(true); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitFor sends the request until it answers 200 or recoverWithin has
// passed, and returns the last answer.
func (e *env) waitFor(method, path string) answer {
	deadline := time.Now().Add(recoverWithin)
	for {
		a := e.do(method, path, "")
		if a.status == http.StatusOK || time.Now().After(deadline) {
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With the server unreachable, /healthz answers 503 and a call of the API
// 500, each without hanging; once the network is healthy, both answer 200
// again without a restart.
func testDownAndBack(t *testing.T, e *env) {
	for _, f := range faults(e.timeout) {
		if !f.down {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			require.Equal(t, http.StatusOK, e.waitFor(http.MethodGet, "/healthz").status, "healthy before the fault")
			require.NoError(t, e.inject(f))
			healed := false
			defer func() {
				if !healed {
					_ = e.heal(f)
				}
			}()
			a := e.do(http.MethodGet, "/healthz", "")
			require.True(t, a.is(http.StatusServiceUnavailable, `{"status":"unavailable"}`), "/healthz while down: %s", a)
			a = e.do(http.MethodGet, "/v1/users/admin/tokens", "")
			require.True(t, a.failed(), "an API call while down: %s", a)

			require.NoError(t, e.heal(f))
			healed = true
			a = e.waitFor(http.MethodGet, "/healthz")
			require.True(t, a.is(http.StatusOK, `{"status":"ok"}`), "/healthz after the fault: %s", a)
			a = e.waitFor(http.MethodGet, "/v1/users/admin/tokens")
			require.Equal(t, http.StatusOK, a.status, "an API call after the fault: %s", a)
		})
	}
}

// lostWrite is one write of testReplyLost.
type lostWrite struct {
	name string
	// action is the audit action of the write, made on the user named
	// prefix followed by the attempt's number.
	action, prefix string
	// prepare sets the write up, through the direct Service, with names
	// of its own for the attempt n, and returns its request, the body of
	// its 200 ("" for a token: see checkTokenAnswer), and a check, through
	// the direct Service, of whether the write has taken effect.
	prepare func(t *testing.T, n int) (method, path, body, ok string, landed func() bool)
}

// loseAnswer runs write, with answers slowed by slowAnswers(e.timeout, n),
// and waits for it: once landed says the write took effect before its
// answer came, it cuts every connection while the answer is on its way
// and lets the client reconnect at once. It returns what write returned
// and whether its answer was lost so.
func loseAnswer[A any](t testing.TB, e *env, n int, landed func() bool, write func() A) (A, bool) {
	t.Helper()
	slow := slowAnswers(e.timeout, n)
	cut := fault{name: "server gone", off: true}
	require.NoError(t, e.inject(slow))
	answered := make(chan A, 1)
	go func() { answered <- write() }()
	for {
		select {
		case a := <-answered:
			require.NoError(t, e.heal(slow))
			return a, false
		default:
		}
		if landed() {
			require.NoError(t, e.inject(cut))
			require.NoError(t, e.heal(slow))
			require.NoError(t, e.heal(cut))
			return <-answered, true
		}
		time.Sleep(time.Millisecond)
	}
}

// The answer to a write is lost after the write took effect, and the
// server is back at once, within the operation's timeout: the API answers
// 200 with the write's own answer, or 500, and never what a second run of
// the write would answer (the username taken, the user or token not
// found). A client that resends a write that failed relies on that.
func testReplyLost(t *testing.T, e *env) {
	writes := e.lostWrites(t)
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			// The write must be seen to land before its answer comes, which
			// a loaded machine may not manage at once.
			for n := 1; ; n++ {
				method, path, body, ok, landed := w.prepare(t, n)
				require.False(t, landed(), "the write has taken effect before it was sent")
				require.Equal(t, http.StatusOK, e.waitFor(http.MethodGet, "/healthz").status, "healthy before the fault")
				a, lost := loseAnswer(t, e, n, landed, func() answer { return e.do(method, path, body) })
				switch {
				case a.failed():
				case ok == "" && a.err == nil && a.status == http.StatusOK:
					checkTokenAnswer(t, a, "ci")
				case ok != "" && a.is(http.StatusOK, ok):
				case lost:
					t.Errorf("the write took effect and its answer was lost; the API answered %s", a)
				default:
					t.Errorf("unexpected answer %s", a)
				}
				e.requireAudited(t, w.action, fmt.Sprint(w.prefix, n), landed())
				if lost {
					// A 500 may have undone the write (a store that cannot
					// tell whether it may keep it); a 200 may not have.
					if a.status == http.StatusOK {
						require.True(t, landed(), "the write answered 200 and was undone")
					}
					e.requireListedTokensWork(t, path)
					return
				}
				if n == 3 {
					t.Logf("the answer came before the write was seen to land, %d times: nothing lost", n)
					return
				}
			}
		})
	}
}

// lostWrites returns the HTTP writes that testReplyLost and
// testSlowWrites send.
func (e *env) lostWrites(t *testing.T) []lostWrite {
	ctx := t.Context()
	newAccount := func(t *testing.T, name string) {
		_, err := e.direct.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: name})
		require.NoError(t, err)
	}
	userThere := func(name string) func() bool {
		return func() bool { _, err := e.direct.GetUser(ctx, "acme", name); return err == nil }
	}
	config := `{"read_write":{"instance_size":"jumbo","cooldown_seconds":120},` +
		`"read_scaling":{"instance_size":"mega","flock_size":3,"cooldown_seconds":400}}`
	return []lostWrite{
		{"create user", orgadmin.ActionUserCreate, "newcomer", func(t *testing.T, n int) (string, string, string, string, func() bool) {
			name := fmt.Sprint("newcomer", n)
			return http.MethodPost, "/v1/users", `{"username":"` + name + `"}`, `{"username":"` + name + `"}`, userThere(name)
		}},
		{"delete user", orgadmin.ActionUserDelete, "leaver", func(t *testing.T, n int) (string, string, string, string, func() bool) {
			name := fmt.Sprint("leaver", n)
			newAccount(t, name)
			// Something of every kind a deletion removes.
			tok, err := e.direct.CreateToken(ctx, e.admin, name, orgadmin.CreateTokenInput{Name: "ci"})
			require.NoError(t, err)
			session, err := e.direct.CreateEmbedSession(ctx, e.admin, e.dive, orgadmin.CreateEmbedSessionInput{Username: name})
			require.NoError(t, err)
			require.NoError(t, e.direct.MarkDucklingActive(ctx, "acme", name, "rw"))
			there := userThere(name)
			return http.MethodDelete, "/v1/users/" + name, "", `{"username":"` + name + `"}`, func() bool {
				if there() {
					return false
				}
				// Gone, it is gone as a whole.
				_, err := e.direct.Authenticate(ctx, tok.Value)
				require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "a token of %s, which is gone", name)
				_, err = e.direct.ResolveEmbedSession(ctx, session)
				require.ErrorIs(t, err, orgadmin.ErrNotFound, "a session of %s, which is gone", name)
				accts, err := e.direct.GetActiveAccounts(ctx, e.admin)
				require.NoError(t, err)
				for _, a := range accts {
					require.NotEqual(t, name, a.Username, "%s is gone and running", name)
				}
				return true
			}
		}},
		{"set instances", orgadmin.ActionInstancesSet, "tuned", func(t *testing.T, n int) (string, string, string, string, func() bool) {
			name := fmt.Sprint("tuned", n)
			newAccount(t, name)
			return http.MethodPut, "/v1/users/" + name + "/instances", `{"config":` + config + `}`, config, func() bool {
				c, err := e.direct.GetInstanceConfig(ctx, e.admin, name)
				b, _ := json.Marshal(configJSON(c))
				return err == nil && sameJSON(b, []byte(config))
			}
		}},
		{"create token", orgadmin.ActionTokenCreate, "minter", func(t *testing.T, n int) (string, string, string, string, func() bool) {
			name := fmt.Sprint("minter", n)
			newAccount(t, name)
			return http.MethodPost, "/v1/users/" + name + "/tokens", `{"name":"ci"}`, "", func() bool {
				toks, err := e.direct.ListTokens(ctx, e.admin, name)
				return err == nil && len(toks) > 0
			}
		}},
		{"delete token", orgadmin.ActionTokenDelete, "revoker", func(t *testing.T, n int) (string, string, string, string, func() bool) {
			name := fmt.Sprint("revoker", n)
			newAccount(t, name)
			tok, err := e.direct.CreateToken(ctx, e.admin, name, orgadmin.CreateTokenInput{Name: "ci"})
			require.NoError(t, err)
			return http.MethodDelete, "/v1/users/" + name + "/tokens/" + tok.ID, "", `{}`, func() bool {
				toks, err := e.direct.ListTokens(ctx, e.admin, name)
				return err == nil && len(toks) == 0
			}
		}},
	}
}

// slowAnswers is the fault of the attempt n (from 1) of testReplyLost
// and testGoReplyLost: answers delayed by a sixth of the timeout, time
// enough to see the write land before its answer comes, and short enough
// that the round trips of one operation fit in its timeout; then, should
// they not fit (a write of many round trips, as PostgreSQL's transactions
// are), by a fifteenth and a fortieth.
func slowAnswers(timeout time.Duration, n int) fault {
	part := []int64{6, 15, 40}[min(n, 3)-1]
	return fault{name: "slow answers", toxics: []toxic{{Name: "slow", Type: "latency", Stream: "downstream",
		Attributes: map[string]int64{"latency": timeout.Milliseconds() / part}}}}
}

// requireAudited requires that the audit trail holds an event of action
// on the user named name exactly when the write has taken effect: for a
// token creation, the creations less the deletions are the tokens listed.
func (e *env) requireAudited(t *testing.T, action, name string, landed bool) {
	t.Helper()
	ctx := t.Context()
	count := func(action string) int {
		page, err := e.direct.AuditEvents(ctx, e.admin, orgadmin.AuditQuery{Action: action, TargetUsername: name})
		require.NoError(t, err)
		return len(page.Events)
	}
	if action != orgadmin.ActionTokenCreate {
		want := 0
		if landed {
			want = 1
		}
		require.Equal(t, want, count(action), "%s events of %s; the write has taken effect: %v", action, name, landed)
		return
	}
	toks, err := e.direct.ListTokens(ctx, e.admin, name)
	require.NoError(t, err)
	created, deleted := count(orgadmin.ActionTokenCreate), count(orgadmin.ActionTokenDelete)
	require.LessOrEqual(t, created, 1, "token creations of %s in the trail", name)
	require.Equal(t, len(toks), created-deleted, "tokens of %s listed, against %d creations and %d deletions in the trail", name, created, deleted)
}

// requireListedTokensWork requires, when path is that of a user's
// tokens, that every token the store lists for the user authenticates,
// read directly from the store (which needs no token value).
func (e *env) requireListedTokensWork(t *testing.T, path string) {
	t.Helper()
	name, ok := strings.CutPrefix(path, "/v1/users/")
	if !ok {
		return
	}
	name, ok = strings.CutSuffix(name, "/tokens")
	if !ok {
		name, _, ok = strings.Cut(name, "/tokens/")
	}
	if !ok {
		return
	}
	u, err := e.direct.GetUser(t.Context(), "acme", name)
	require.NoError(t, err)
	e.requireTokensWork(t, u)
}

// requireTokensWork requires that every token the store lists for u
// authenticates as u, read directly from the store, and returns how many
// it lists.
func (e *env) requireTokensWork(t *testing.T, u orgadmin.User) int {
	t.Helper()
	ctx := t.Context()
	toks, err := e.directStore.ListTokens(ctx, "acme", u.ID, time.Now())
	require.NoError(t, err)
	for _, tok := range toks {
		a, err := e.directStore.ReadAccess(ctx, storage.AccessQuery{Digest: tok.Digest})
		require.NoError(t, err, "token %s of %s is listed and does not authenticate", tok.ID, u.Username)
		require.Equal(t, u.ID, a.Credential.User.ID, "token %s of %s authenticates as %s", tok.ID, u.Username, a.Credential.User.Username)
	}
	return len(toks)
}

// checkTokenAnswer checks a, the 200 of a token creation named name.
func checkTokenAnswer(t testing.TB, a answer, name string) {
	t.Helper()
	var tok map[string]any
	require.NoError(t, json.Unmarshal(a.body, &tok), "%s", a)
	require.True(t, strings.HasPrefix(fmt.Sprint(tok["token"]), "oat_"), "%s", a)
	require.NotEmpty(t, tok["id"], "%s", a)
	require.NotEmpty(t, tok["created_ts"], "%s", a)
	for _, k := range []string{"token", "id", "created_ts"} {
		delete(tok, k)
	}
	require.Equal(t, map[string]any{"name": name, "read_only": false, "token_type": "read_write"}, tok, "%s", a)
}

// configJSON is the wire form of c, as the API answers it.
func configJSON(c orgadmin.InstanceConfig) any {
	side := func(s orgadmin.InstanceSide, scaling bool) map[string]any {
		m := map[string]any{"instance_size": string(s.Size)}
		if scaling {
			m["flock_size"] = s.FlockSize
		}
		if cd, ok := s.Cooldown.Get(); ok {
			m["cooldown_seconds"] = int(cd / time.Second)
		}
		return m
	}
	return map[string]any{"read_write": side(c.ReadWrite, false), "read_scaling": side(c.ReadScaling, true)}
}
