package httpserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/everystore"
	"github.com/orgadmin/orgadmin/storage"
)

// Soak sizes: soakWorkers goroutines each send a fixed number of requests,
// fewer on the slow stores.
const (
	soakWorkers         = 32
	soakRequests        = 60
	soakRequestsOnSlow  = 20
	soakOrg             = "soak"
	soakUsersPageLength = 7
)

// TestSoak serves the Handler on a real loopback server and sends it a
// fixed number of mixed requests from soakWorkers goroutines over
// keep-alive connections: service accounts created and deleted, tokens
// created, listed and deleted, instance configurations read and written,
// pages of users walked, embed sessions minted. No fault is injected, so
// every request must succeed; afterwards the users, tokens, instance
// configurations and sessions in the store are exactly what the successful
// requests made. Each worker acts only on the users it created, so that
// what it saw is what the store must hold; the listings cross every
// worker's changes. It runs on every store.
func TestSoak(t *testing.T) {
	t.Parallel()
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		n := soakRequests
		if k.Slow {
			n = soakRequestsOnSlow
		}
		testSoak(t, k.Open(t).Store, n)
	})
}

func testSoak(t *testing.T, store storage.Store, perWorker int) {
	ctx := t.Context()
	svc := orgadmin.New(store, orgadmin.Config{})
	srv := httptest.NewServer(httpserver.New(svc, httpserver.Config{Logger: discardLogger()}))
	t.Cleanup(srv.Close)
	transport := &http.Transport{MaxIdleConns: soakWorkers, MaxIdleConnsPerHost: soakWorkers}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}

	adminToken, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: soakOrg, Username: "admin"})
	require.NoError(t, err)
	require.NoError(t, svc.RegisterDive(ctx, soakOrg, orgadmin.Dive{ID: acmeDiveID, Title: "Soak", Version: 1}))

	workers := make([]*soakWorker, soakWorkers)
	var wg sync.WaitGroup
	for i := range workers {
		w := &soakWorker{
			id: i, base: srv.URL, client: client, admin: adminToken,
			rng:    rand.New(rand.NewPCG(uint64(i), 1)),
			counts: map[string]int{},
		}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				w.step()
			}
		}()
	}
	wg.Wait()

	// Every request succeeded, none with a 5xx.
	counts := map[string]int{}
	var (
		failures []string
		orphaned int
	)
	for _, w := range workers {
		for kind, n := range w.counts {
			counts[kind] += n
		}
		failures = append(failures, w.failures...)
		orphaned += w.orphaned
	}
	t.Logf("successes by kind of request: %v", counts)
	require.Empty(t, failures[:min(len(failures), 20)], "requests that did not succeed (the first 20 of %d)", len(failures))
	require.Equal(t, soakWorkers*perWorker, counts["total"], "requests sent")

	// The users: the Admin and every service account created and not
	// deleted, counted and listed alike by HTTP and the Go API.
	admin, err := svc.Authenticate(ctx, adminToken)
	require.NoError(t, err)
	want := []string{"admin"}
	for _, w := range workers {
		for _, u := range w.users {
			want = append(want, u.name)
		}
	}
	sort.Strings(want)
	assert.Equal(t, len(want), 1+counts["create service account"]-counts["delete user"])
	var listed []string
	page := orgadmin.ListUsersOptions{Limit: orgadmin.Some(soakUsersPageLength)}
	for {
		p, err := svc.ListUsers(ctx, admin, page)
		require.NoError(t, err)
		require.Equal(t, len(want), p.TotalCount, "total_count")
		for _, u := range p.Users {
			listed = append(listed, u.Username)
		}
		if p.NextPageToken == "" {
			break
		}
		page.PageToken = p.NextPageToken
	}
	assert.Equal(t, want, listed, "the users listed")

	// The tokens: each live one is listed under its user and authenticates
	// as that user; no revoked one, or one of a deleted user, does.
	live := 0
	for _, w := range workers {
		for _, u := range w.users {
			toks, err := svc.ListTokens(ctx, admin, u.name)
			require.NoError(t, err)
			var ids []string
			for _, tok := range toks {
				ids = append(ids, tok.ID)
			}
			assert.ElementsMatch(t, keys(u.tokens), ids, "tokens of %s", u.name)
			for id, tok := range u.tokens {
				c, err := svc.Authenticate(ctx, tok.value)
				if assert.NoError(t, err, "token %s of %s", id, u.name) {
					assert.Equal(t, u.name, c.Username())
					assert.Equal(t, id, c.TokenID())
				}
				live++
			}
			cfg, err := svc.GetInstanceConfig(ctx, admin, u.name)
			require.NoError(t, err)
			assert.Equal(t, u.config, [3]any{string(cfg.ReadWrite.Size), string(cfg.ReadScaling.Size), cfg.ReadScaling.FlockSize}, "configuration of %s", u.name)
		}
		for _, v := range w.dead {
			_, err := svc.Authenticate(ctx, v)
			assert.ErrorIs(t, err, orgadmin.ErrUnauthorized, "a revoked token, or one of a deleted user")
		}
		for _, s := range w.sessions {
			got, err := svc.ResolveEmbedSession(ctx, s.value)
			if s.user.deleted {
				assert.ErrorIs(t, err, orgadmin.ErrNotFound, "a session of the deleted %s", s.user.name)
			} else if assert.NoError(t, err, "a session of %s", s.user.name) {
				assert.Equal(t, s.user.name, got.Username)
			}
		}
	}
	assert.Equal(t, counts["create token"]-counts["delete token"]-orphaned, live, "live tokens")
}

// soakWorker sends requests on its own users only and remembers what the
// store must hold of them.
type soakWorker struct {
	id     int
	base   string
	client *http.Client
	admin  string
	rng    *rand.Rand
	seq    int

	users    []*soakUser
	dead     []string // token values that must not authenticate
	sessions []soakSession
	counts   map[string]int // successful requests by kind, and "total"
	orphaned int            // tokens deleted with their user
	failures []string
}

type soakUser struct {
	name    string
	tokens  map[string]soakToken // by id
	config  [3]any               // read_write size, read_scaling size, flock size
	deleted bool
}

type soakToken struct {
	value     string
	readWrite bool
}

type soakSession struct {
	value string
	user  *soakUser
}

var soakSizes = []string{"pulse", "standard", "jumbo", "mega", "giga"}

// step sends one request of a kind drawn at random: a service account
// instead when the kind needs a user and the worker has none, a token
// instead of deleting one when the user has none.
func (w *soakWorker) step() {
	w.seq++
	kinds := []string{
		"create service account", "create token", "create token", "list tokens", "delete token",
		"get instances", "set instances", "list users", "delete user", "embed session",
	}
	kind := kinds[w.rng.IntN(len(kinds))]
	var u *soakUser
	switch {
	case kind == "list users":
	case len(w.users) == 0:
		kind = "create service account"
	default:
		u = w.users[w.rng.IntN(len(w.users))]
		if kind == "delete token" && len(u.tokens) == 0 {
			kind = "create token"
		}
	}
	ok := false
	switch kind {
	case "create service account":
		name := fmt.Sprintf("w%02d_%03d", w.id, w.seq)
		if _, ok = w.call(kind, "POST", "/v1/users", w.admin, map[string]any{"username": name}); ok {
			w.users = append(w.users, &soakUser{name: name, tokens: map[string]soakToken{}, config: [3]any{"standard", "standard", 4}})
		}
	case "create token":
		body := map[string]any{"name": fmt.Sprint("t", w.seq)}
		if w.rng.IntN(2) == 0 {
			body["ttl"] = 3600
		}
		readWrite := w.rng.IntN(4) != 0
		if !readWrite {
			body["token_type"] = "read_scaling"
		}
		var res map[string]any
		if res, ok = w.call(kind, "POST", userPath(u.name, "tokens"), w.admin, body); ok {
			u.tokens[res["id"].(string)] = soakToken{value: res["token"].(string), readWrite: readWrite}
		}
	case "list tokens":
		var res map[string]any
		if res, ok = w.call(kind, "GET", userPath(u.name, "tokens"), w.as(u), nil); ok {
			var ids []string
			for _, tok := range res["tokens"].([]any) {
				ids = append(ids, tok.(map[string]any)["id"].(string))
			}
			if got, want := sorted(ids), keys(u.tokens); !slices.Equal(got, want) {
				w.fail("list tokens of %s: %v, want %v", u.name, got, want)
			}
		}
	case "delete token":
		id := keys(u.tokens)[w.rng.IntN(len(u.tokens))]
		if _, ok = w.call(kind, "DELETE", userPath(u.name, "tokens", id), w.as(u), nil); ok {
			w.dead = append(w.dead, u.tokens[id].value)
			delete(u.tokens, id)
		}
	case "get instances":
		var res map[string]any
		if res, ok = w.call(kind, "GET", userPath(u.name, "instances"), w.as(u), nil); ok {
			if got := configOf(res); got != u.config {
				w.fail("configuration of %s: %v, want %v", u.name, got, u.config)
			}
		}
	case "set instances":
		cfg := [3]any{soakSizes[w.rng.IntN(len(soakSizes))], soakSizes[w.rng.IntN(len(soakSizes))], w.rng.IntN(8)}
		body := map[string]any{"config": map[string]any{
			"read_write":   map[string]any{"instance_size": cfg[0]},
			"read_scaling": map[string]any{"instance_size": cfg[1], "flock_size": cfg[2]},
		}}
		if _, ok = w.call(kind, "PUT", userPath(u.name, "instances"), w.as(u), body); ok {
			u.config = cfg
		}
	case "list users":
		ok = w.walkUsers()
	case "delete user":
		if _, ok = w.call(kind, "DELETE", userPath(u.name), w.admin, nil); ok {
			u.deleted = true
			w.users = slices.DeleteFunc(w.users, func(x *soakUser) bool { return x == u })
			for _, tok := range u.tokens {
				w.dead = append(w.dead, tok.value)
			}
			w.orphaned += len(u.tokens)
		}
	case "embed session":
		var res map[string]any
		if res, ok = w.call(kind, "POST", "/v1/dives/"+acmeDiveID+"/embed-session", w.admin, map[string]any{"username": u.name}); ok {
			w.sessions = append(w.sessions, soakSession{value: res["session"].(string), user: u})
		}
	}
	if ok {
		w.counts[kind]++
		w.counts["total"]++
	}
}

// as returns the credential to act on u with: one of u's read_write
// tokens, or the Admin's.
func (w *soakWorker) as(u *soakUser) string {
	for _, id := range keys(u.tokens) {
		if u.tokens[id].readWrite && w.rng.IntN(2) == 0 {
			return u.tokens[id].value
		}
	}
	return w.admin
}

// walkUsers reads up to three pages of users of soakUsersPageLength,
// passing each next_page_token back; the usernames it sees must ascend
// strictly, whatever the other workers create and delete meanwhile.
func (w *soakWorker) walkUsers() bool {
	path := fmt.Sprintf("/v1/users?limit=%d", soakUsersPageLength)
	var seen []string
	for range 3 {
		res, ok := w.call("list users", "GET", path, w.admin, nil)
		if !ok {
			return false
		}
		for _, u := range res["users"].([]any) {
			seen = append(seen, orgadmin.FoldUsername(u.(map[string]any)["username"].(string)))
		}
		next, _ := res["next_page_token"].(string)
		if next == "" {
			break
		}
		path = fmt.Sprintf("/v1/users?limit=%d&page_token=%s", soakUsersPageLength, url.QueryEscape(next))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i-1] >= seen[i] {
			w.fail("a walk of the user pages went from %q to %q", seen[i-1], seen[i])
			return false
		}
	}
	return true
}

// call sends one request and returns the decoded JSON object of a 200;
// anything else is a failure.
func (w *soakWorker) call(kind, method, path, token string, body any) (map[string]any, bool) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			w.fail("%s: %v", kind, err)
			return nil, false
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, w.base+path, rd)
	if err != nil {
		w.fail("%s: %v", kind, err)
		return nil, false
	}
	req.Header.Set("Authorization", bearer(token))
	res, err := w.client.Do(req)
	if err != nil {
		w.fail("%s %s %s: %v", kind, method, path, err)
		return nil, false
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		w.fail("%s %s %s: %d %s (%v)", kind, method, path, res.StatusCode, raw, err)
		return nil, false
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		w.fail("%s %s %s: %s: %v", kind, method, path, raw, err)
		return nil, false
	}
	return obj, true
}

func (w *soakWorker) fail(format string, args ...any) {
	w.failures = append(w.failures, fmt.Sprintf("worker %d: ", w.id)+fmt.Sprintf(format, args...))
}

// configOf returns the sizes of an instance configuration's JSON.
func configOf(res map[string]any) [3]any {
	rw, _ := res["read_write"].(map[string]any)
	rs, _ := res["read_scaling"].(map[string]any)
	flock, _ := rs["flock_size"].(float64)
	return [3]any{rw["instance_size"], rs["instance_size"], int(flock)}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
