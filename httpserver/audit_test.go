package httpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/everystore"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// auditEvent is an event as GET /ext/audit/events shows it.
type auditEvent struct {
	ID     string `json:"id"`
	Time   string `json:"time"`
	Action string `json:"action"`
	Actor  struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		TokenID  string `json:"token_id"`
	} `json:"actor"`
	Target struct {
		Kind     string `json:"kind"`
		ID       string `json:"id"`
		Username string `json:"username"`
	} `json:"target"`
	RequestID string          `json:"request_id"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
}

type auditPage struct {
	Events        []auditEvent `json:"events"`
	NextPageToken *string      `json:"next_page_token"`
}

// readTrail reads every page of the trail as auth, with the query q
// (without page_token), pages of limit events, and returns the events
// and the raw bodies.
func readTrail(tb testing.TB, w *world, auth string, q url.Values, limit string) ([]auditEvent, []string) {
	tb.Helper()
	var events []auditEvent
	var bodies []string
	q = cloneValues(q)
	q.Set("limit", limit)
	for range 1000 {
		r := w.do("GET", httpserver.AuditEventsPath+"?"+q.Encode(), auth, nil)
		require.Equal(tb, http.StatusOK, r.status, "response: %s", r)
		bodies = append(bodies, string(r.body))
		var p auditPage
		require.NoError(tb, json.Unmarshal(r.body, &p))
		events = append(events, p.Events...)
		if p.NextPageToken == nil {
			return events, bodies
		}
		q.Set("page_token", *p.NextPageToken)
	}
	tb.Fatal("the trail does not end")
	return nil, nil
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Every change made over HTTP is in the trail, once, with who made it,
// the request that made it and its target, on every store; only Admins
// read it, and only their org's; no secret shows in it.
func TestAuditTrailOverHTTP(t *testing.T) {
	t.Parallel()
	everystore.Run(t, func(t *testing.T, k everystore.Kind) {
		f := newFixtureWith(t, orgadmin.Config{}, worldOptions{store: k.Open(t).Store})
		admin := f.caller(f.admin)
		before, _ := readTrail(t, f.world, bearer(f.admin), nil, "1000")

		type change struct {
			action, kind, username string
			requestID              string
		}
		var changes []change
		var secrets []string
		mutate := func(action, kind, username string, r response) map[string]any {
			t.Helper()
			obj := requireOK(t, r)
			changes = append(changes, change{action, kind, username, r.header.Get("X-Request-Id")})
			return obj
		}
		mutate("user.create", "user", "Bot", f.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": "Bot"}))
		tok := mutate("token.create", "token", "Bot", f.do("POST", userPath("bot", "tokens"), bearer(f.admin), map[string]any{"name": "ci"}))
		secrets = append(secrets, tok["token"].(string))
		mutate("instances.set", "user", "Bot", f.do("PUT", userPath("bot", "instances"), bearer(f.admin), validConfig))
		sess := mutate("embed_session.create", "embed_session", "Bot",
			f.do("POST", "/v1/dives/"+acmeDiveID+"/embed-session", bearer(f.admin), map[string]any{"username": "bot"}))
		secrets = append(secrets, sess["session"].(string))
		mutate("token.delete", "token", "Bot", f.do("DELETE", userPath("bot", "tokens", tok["id"].(string)), bearer(f.admin), nil))
		mutate("user.delete", "user", "Bot", f.do("DELETE", userPath("bot"), bearer(f.admin), nil))
		// Refused changes record nothing.
		requireError(t, f.do("DELETE", userPath("bot"), bearer(f.admin), nil), http.StatusNotFound)
		requireError(t, f.do("POST", "/v1/users", bearer(f.bob), map[string]any{"username": "nope"}), http.StatusForbidden)

		events, bodies := readTrail(t, f.world, bearer(f.admin), nil, "2")
		require.Len(t, events, len(before)+len(changes), "one event per change")
		for i, c := range changes {
			ev := events[len(changes)-1-i] // newest first
			assert.Equal(t, c.action, ev.Action)
			assert.Equal(t, c.kind, ev.Target.Kind)
			assert.Equal(t, c.username, ev.Target.Username)
			assert.Equal(t, "admin", ev.Actor.Username)
			assert.Equal(t, admin.UserID(), ev.Actor.ID)
			assert.Equal(t, admin.TokenID(), ev.Actor.TokenID)
			assert.NotEmpty(t, c.requestID)
			assert.Equal(t, c.requestID, ev.RequestID, "%s: the request's id", c.action)
		}
		assert.Equal(t, tok["id"], events[1].Target.ID, "the deleted token")
		assert.Equal(t, tok["id"], events[4].Target.ID, "the created token")
		assert.JSONEq(t, `{"read_write":{"instance_size":"jumbo","cooldown_seconds":60},"read_scaling":{"instance_size":"mega","flock_size":2,"cooldown_seconds":300}}`, string(events[3].After))
		assert.NotEmpty(t, events[3].Before)
		all, _ := readTrail(t, f.world, bearer(f.admin), nil, "1000")
		assert.Equal(t, all, events, "pages of 2 and of 1000 alike")
		assert.Empty(t, everystore.Leaks(secrets, bodies), "no secret in the trail")

		// Filters.
		byAction, _ := readTrail(t, f.world, bearer(f.admin), url.Values{"action": {"token.create"}}, "10")
		require.Len(t, byAction, 1, "the fixture's tokens are seeded (token.seed)")
		assert.Equal(t, tok["id"], byAction[0].Target.ID)
		byTarget, _ := readTrail(t, f.world, bearer(f.admin), url.Values{"target_username": {"Bot"}}, "10")
		assert.Len(t, byTarget, len(changes))
		byActor, _ := readTrail(t, f.world, bearer(f.admin), url.Values{"actor": {admin.UserID()}}, "10")
		assert.Len(t, byActor, len(changes))
		since, _ := readTrail(t, f.world, bearer(f.admin), url.Values{"since": {events[2].Time}}, "10")
		assert.GreaterOrEqual(t, len(since), 3)

		// Admins only; each org its own.
		for _, tok := range []string{f.bob, f.carol, f.robot} {
			requireError(t, f.do("GET", httpserver.AuditEventsPath, bearer(tok), nil), http.StatusForbidden)
		}
		requireError(t, f.do("GET", httpserver.AuditEventsPath, "", nil), http.StatusUnauthorized)
		theirs, _ := readTrail(t, f.world, bearer(f.boss), nil, "1000")
		require.NotEmpty(t, theirs)
		for _, ev := range theirs {
			assert.NotEqual(t, "Bot", ev.Target.Username, "acme's events are invisible to globex")
			assert.NotContains(t, []string{"admin", "bob", "carol", "dave", "robot"}, ev.Target.Username)
		}
	})
}

// Bad query parameters are a 400 naming each.
func TestAuditTrailBadQuery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	env := requireError(t, f.do("GET", httpserver.AuditEventsPath+"?limit=0&page_token=x&since=yesterday&until=2026-01-01&action="+strings.Repeat("a", 300), bearer(f.admin), nil), http.StatusBadRequest)
	var paths []string
	for _, is := range env.Issues {
		require.Len(t, is.Path, 1)
		paths = append(paths, is.Path[0].(string))
	}
	assert.ElementsMatch(t, []string{"limit", "action", "page_token", "since", "until"}, paths)
	requireError(t, f.do("GET", httpserver.AuditEventsPath+"?limit=x", bearer(f.admin), nil), http.StatusBadRequest)
	// target_kind is one of the kinds of targets, as the OpenAPI
	// document says, not a filter that quietly matches nothing.
	for _, kind := range []string{"x", "users", "Token", "embed-session"} {
		is := requireIssue(t, f.do("GET", httpserver.AuditEventsPath+"?target_kind="+kind, bearer(f.admin), nil), "target_kind")
		assert.Equal(t, "invalid_enum_value", is.Code, "%s", kind)
	}
	for _, kind := range []string{"org", "user", "token", "dive", "embed_session"} {
		requireOK(t, f.do("GET", httpserver.AuditEventsPath+"?target_kind="+kind, bearer(f.admin), nil))
	}
	assert.Equal(t, http.StatusMethodNotAllowed, f.do("POST", httpserver.AuditEventsPath, bearer(f.admin), nil).status)
}

// Paging from a cursor while Admins make changes neither skips nor
// repeats an event: the pages after the first are exactly the events
// that were older than it.
func TestAuditTrailCursorUnderConcurrentChanges(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	want, _ := readTrail(t, f.world, bearer(f.admin), nil, "1000")
	var p auditPage
	require.NoError(t, json.Unmarshal(f.do("GET", httpserver.AuditEventsPath+"?limit=3", bearer(f.admin), nil).body, &p))
	require.NotNil(t, p.NextPageToken)
	got := p.Events

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 10 {
				f.clock.Advance(1)
				r := doRequest(t, f.srv.URL, "POST", "/v1/users", bearer(f.admin), map[string]any{"username": "sa" + string(rune('a'+i)) + string(rune('a'+n))})
				assert.Equal(t, http.StatusOK, r.status)
			}
		}()
	}
	for p.NextPageToken != nil {
		r := f.do("GET", httpserver.AuditEventsPath+"?limit=2&page_token="+url.QueryEscape(*p.NextPageToken), bearer(f.admin), nil)
		require.Equal(t, http.StatusOK, r.status)
		p = auditPage{}
		require.NoError(t, json.Unmarshal(r.body, &p))
		got = append(got, p.Events...)
	}
	wg.Wait()
	assert.Equal(t, want, got)
	all, _ := readTrail(t, f.world, bearer(f.admin), nil, "7")
	assert.Len(t, all, len(want)+40)
}

// Two servers sharing one store, the second's clock an hour behind the
// first's: a walk of pages through one sees the trail as it was when
// the walk began, once each, while changes are made through the other;
// those changes come first in the next walk, their times
// notwithstanding.
func TestAuditTrailWalkAcrossServersWithSkewedClocks(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	f := newFixtureWith(t, orgadmin.Config{}, worldOptions{store: store})
	behind := newWorldWith(t, orgadmin.Config{}, worldOptions{store: store})
	behind.clock.Advance(-time.Hour)
	want, _ := readTrail(t, f.world, bearer(f.admin), nil, "1000")

	var got []auditEvent
	var late []string
	q := url.Values{"limit": {"2"}}
	for i := 0; ; i++ {
		var p auditPage
		r := f.do("GET", httpserver.AuditEventsPath+"?"+q.Encode(), bearer(f.admin), nil)
		require.Equal(t, http.StatusOK, r.status, "response: %s", r)
		require.NoError(t, json.Unmarshal(r.body, &p))
		got = append(got, p.Events...)
		if p.NextPageToken == nil {
			break
		}
		q.Set("page_token", *p.NextPageToken)
		name := fmt.Sprintf("late%d", i)
		late = append([]string{name}, late...)
		r = behind.do("POST", "/v1/users", bearer(f.admin), map[string]any{"username": name})
		require.Equal(t, http.StatusOK, r.status, "response: %s", r)
	}
	require.NotEmpty(t, late)
	assert.Equal(t, want, got, "the walk: the trail as it was when it began")
	all, _ := readTrail(t, f.world, bearer(f.admin), nil, "3")
	require.Len(t, all, len(want)+len(late))
	for i, name := range late {
		assert.Equal(t, name, all[i].Target.Username, "the late changes first")
		assert.Less(t, all[i].Time, want[0].Time, "though their times are older")
	}
	assert.Equal(t, want, all[len(late):])
}
