package orgadmin_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// allEvents returns every audit event of the caller's org, newest first.
func allEvents(t testing.TB, svc *orgadmin.Service, a orgadmin.Auth, q orgadmin.AuditQuery) []orgadmin.AuditEvent {
	t.Helper()
	var out []orgadmin.AuditEvent
	for e, err := range svc.AllAuditEvents(context.Background(), a, q) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func actions(es []orgadmin.AuditEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Action
	}
	return out
}

// Every mutating operation records exactly one event with who, what,
// when and the request id; the oldest are bootstrap's, by the system.
func TestAuditEveryChangeRecordsOneEvent(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := orgadmin.WithRequestID(context.Background(), "req-42")
	bootstrap := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{})
	require.Equal(t, []string{orgadmin.ActionTokenCreate, orgadmin.ActionUserCreate, orgadmin.ActionOrgCreate}, actions(bootstrap))
	for _, ev := range bootstrap {
		assert.Equal(t, orgadmin.SystemActor, ev.ActorUsername)
		assert.Empty(t, ev.ActorID)
		assert.Empty(t, ev.RequestID)
		assert.Equal(t, testOrg, ev.Org)
	}
	assert.Equal(t, e.admin.UserID(), bootstrap[1].TargetID)
	assert.Equal(t, "admin", bootstrap[1].TargetUsername)

	type want struct {
		action, kind, targetUsername string
		actor                        string // username
	}
	var wants []want
	step := func(w want, f func() error) {
		t.Helper()
		e.clk.Advance(time.Second)
		require.NoError(t, f(), w.action)
		wants = append(wants, w)
		got := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{})
		require.Len(t, got, len(bootstrap)+len(wants), "one event for %s", w.action)
		ev := got[0]
		assert.Equal(t, w.action, ev.Action)
		assert.Equal(t, w.kind, ev.TargetKind)
		assert.Equal(t, w.targetUsername, ev.TargetUsername)
		assert.Equal(t, w.actor, ev.ActorUsername)
		assert.Equal(t, e.clk.Now(), ev.At, "the service's clock")
		if w.actor == "admin" {
			assert.Equal(t, e.admin.UserID(), ev.ActorID)
			assert.Equal(t, "req-42", ev.RequestID)
		}
	}
	var sa orgadmin.User
	step(want{orgadmin.ActionUserCreate, orgadmin.TargetUser, "Bot", "admin"}, func() (err error) {
		sa, err = e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: "Bot"})
		return err
	})
	var tok orgadmin.Token
	step(want{orgadmin.ActionTokenCreate, orgadmin.TargetToken, "Bot", "admin"}, func() (err error) {
		tok, err = e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "ci"})
		return err
	})
	newCfg := orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizePulse, FlockSize: 2},
	}
	step(want{orgadmin.ActionInstancesSet, orgadmin.TargetUser, "Bot", "admin"}, func() error {
		_, err := e.svc.SetInstanceConfig(ctx, e.admin, "BOT", orgadmin.SetInstanceConfigInput{Config: newCfg})
		return err
	})
	dive := "0b0d2f7e-4c1a-4b8e-9a55-7d1f3c2b9e10"
	step(want{orgadmin.ActionDiveRegister, orgadmin.TargetDive, "", orgadmin.SystemActor}, func() error {
		return e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: dive, Title: "Sales"})
	})
	step(want{orgadmin.ActionEmbedSessionCreate, orgadmin.TargetEmbedSession, "Bot", "admin"}, func() error {
		_, err := e.svc.CreateEmbedSession(ctx, e.admin, dive, orgadmin.CreateEmbedSessionInput{Username: "bot"})
		return err
	})
	step(want{orgadmin.ActionTokenDelete, orgadmin.TargetToken, "Bot", "admin"}, func() error {
		return e.svc.DeleteToken(ctx, e.admin, "bot", tok.ID)
	})
	step(want{orgadmin.ActionUserCreate, orgadmin.TargetUser, "Carol", orgadmin.SystemActor}, func() error {
		_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: "Carol"})
		return err
	})
	step(want{orgadmin.ActionUserGrant, orgadmin.TargetUser, "Carol", orgadmin.SystemActor}, func() error {
		return e.svc.GrantPrivilege(ctx, testOrg, "carol", orgadmin.PrivilegeViewAllMembers)
	})
	step(want{orgadmin.ActionTokenSeed, orgadmin.TargetToken, "Carol", orgadmin.SystemActor}, func() error {
		_, err := e.svc.SeedToken(ctx, testOrg, "carol", orgadmin.SeedTokenInput{Value: "a-seeded-token-of-carol", CreateTokenInput: orgadmin.CreateTokenInput{Name: "s"}})
		return err
	})
	require.NoError(t, e.svc.CreateOrg(ctx, testOrg+"-two")) // another org's event
	step(want{orgadmin.ActionUserDelete, orgadmin.TargetUser, "Bot", "admin"}, func() error {
		_, err := e.svc.DeleteUser(ctx, e.admin, "bot")
		return err
	})

	got := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{})
	byAction := map[string]orgadmin.AuditEvent{}
	for _, ev := range got[:len(got)-len(bootstrap)] {
		byAction[ev.Action+" "+ev.TargetUsername] = ev
	}
	assert.Equal(t, sa.ID, byAction["user.create Bot"].TargetID)
	assert.Equal(t, sa.ID, byAction["user.delete Bot"].TargetID)
	assert.Equal(t, tok.ID, byAction["token.create Bot"].TargetID)
	assert.Equal(t, tok.ID, byAction["token.delete Bot"].TargetID)
	assert.Equal(t, e.admin.TokenID(), byAction["token.create Bot"].ActorTokenID)
	assert.Equal(t, dive, byAction["embed_session.create Bot"].TargetID)
	set := byAction["instances.set Bot"]
	assert.JSONEq(t, `{"read_write":{"instance_size":"standard","cooldown_seconds":60},"read_scaling":{"instance_size":"standard","flock_size":4,"cooldown_seconds":60}}`, string(set.Before))
	assert.JSONEq(t, `{"read_write":{"instance_size":"jumbo","cooldown_seconds":60},"read_scaling":{"instance_size":"pulse","flock_size":2}}`, string(set.After))
	grant := byAction["user.grant_privilege Carol"]
	assert.JSONEq(t, `{"privileges":[]}`, string(grant.Before))
	assert.JSONEq(t, `{"privileges":["member_management.view_all_members"]}`, string(grant.After))

	// The other org's trail holds its creation only.
	other := allEvents(t, e.svc, e.svc.ActAsOrg(testOrg+"-two"), orgadmin.AuditQuery{})
	assert.Equal(t, []string{orgadmin.ActionOrgCreate}, actions(other))
}

// A refused or failed operation records nothing; neither do operations
// that change nothing.
func TestAuditFailedOperationsRecordNothing(t *testing.T) {
	e := newEnv(t, orgadmin.Config{MaxTokensPerUser: 2})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	e.token(t, "bot", orgadmin.CreateTokenInput{})
	member, _ := e.login(t, "bot")
	require.NoError(t, e.svc.GrantPrivilege(ctx, testOrg, "admin", orgadmin.PrivilegeViewAllMembers))
	before := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{})

	for _, op := range allOps {
		_ = e.call(t, member, op, "admin") // refused: a Member
	}
	_, err := e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: "BOT"})
	requireCode(t, err, orgadmin.ErrBadRequest)
	_, err = e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrBadRequest) // the user holds the maximum
	_, err = e.svc.DeleteUser(ctx, e.admin, "nobody")
	requireCode(t, err, orgadmin.ErrNotFound)
	requireCode(t, e.svc.DeleteToken(ctx, e.admin, "bot", "00000000-0000-4000-8000-000000000000"), orgadmin.ErrNotFound)
	_, err = e.svc.SetInstanceConfig(ctx, e.admin, "nobody", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite: orgadmin.InstanceSide{Size: orgadmin.SizeStandard}, ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard},
	}})
	requireCode(t, err, orgadmin.ErrNotFound)
	require.NoError(t, e.svc.CreateOrg(ctx, testOrg))                                                 // exists: no change
	require.NoError(t, e.svc.GrantPrivilege(ctx, testOrg, "admin", orgadmin.PrivilegeViewAllMembers)) // held: no change

	assert.Equal(t, before, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{}))
}

// Only Admins read the trail: FORBIDDEN for anyone else.
func TestAuditEventsAdminOnly(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	e.human(t, orgadmin.NewUser{Username: "viewer", Privileges: []string{orgadmin.PrivilegeViewAllMembers}})
	for _, name := range []string{"bot", "viewer"} {
		c, value := e.login(t, name)
		_, err := e.svc.AuditEvents(ctx, c, orgadmin.AuditQuery{})
		requireCode(t, err, orgadmin.ErrForbidden)
		_, err = e.svc.AuditEvents(ctx, orgadmin.Bearer(value), orgadmin.AuditQuery{})
		requireCode(t, err, orgadmin.ErrForbidden)
	}
	_, err := e.svc.AuditEvents(ctx, orgadmin.Bearer("nope"), orgadmin.AuditQuery{})
	requireCode(t, err, orgadmin.ErrUnauthorized)
	_, err = e.svc.AuditEvents(ctx, orgadmin.Caller{}, orgadmin.AuditQuery{})
	requireCode(t, err, orgadmin.ErrUnauthorized)
	// A read_scaling token of an Admin may not either.
	tok, err := e.svc.CreateToken(ctx, e.admin, "admin", orgadmin.CreateTokenInput{Name: "rs", Type: orgadmin.Some(orgadmin.TokenReadScaling)})
	require.NoError(t, err)
	_, err = e.svc.AuditEvents(ctx, orgadmin.Bearer(tok.Value), orgadmin.AuditQuery{})
	requireCode(t, err, orgadmin.ErrForbidden)
	_, err = e.svc.AuditEvents(ctx, orgadmin.Bearer(e.adminToken), orgadmin.AuditQuery{})
	require.NoError(t, err)
}

// An Admin sees the events of its own org only.
func TestAuditEventsCrossOrgInvisible(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	tok, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "other", Username: "boss"})
	require.NoError(t, err)
	for _, ev := range allEvents(t, e.svc, orgadmin.Bearer(tok), orgadmin.AuditQuery{}) {
		assert.Equal(t, "other", ev.Org)
	}
	for _, ev := range allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{}) {
		assert.Equal(t, testOrg, ev.Org)
		assert.NotEqual(t, "boss", ev.TargetUsername)
	}
	assert.Len(t, allEvents(t, e.svc, orgadmin.Bearer(tok), orgadmin.AuditQuery{}), 3)
}

// Pages, filters and a malformed query.
func TestAuditEventsPagingAndFilters(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for i := range 7 {
		e.clk.Advance(time.Second)
		e.serviceAccount(t, "bot"+string(rune('a'+i)))
	}
	all := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{})
	require.Len(t, all, 10)
	var paged []orgadmin.AuditEvent
	q := orgadmin.AuditQuery{Limit: orgadmin.Some(3)}
	for {
		page, err := e.svc.AuditEvents(ctx, e.admin, q)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Events), 3)
		paged = append(paged, page.Events...)
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
	}
	assert.Equal(t, all, paged)

	byActor := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: "admin"})
	assert.Len(t, byActor, 7)
	assert.Equal(t, byActor, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: e.admin.UserID()}), "by username or id")
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: orgadmin.SystemActor}), 3)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Action: orgadmin.ActionUserCreate}), 8)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{TargetKind: orgadmin.TargetToken}), 1)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{TargetUsername: "botc"}), 1)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Since: t0.Add(3 * time.Second)}), 5)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Since: t0.Add(time.Second), Until: t0.Add(3 * time.Second)}), 2)
	// The actor filter pages too.
	var pagedActor []orgadmin.AuditEvent
	q = orgadmin.AuditQuery{Limit: orgadmin.Some(2), Actor: "admin"}
	for {
		page, err := e.svc.AuditEvents(ctx, e.admin, q)
		require.NoError(t, err)
		pagedActor = append(pagedActor, page.Events...)
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
	}
	assert.Equal(t, byActor, pagedActor)

	_, err := e.svc.AuditEvents(ctx, e.admin, orgadmin.AuditQuery{PageToken: "garbage", Limit: orgadmin.Some(0), Action: strings.Repeat("x", 300), Since: t0, Until: t0})
	assert.Equal(t, [][]any{{"limit"}, {"action"}, {"until"}, {"page_token"}}, issuePaths(t, err))

	// Times an event cannot have, from the Go API as from the wire.
	for _, q := range []orgadmin.AuditQuery{
		{Since: time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)},
		{Until: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		_, err := e.svc.AuditEvents(ctx, e.admin, q)
		requireCode(t, err, orgadmin.ErrBadRequest)
		assert.Len(t, issuePaths(t, err), 1)
	}
}

// A page token is opaque and checked: one of an earlier version (a time
// and an id), one cut short, or one with a byte changed is a BAD_REQUEST
// naming page_token, never a failure of the server.
func TestAuditPageTokenTamperedIsBadRequest(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for i := range 4 {
		e.serviceAccount(t, "bot"+string(rune('a'+i)))
	}
	page, err := e.svc.AuditEvents(ctx, e.admin, orgadmin.AuditQuery{Limit: orgadmin.Some(2)})
	require.NoError(t, err)
	require.NotEmpty(t, page.NextPageToken)
	raw, err := base64.RawURLEncoding.DecodeString(page.NextPageToken)
	require.NoError(t, err)
	changed := bytes.Clone(raw)
	changed[5] ^= 0x40
	earlier := append([]byte{'a'}, make([]byte, 8)...)
	earlier = append(earlier, "0198f3a2-0000-7000-8000-000000000002"...)
	for name, tok := range map[string]string{
		"earlier version": base64.RawURLEncoding.EncodeToString(earlier),
		"cut short":       base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]),
		"a byte changed":  base64.RawURLEncoding.EncodeToString(changed),
		"not base64":      "!!",
		"too long":        strings.Repeat("A", 100),
	} {
		_, err := e.svc.AuditEvents(ctx, e.admin, orgadmin.AuditQuery{PageToken: tok})
		assert.Equal(t, [][]any{{"page_token"}}, issuePaths(t, err), name)
	}
	next, err := e.svc.AuditEvents(ctx, e.admin, orgadmin.AuditQuery{PageToken: page.NextPageToken})
	require.NoError(t, err, "the token as it came")
	assert.Len(t, next.Events, 5)
}

// Two Services on one store, the clock of one an hour behind the
// other's: the trail is in the order the changes were stored, whatever
// their times, and a walk of pages sees the events stored when it began,
// once each, while the slow-clocked one goes on writing; its later
// changes come first in the next walk.
func TestAuditWalkAcrossServicesWithSkewedClocks(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	behind := fakeclock.New(t0.Add(-time.Hour))
	other := orgadmin.New(e.store, orgadmin.Config{Now: behind.Now})
	admin, err := other.Authenticate(ctx, e.adminToken)
	require.NoError(t, err)
	for i := range 6 {
		svc, who := e.svc, orgadmin.Auth(e.admin)
		if i%2 == 1 {
			svc, who = other, admin
		}
		_, err := svc.CreateServiceAccount(ctx, who, orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("bot%d", i)})
		require.NoError(t, err)
	}
	all := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Action: orgadmin.ActionUserCreate})
	require.Len(t, all, 7)
	for i, ev := range all[:6] {
		assert.Equal(t, fmt.Sprintf("bot%d", 5-i), ev.TargetUsername, "stored order, not time order")
	}

	var walked, late []string
	q := orgadmin.AuditQuery{Action: orgadmin.ActionUserCreate, Limit: orgadmin.Some(2)}
	for i := 0; ; i++ {
		page, err := e.svc.AuditEvents(ctx, e.admin, q)
		require.NoError(t, err)
		for _, ev := range page.Events {
			walked = append(walked, ev.TargetUsername)
		}
		if page.NextPageToken == "" {
			break
		}
		q.PageToken = page.NextPageToken
		name := fmt.Sprintf("late%d", i)
		late = append([]string{name}, late...)
		_, err = other.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: name})
		require.NoError(t, err)
	}
	want := make([]string, len(all))
	for i, ev := range all {
		want[i] = ev.TargetUsername
	}
	assert.Equal(t, want, walked, "the walk: every event stored before it began, once each")
	again := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Action: orgadmin.ActionUserCreate})
	got := make([]string, len(again))
	for i, ev := range again {
		got[i] = ev.TargetUsername
	}
	assert.Equal(t, append(late, want...), got, "the late changes first in the next walk, though their clock is behind")
}

// Events past the retention are not shown, and the org's trail is bound.
func TestAuditRetentionAndBound(t *testing.T) {
	e := newEnv(t, orgadmin.Config{AuditRetention: time.Hour, MaxAuditEventsPerOrg: 5})
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{}), 3)
	e.clk.Advance(2 * time.Hour)
	assert.Empty(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{}), "past the retention")
	for i := range 8 {
		e.serviceAccount(t, "bot"+string(rune('a'+i)))
	}
	got := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{})
	require.Len(t, got, 5, "the bound")
	assert.Equal(t, "both", got[0].TargetUsername)
}

// Config.AuditLog receives one record per event, with no secret.
func TestAuditLogStreamsEvents(t *testing.T) {
	var buf bytes.Buffer
	e := newEnv(t, orgadmin.Config{AuditLog: slog.New(slog.NewJSONHandler(&buf, nil))})
	tok := e.token(t, "admin", orgadmin.CreateTokenInput{Name: "x"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 4, "bootstrap's three events and the token's")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &rec))
	assert.Equal(t, "audit", rec["msg"])
	assert.Equal(t, orgadmin.ActionTokenCreate, rec["action"])
	assert.Equal(t, tok.ID, rec["target_id"])
	assert.Equal(t, "admin", rec["actor_username"])
	assert.NotContains(t, buf.String(), tok.Value)
	assert.NotContains(t, buf.String(), e.adminToken)
}

// queryRecorder is a store that keeps the EventQuery of each listing.
type queryRecorder struct {
	*memstore.Store
	queries []storage.EventQuery
}

func (r *queryRecorder) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	r.queries = append(r.queries, q)
	return r.Store.ListEvents(ctx, org, q)
}

// A listing asks the store to hide what is past the retention, and to
// settle what a writer left unconfirmed more than AuditSettleAfter ago.
func TestAuditEventsQueryTheStoreWithTheServiceClock(t *testing.T) {
	clk := newFakeClock()
	rec := &queryRecorder{Store: memstore.New()}
	svc := orgadmin.New(rec, orgadmin.Config{Now: clk.Now, AuditRetention: time.Hour})
	tok, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: testOrg, Username: "admin"})
	require.NoError(t, err)
	clk.Advance(10 * time.Minute)
	_, err = svc.AuditEvents(context.Background(), orgadmin.Bearer(tok), orgadmin.AuditQuery{Since: t0.Add(-time.Hour), Action: "x"})
	require.NoError(t, err)
	require.Len(t, rec.queries, 1)
	q := rec.queries[0]
	now := t0.Add(10 * time.Minute)
	assert.Equal(t, now.Add(-time.Hour), q.Since, "the retention, later than the asked since")
	assert.Equal(t, now.Add(-orgadmin.AuditSettleAfter), q.SettleBefore)
	assert.Equal(t, "x", q.Action)
	assert.Equal(t, orgadmin.DefaultAuditPageSize, q.Limit)
}

// The actor filter takes a user id or a username: a username names the
// events of every user that bore it, an id those of one user; pages of
// the merged listing hold each event once, newest first. A change made
// through ActAsOrg is the system's.
func TestAuditActorFilterMergesIDAndUsername(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	first, err := e.svc.ActAs(ctx, testOrg, "bot")
	require.NoError(t, err)
	_, err = e.svc.CreateToken(ctx, first, "bot", orgadmin.CreateTokenInput{Name: "old"})
	require.NoError(t, err)
	_, err = e.svc.DeleteUser(ctx, e.admin, "bot")
	require.NoError(t, err)
	e.serviceAccount(t, "bot")
	second, err := e.svc.ActAs(ctx, testOrg, "bot")
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		_, err = e.svc.CreateToken(ctx, second, "bot", orgadmin.CreateTokenInput{Name: name})
		require.NoError(t, err)
	}
	org := e.svc.ActAsOrg(testOrg)
	_, err = e.svc.CreateServiceAccount(ctx, org, orgadmin.CreateServiceAccountInput{Username: "by_platform"})
	require.NoError(t, err)

	byName := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: "bot", Limit: orgadmin.Some(1)})
	require.Len(t, byName, 3, "both bots' tokens, one page at a time, each once")
	ids := map[string]bool{}
	for i, ev := range byName {
		assert.Equal(t, orgadmin.ActionTokenCreate, ev.Action)
		assert.False(t, ids[ev.ID], "repeated")
		ids[ev.ID] = true
		if i > 0 {
			assert.False(t, ev.At.After(byName[i-1].At), "newest first")
		}
	}
	byID := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: second.UserID(), Limit: orgadmin.Some(1)})
	require.Len(t, byID, 2, "the second bot's tokens only")
	for _, ev := range byID {
		assert.Equal(t, second.UserID(), ev.ActorID)
	}

	platform := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Action: orgadmin.ActionUserCreate, TargetUsername: "by_platform"})
	require.Len(t, platform, 1)
	assert.Equal(t, orgadmin.SystemActor, platform[0].ActorUsername)
	assert.Empty(t, platform[0].ActorID)
}

// The API takes the ids of users, tokens and Dives in either case, so the
// trail's filters do too; an org id is case-sensitive, and a username is
// matched as spelled when the event was recorded.
func TestAuditIDFiltersInEitherCase(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	dive := strings.ToUpper(uuid.NewString())
	require.NoError(t, e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: dive, Title: "Sales"}))
	bot := e.serviceAccount(t, "Bot")
	for _, id := range []string{dive, strings.ToLower(dive)} {
		got := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{TargetID: id})
		require.Len(t, got, 1, id)
		assert.Equal(t, orgadmin.ActionDiveRegister, got[0].Action)
		assert.Equal(t, strings.ToLower(dive), got[0].TargetID)
	}
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{TargetID: strings.ToUpper(bot.ID)}), 1)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: strings.ToUpper(e.admin.UserID())}), 1)
	assert.Len(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{TargetUsername: "Bot"}), 1)
	assert.Empty(t, allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{TargetUsername: "bot"}), "as spelled")

	// An org whose id is written as an upper-case UUID.
	org := strings.ToUpper(uuid.NewString())
	tok, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: org, Username: "root"})
	require.NoError(t, err)
	root := orgadmin.Bearer(tok)
	got := allEvents(t, e.svc, root, orgadmin.AuditQuery{TargetKind: orgadmin.TargetOrg, TargetID: org})
	require.Len(t, got, 1)
	assert.Equal(t, orgadmin.ActionOrgCreate, got[0].Action)
	assert.Empty(t, allEvents(t, e.svc, root, orgadmin.AuditQuery{TargetKind: orgadmin.TargetOrg, TargetID: strings.ToLower(org)}))
}

// emptyBytes is a store that gives an event without a before or an after
// as empty slices, as the storage contract lets a store do.
type emptyBytes struct{ storage.Store }

func (e emptyBytes) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	page, err := e.Store.ListEvents(ctx, org, q)
	for i := range page.Events {
		if page.Events[i].Before == nil {
			page.Events[i].Before = []byte{}
		}
		if page.Events[i].After == nil {
			page.Events[i].After = []byte{}
		}
	}
	return page, err
}

// An event without a before or an after has them nil, whatever the
// store gives, so that a Go program can marshal it.
func TestAuditEventsWithoutBeforeAreNil(t *testing.T) {
	svc := orgadmin.New(emptyBytes{memstore.New()}, orgadmin.Config{})
	ctx := context.Background()
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	page, err := svc.AuditEvents(ctx, orgadmin.Bearer(token), orgadmin.AuditQuery{})
	require.NoError(t, err)
	require.NotEmpty(t, page.Events)
	for _, ev := range page.Events {
		assert.Nil(t, ev.Before, ev.Action)
		assert.Nil(t, ev.After, ev.Action)
		_, err := json.Marshal(ev)
		assert.NoError(t, err, ev.Action)
	}
}
