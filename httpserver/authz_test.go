package httpserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/everystore"
)

// principal is who a credential authenticates as.
type principal struct {
	org, username  string
	admin, viewAll bool
}

var (
	acmeAdmin  = principal{org: acme, username: "admin", admin: true, viewAll: true}
	acmeBob    = principal{org: acme, username: "bob"}
	acmeCarol  = principal{org: acme, username: "carol", viewAll: true}
	acmeRobot  = principal{org: acme, username: "robot"}
	globexBoss = principal{org: globex, username: "boss", admin: true, viewAll: true}
)

// callerKind is one kind of caller of the authorization matrix.
type callerKind struct {
	name string
	// header prepares the credential in f and returns the whole
	// Authorization header value ("" sends none).
	header func(f *fixture) string
	// deny is the status the credential alone decides (401 or 403), or 0.
	deny int
	// who owns the credential; "self" targets name who.username.
	who principal
	// malformed is a header refused for its form alone, before the
	// Service reads any store: the matrix checks it on the memory store
	// only, since on another it would check nothing more.
	malformed bool
}

func constHeader(v string) func(*fixture) string { return func(*fixture) string { return v } }

var callerKinds = []callerKind{
	{name: "no Authorization header", header: constHeader(""), deny: 401, who: acmeAdmin, malformed: true},
	{name: "Bearer alone", header: constHeader("Bearer"), deny: 401, who: acmeAdmin, malformed: true},
	{name: "Bearer and a space", header: constHeader("Bearer "), deny: 401, who: acmeAdmin, malformed: true},
	{name: "Basic scheme", header: constHeader("Basic xyz"), deny: 401, who: acmeAdmin, malformed: true},
	{name: "Basic scheme with a valid token", header: func(f *fixture) string { return "Basic " + f.admin }, deny: 401, who: acmeAdmin, malformed: true},
	{name: "Bearer with two words", header: constHeader("Bearer a b"), deny: 401, who: acmeAdmin, malformed: true},
	{name: "unknown token", header: constHeader(bearer("oat_this-token-was-never-issued")), deny: 401, who: acmeAdmin},
	{name: "expired token", deny: 401, who: acmeAdmin, header: func(f *fixture) string {
		v, _ := f.seedToken(acme, "admin", orgadmin.CreateTokenInput{TTL: orgadmin.Some(300 * time.Second)})
		f.clock.Advance(301 * time.Second)
		return bearer(v)
	}},
	{name: "token revoked over HTTP", deny: 401, who: acmeAdmin, header: func(f *fixture) string {
		created := requireOK(f.tb, f.do("POST", userPath("admin", "tokens"), bearer(f.admin), map[string]any{"name": "doomed"}))
		requireJSON(f.tb, f.do("DELETE", userPath("admin", "tokens", created["id"].(string)), bearer(f.admin), nil), `{}`)
		return bearer(created["token"].(string))
	}},
	{name: "token revoked with svc.DeleteToken", deny: 401, who: acmeAdmin, header: func(f *fixture) string {
		v, tok := f.seedToken(acme, "admin", orgadmin.CreateTokenInput{})
		require.NoError(f.tb, f.svc.DeleteToken(f.tb.Context(), f.caller(f.admin), "admin", tok.ID))
		return bearer(v)
	}},
	{name: "read_scaling token of an Admin", deny: 403, who: acmeAdmin, header: func(f *fixture) string {
		v, _ := f.seedToken(acme, "admin", orgadmin.CreateTokenInput{Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
		return bearer(v)
	}},
	{name: "token of a deleted user", deny: 401, who: principal{org: acme, username: "ghost", admin: true}, header: func(f *fixture) string {
		f.createUser(acme, orgadmin.NewUser{Username: "ghost", Role: orgadmin.RoleAdmin})
		v, _ := f.seedToken(acme, "ghost", orgadmin.CreateTokenInput{})
		_, err := f.svc.DeleteUser(f.tb.Context(), f.caller(f.admin), "ghost")
		require.NoError(f.tb, err)
		return bearer(v)
	}},
	{name: "Member", header: func(f *fixture) string { return bearer(f.bob) }, who: acmeBob},
	{name: "Member with view_all_members", header: func(f *fixture) string { return bearer(f.carol) }, who: acmeCarol},
	{name: "service account", header: func(f *fixture) string { return bearer(f.robot) }, who: acmeRobot},
	{name: "Admin", header: func(f *fixture) string { return bearer(f.admin) }, who: acmeAdmin},
	{name: "Admin with a lower-case scheme", header: func(f *fixture) string { return "bearer " + f.admin }, who: acmeAdmin},
	{name: "Admin of another org", header: func(f *fixture) string { return bearer(f.boss) }, who: globexBoss},
}

// resident is what the matrix knows of a user of the fixture.
type resident struct {
	org            string
	serviceAccount bool
}

var residents = map[string]resident{
	"admin":    {acme, false},
	"bob":      {acme, false},
	"carol":    {acme, false},
	"dave":     {acme, false},
	"robot":    {acme, true},
	"boss":     {globex, false},
	"stranger": {globex, true},
}

// targetKind is one kind of path username. The fixture's org under test is
// acme.
type targetKind struct {
	name     string
	username func(c callerKind) string
}

var targetKinds = []targetKind{
	{"self", func(c callerKind) string { return c.who.username }},
	{"service account of acme", func(callerKind) string { return "robot" }},
	{"another human of acme", func(callerKind) string { return "dave" }},
	{"user of globex", func(callerKind) string { return "stranger" }},
	{"missing user", func(callerKind) string { return "nobody" }},
}

// rule is who DESIGN §2 allows to call an operation.
type rule int

const (
	adminOnly   rule = iota + 1 // Admin
	adminOrSelf                 // Admin, or any user for their own username
	viewAll                     // holder of member_management.view_all_members
	tokenCreate                 // the user for themself; Admin for a service account
)

// operation is one /v1 operation of the matrix, called with a valid body so
// that only authorization decides.
type operation struct {
	name      string
	method    string
	rule      rule
	hasTarget bool
	path      func(v *victims, target string) string
	// victims is true for the operations that act on the victims' tokens;
	// the rows of the others seed none, which spares the slower stores
	// writes that change no status.
	victims bool
	body    any
	// check, when set, verifies the stored state after the call.
	check func(t *testing.T, f *fixture, c callerKind, target string, r response)
}

// victims are one extra token per user of the fixture, for the token
// operations to act on.
type victims map[string]struct{ value, id string }

func seedVictims(f *fixture) *victims {
	v := victims{}
	for name, res := range residents {
		value, tok := f.seedToken(res.org, name, orgadmin.CreateTokenInput{Name: "victim"})
		v[name] = struct{ value, id string }{value, tok.ID}
	}
	return &v
}

func (v *victims) id(username string) string {
	if e, ok := (*v)[username]; ok {
		return e.id
	}
	return missingID
}

func noTarget(path string) func(*victims, string) string {
	return func(*victims, string) string { return path }
}

var validConfig = map[string]any{"config": map[string]any{
	"read_write":   map[string]any{"instance_size": "jumbo"},
	"read_scaling": map[string]any{"instance_size": "mega", "flock_size": 2},
}}

var operations = []operation{
	{
		name: "get instance config", method: "GET", rule: adminOrSelf, hasTarget: true,
		path: func(_ *victims, u string) string { return userPath(u, "instances") },
	},
	{
		name: "set instance config", method: "PUT", rule: adminOrSelf, hasTarget: true,
		path: func(_ *victims, u string) string { return userPath(u, "instances") },
		body: validConfig,
		check: func(t *testing.T, f *fixture, _ callerKind, target string, r response) {
			res, ok := residents[target]
			if !ok {
				return
			}
			admin := "admin"
			if res.org == globex {
				admin = "boss"
			}
			tok := map[string]string{"admin": f.admin, "boss": f.boss}[admin]
			cfg, err := f.svc.GetInstanceConfig(t.Context(), f.caller(tok), target)
			require.NoError(t, err)
			want := "standard"
			if r.status == http.StatusOK {
				want = "jumbo"
			}
			assert.Equal(t, want, string(cfg.ReadWrite.Size), "stored read_write size")
		},
	},
	{
		name: "get active accounts", method: "GET", rule: adminOnly,
		path: noTarget("/v1/active_accounts"),
	},
	{
		name: "create service account", method: "POST", rule: adminOnly,
		path: noTarget("/v1/users"),
		body: map[string]any{"username": "newbot"},
		check: func(t *testing.T, f *fixture, c callerKind, _ string, r response) {
			for _, org := range []string{acme, globex} {
				want := r.status == http.StatusOK && org == c.who.org
				assert.Equal(t, want, f.userExists(org, "newbot"), "newbot exists in %s", org)
			}
		},
	},
	{
		name: "list users", method: "GET", rule: viewAll,
		path: noTarget("/v1/users"),
	},
	{
		name: "delete user", method: "DELETE", rule: adminOnly, hasTarget: true,
		path: func(_ *victims, u string) string { return userPath(u) },
		check: func(t *testing.T, f *fixture, c callerKind, target string, r response) {
			for name, res := range residents {
				gone := r.status == http.StatusOK && name == target && res.org == c.who.org
				assert.Equal(t, !gone, f.userExists(res.org, name), "%s exists", name)
			}
		},
	},
	{
		name: "create token", method: "POST", rule: tokenCreate, hasTarget: true,
		path: func(_ *victims, u string) string { return userPath(u, "tokens") },
		body: map[string]any{"name": "ci"},
		check: func(t *testing.T, f *fixture, _ callerKind, target string, r response) {
			if r.status != http.StatusOK {
				return
			}
			var body map[string]any
			require.NoError(t, json.Unmarshal(r.body, &body))
			c := f.caller(body["token"].(string))
			assert.Equal(t, target, c.Username(), "the new token authenticates as the target")
		},
	},
	{
		name: "list tokens", method: "GET", rule: adminOrSelf, hasTarget: true,
		path: func(_ *victims, u string) string { return userPath(u, "tokens") },
	},
	{
		name: "delete token", method: "DELETE", rule: adminOrSelf, hasTarget: true, victims: true,
		path: func(v *victims, u string) string { return userPath(u, "tokens", v.id(u)) },
	},
	{
		name: "create embed session", method: "POST", rule: adminOnly,
		path: noTarget("/v1/dives/" + acmeDiveID + "/embed-session"),
		body: map[string]any{"username": "robot"},
		check: func(t *testing.T, f *fixture, _ callerKind, _ string, r response) {
			if r.status != http.StatusOK {
				return
			}
			var body map[string]string
			require.NoError(t, json.Unmarshal(r.body, &body))
			s, err := f.svc.ResolveEmbedSession(t.Context(), body["session"])
			require.NoError(t, err)
			assert.Equal(t, "robot", s.Username)
		},
	},
}

// expectStatus is DESIGN §2: the table and the order of checks (401, then
// 403 by role alone, then 400, then 404, then 403 by target).
func expectStatus(op operation, c callerKind, target string) int {
	if c.deny != 0 {
		return c.deny
	}
	p := c.who
	self := op.hasTarget && strings.EqualFold(target, p.username)
	switch op.rule {
	case adminOrSelf, tokenCreate:
		if !p.admin && !self {
			return http.StatusForbidden
		}
	case adminOnly:
		if !p.admin {
			return http.StatusForbidden
		}
	case viewAll:
		if !p.viewAll {
			return http.StatusForbidden
		}
	}
	if op.name == "delete user" && self {
		return http.StatusBadRequest
	}
	if op.hasTarget {
		res, ok := residents[target]
		if !ok || res.org != p.org {
			return http.StatusNotFound
		}
		if op.rule == tokenCreate && !self && !res.serviceAccount {
			return http.StatusForbidden
		}
	}
	if op.name == "create embed session" && p.org != acme {
		return http.StatusNotFound // acme's Dive and service account are invisible
	}
	return http.StatusOK
}

// TestAuthorizationMatrix runs on every store, each row on a fixture of
// its own: a fresh store, a fresh key prefix on Redis, an emptied database
// on MongoDB. (Rows sharing a MongoDB database and kept apart by org ids
// cost FerretDB more, not less: it scans a whole collection for every
// query but an id lookup.) The rows of a malformed header run on the
// memory store alone.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		rows := make(chan func())
		var wg sync.WaitGroup
		for range matrixConcurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for row := range rows {
					row()
				}
			}()
		}
		for _, op := range operations {
			targets := targetKinds
			if !op.hasTarget {
				targets = []targetKind{{"no target", func(callerKind) string { return "" }}}
			}
			for _, c := range callerKinds {
				if c.malformed && k.Name != "memory" {
					continue
				}
				for _, tk := range targets {
					rows <- func() {
						t.Run(op.name+"/"+c.name+"/"+tk.name, func(t *testing.T) {
							f := newFixtureWith(t, orgadmin.Config{}, worldOptions{store: k.Open(t).Store})
							testMatrixRow(t, f, op, c, tk)
						})
					}
				}
			}
		}
		close(rows)
		wg.Wait()
	})
}

// matrixConcurrency is how many rows of the matrix run at once. A row
// mostly waits for its store, FerretDB above all, so more rows than cores
// keep the cores busy; t.Parallel would allow only -parallel, by default
// as many as there are cores.
const matrixConcurrency = 8

// testMatrixRow calls op as c on the target tk names, on f, and checks the
// status against expectStatus and the stored state against op.check.
func testMatrixRow(t *testing.T, f *fixture, op operation, c callerKind, tk targetKind) {
	v := &victims{}
	if op.victims {
		v = seedVictims(f)
	}
	auth := c.header(f)
	target := tk.username(c)
	r := f.do(op.method, op.path(v, target), auth, op.body)
	want := expectStatus(op, c, target)
	if want == http.StatusOK {
		requireOK(t, r)
	} else {
		requireError(t, r, want)
	}
	if op.check != nil {
		op.check(t, f, c, target, r)
	}
	if op.victims {
		// The victim token dies exactly when the call succeeds.
		if e, ok := (*v)[target]; ok {
			assert.Equal(t, want != http.StatusOK, f.authenticates(e.value), "victim token of %s authenticates", target)
		}
	}
}

// A few rows of the matrix spelled out, so that the oracle above cannot
// drift from DESIGN §2 unnoticed.
func TestAuthorizationExamples(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	requireError(t, f.do("GET", userPath("dave", "instances"), bearer(f.bob), nil), 403)
	requireOK(t, f.do("GET", userPath("bob", "instances"), bearer(f.bob), nil))
	requireError(t, f.do("GET", userPath("stranger", "instances"), bearer(f.admin), nil), 404)
	requireError(t, f.do("POST", userPath("dave", "tokens"), bearer(f.admin), map[string]any{"name": "x"}), 403)
	requireError(t, f.do("POST", userPath("nobody", "tokens"), bearer(f.admin), map[string]any{"name": "x"}), 404)
	requireOK(t, f.do("POST", userPath("robot", "tokens"), bearer(f.admin), map[string]any{"name": "x"}))
	requireOK(t, f.do("POST", userPath("bob", "tokens"), bearer(f.bob), map[string]any{"name": "x"}))
	requireError(t, f.do("POST", userPath("robot", "tokens"), bearer(f.bob), map[string]any{"name": "x"}), 403)
	requireOK(t, f.do("GET", userPath("dave", "tokens"), bearer(f.admin), nil))
	requireIssue(t, f.do("DELETE", userPath("admin"), bearer(f.admin), nil), "username")
	requireIssue(t, f.do("DELETE", userPath("ADMIN"), bearer(f.admin), nil), "username")
	requireError(t, f.do("POST", "/v1/dives/"+acmeDiveID+"/embed-session", bearer(f.carol), map[string]any{"username": "robot"}), 403)
	requireOK(t, f.do("GET", "/v1/users", bearer(f.carol), nil))
	requireError(t, f.do("GET", "/v1/users", bearer(f.bob), nil), 403)
	requireError(t, f.do("GET", "/v1/active_accounts", bearer(f.carol), nil), 403)
	require.True(t, f.userExists(acme, "admin"))
}

// A user, token or Dive of another org is invisible: the answer is the
// same, byte for byte, as for one that does not exist. It runs on every store.
func TestCrossOrgIsIndistinguishableFromMissing(t *testing.T) {
	t.Parallel()
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		testCrossOrgIsIndistinguishableFromMissing(t, newFixtureWith(t, orgadmin.Config{}, worldOptions{store: k.Open(t).Store}))
	})
}

func testCrossOrgIsIndistinguishableFromMissing(t *testing.T, f *fixture) {
	v := seedVictims(f)
	strangerToken := v.id("stranger")
	pairs := []struct {
		name                   string
		method                 string
		other, missing         string
		otherBody, missingBody any
	}{
		{name: "get instances", method: "GET", other: userPath("stranger", "instances"), missing: userPath("nobody", "instances")},
		{name: "set instances", method: "PUT", other: userPath("stranger", "instances"), missing: userPath("nobody", "instances"), otherBody: validConfig, missingBody: validConfig},
		{name: "delete user", method: "DELETE", other: userPath("stranger"), missing: userPath("nobody")},
		{name: "create token", method: "POST", other: userPath("stranger", "tokens"), missing: userPath("nobody", "tokens"), otherBody: map[string]any{"name": "x"}, missingBody: map[string]any{"name": "x"}},
		{name: "list tokens", method: "GET", other: userPath("stranger", "tokens"), missing: userPath("nobody", "tokens")},
		{name: "delete token", method: "DELETE", other: userPath("stranger", "tokens", strangerToken), missing: userPath("nobody", "tokens", strangerToken)},
		{name: "delete token of another org under an own user", method: "DELETE", other: userPath("robot", "tokens", strangerToken), missing: userPath("robot", "tokens", missingID)},
		{name: "embed session of another org's Dive", method: "POST", other: "/v1/dives/" + globexDiveID + "/embed-session", missing: "/v1/dives/" + missingID + "/embed-session", otherBody: map[string]any{"username": "robot"}, missingBody: map[string]any{"username": "robot"}},
		{name: "embed session for another org's user", method: "POST", other: "/v1/dives/" + acmeDiveID + "/embed-session", missing: "/v1/dives/" + acmeDiveID + "/embed-session", otherBody: map[string]any{"username": "stranger"}, missingBody: map[string]any{"username": "nobody"}},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			f := f.with(t)
			other := f.do(p.method, p.other, bearer(f.admin), p.otherBody)
			missing := f.do(p.method, p.missing, bearer(f.admin), p.missingBody)
			requireError(t, other, 404)
			requireError(t, missing, 404)
			assert.Equal(t, string(missing.body), string(other.body))
		})
	}
	// Nothing of globex changed.
	require.True(t, f.userExists(globex, "stranger"))
	require.True(t, f.authenticates((*v)["stranger"].value))
}

// Order of checks (DESIGN §2): 401, then 403 for what the caller's role
// alone decides, then 400, then 404, then 403 for what depends on the
// target.
func TestOrderOfChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	invalid := map[string]any{"username": 5, "name": "", "config": "x", "session_name": ""}
	embed := "/v1/dives/" + acmeDiveID + "/embed-session"
	tooLong := strings.Repeat("a", 256)

	t.Run("401 before 400", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("POST", "/v1/users", "", invalid), 401)
		requireError(t, f.do("POST", "/v1/users", "", "not json"), 401)
		requireError(t, f.do("GET", "/v1/users?limit=0", bearer("oat_unknown-token-value"), nil), 401)
	})
	t.Run("read_scaling 403 before 400", func(t *testing.T) {
		f := f.with(t)
		v, _ := f.seedToken(acme, "admin", orgadmin.CreateTokenInput{Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
		requireError(t, f.do("POST", "/v1/users", bearer(v), invalid), 403)
		requireError(t, f.do("GET", "/v1/users?limit=0", bearer(v), nil), 403)
	})
	t.Run("Member invalid body to create service account is 403", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("POST", "/v1/users", bearer(f.bob), invalid), 403)
		requireError(t, f.do("POST", "/v1/users", bearer(f.bob), "[1,2"), 403)
	})
	t.Run("Member invalid query to list users is 403", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("GET", "/v1/users?limit=0&offset=x", bearer(f.bob), nil), 403)
	})
	t.Run("Member invalid body for another user's config is 403", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("PUT", userPath("dave", "instances"), bearer(f.bob), invalid), 403)
		requireError(t, f.do("PUT", userPath("nobody", "instances"), bearer(f.bob), invalid), 403)
	})
	t.Run("Member token for another user with invalid body is 403", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("POST", userPath("robot", "tokens"), bearer(f.bob), invalid), 403)
	})
	t.Run("Member embed session with bad dive id and body is 403", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("POST", "/v1/dives/not-a-uuid/embed-session", bearer(f.bob), invalid), 403)
	})
	t.Run("Admin invalid body for token of missing user is 400", func(t *testing.T) {
		f := f.with(t)
		requireIssue(t, f.do("POST", userPath("nobody", "tokens"), bearer(f.admin), map[string]any{"name": ""}), "name")
		requireIssue(t, f.do("POST", userPath("stranger", "tokens"), bearer(f.admin), map[string]any{"ttl": 1, "name": "x"}), "ttl")
	})
	t.Run("Admin invalid body for token of another human is 400, not 403", func(t *testing.T) {
		f := f.with(t)
		requireIssue(t, f.do("POST", userPath("dave", "tokens"), bearer(f.admin), map[string]any{"name": ""}), "name")
	})
	t.Run("Admin malformed path username is 400 before 404", func(t *testing.T) {
		f := f.with(t)
		requireIssue(t, f.do("POST", userPath(tooLong, "tokens"), bearer(f.admin), map[string]any{"name": "x"}), "username")
		requireIssue(t, f.do("GET", userPath(tooLong, "instances"), bearer(f.admin), nil), "username")
		requireIssue(t, f.do("DELETE", userPath(tooLong), bearer(f.admin), nil), "username")
	})
	t.Run("Admin invalid config for missing user is 400", func(t *testing.T) {
		f := f.with(t)
		requireIssue(t, f.do("PUT", userPath("nobody", "instances"), bearer(f.admin), map[string]any{}), "config")
	})
	t.Run("Admin invalid embed body for missing Dive is 400", func(t *testing.T) {
		f := f.with(t)
		requireIssue(t, f.do("POST", "/v1/dives/"+missingID+"/embed-session", bearer(f.admin), map[string]any{"username": ""}), "username")
		requireIssue(t, f.do("POST", embed, bearer(f.admin), map[string]any{"username": "nobody", "version": 0}), "version")
	})
	t.Run("Admin embed for a human user of a missing Dive is 404, not 400", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("POST", "/v1/dives/"+missingID+"/embed-session", bearer(f.admin), map[string]any{"username": "dave"}), 404)
		requireError(t, f.do("POST", embed, bearer(f.admin), map[string]any{"username": "dave", "version": 9}), 404)
		for _, far := range []any{1 << 31, 1e20, json.RawMessage("99999999999999999999")} {
			requireError(t, f.do("POST", embed, bearer(f.admin), map[string]any{"username": "dave", "version": far}), 404)
		}
		requireIssue(t, f.do("POST", embed, bearer(f.admin), map[string]any{"username": "dave"}), "username")
	})
	t.Run("Admin valid body for missing user is 404", func(t *testing.T) {
		f := f.with(t)
		requireError(t, f.do("POST", userPath("nobody", "tokens"), bearer(f.admin), map[string]any{"name": "x"}), 404)
	})
	// Nothing was created by the refused calls.
	assert.False(t, f.userExists(acme, "nobody"))
	toks, err := f.svc.ListTokens(t.Context(), f.caller(f.admin), "robot")
	require.NoError(t, err)
	assert.Len(t, toks, 1, "only robot's seeded token")
}
