package orgadmin_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/everystore"
	"github.com/orgadmin/orgadmin/internal/testdb"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/mongostore"
	"github.com/orgadmin/orgadmin/storage/redisstore"
)

// cancelKey keys a trigger in a context.
type cancelKey struct{}

// trigger cancels the context it travels in at the nth call it counts
// (from 1): a store call, or a round trip of a store's client. It cancels
// before the call starts, or once its answer is in (after). Zero never
// cancels; calls counts them all.
type trigger struct {
	n      int
	after  bool
	cancel context.CancelFunc

	mu    sync.Mutex
	calls int
}

// withTrigger returns ctx carrying tr.
func withTrigger(ctx context.Context, tr *trigger) context.Context {
	return context.WithValue(ctx, cancelKey{}, tr)
}

// enter counts a call of ctx's trigger, if any, and cancels before it
// when it is the nth. It returns the call's number.
func enter(ctx context.Context) int {
	tr, ok := ctx.Value(cancelKey{}).(*trigger)
	if !ok {
		return 0
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.calls++
	if tr.calls == tr.n && !tr.after {
		tr.cancel()
	}
	return tr.calls
}

// leave cancels after call i of ctx's trigger when it is the nth.
func leave(ctx context.Context, i int) {
	if tr, ok := ctx.Value(cancelKey{}).(*trigger); ok && i != 0 && i == tr.n && tr.after {
		tr.cancel()
	}
}

// cancelingAt is a store whose calls count on the trigger of their
// context.
type cancelingAt struct {
	storage.Store
}

func cancelCall[T any](ctx context.Context, call func() (T, error)) (T, error) {
	i := enter(ctx)
	defer leave(ctx, i)
	return call()
}

func cancelWrite(ctx context.Context, call func() error) error {
	_, err := cancelCall(ctx, func() (struct{}, error) { return struct{}{}, call() })
	return err
}

func (s cancelingAt) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.CreateOrg(ctx, o, a) })
}

func (s cancelingAt) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	return cancelCall(ctx, func() (storage.Org, error) { return s.Store.GetOrg(ctx, id) })
}

func (s cancelingAt) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.CreateUser(ctx, u, lim, a) })
}

func (s cancelingAt) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	return cancelCall(ctx, func() (storage.User, error) { return s.Store.GetUser(ctx, org, folded) })
}

func (s cancelingAt) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.SetPrivileges(ctx, org, userID, from, to, a) })
}

func (s cancelingAt) SetInstances(ctx context.Context, org, userID string, c storage.InstanceConfig, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.SetInstances(ctx, org, userID, c, a) })
}

func (s cancelingAt) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	return cancelCall(ctx, func() (storage.User, error) { return s.Store.DeleteUser(ctx, org, userID, a) })
}

func (s cancelingAt) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	return cancelCall(ctx, func() (storage.UserPage, error) { return s.Store.ListUsers(ctx, org, q) })
}

func (s cancelingAt) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.CreateToken(ctx, t, lim, a) })
}

func (s cancelingAt) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	return cancelCall(ctx, func() (storage.Access, error) { return s.Store.ReadAccess(ctx, q) })
}

func (s cancelingAt) ListTokens(ctx context.Context, org, userID string, at time.Time) ([]storage.Token, error) {
	return cancelCall(ctx, func() ([]storage.Token, error) { return s.Store.ListTokens(ctx, org, userID, at) })
}

func (s cancelingAt) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.DeleteToken(ctx, org, userID, id, r, a) })
}

func (s cancelingAt) SetDuckling(ctx context.Context, d storage.Duckling) error {
	return cancelWrite(ctx, func() error { return s.Store.SetDuckling(ctx, d) })
}

func (s cancelingAt) ListActivity(ctx context.Context, org string) ([]storage.Activity, error) {
	return cancelCall(ctx, func() ([]storage.Activity, error) { return s.Store.ListActivity(ctx, org) })
}

func (s cancelingAt) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.PutDive(ctx, d, a) })
}

func (s cancelingAt) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.CreateDive(ctx, d, a) })
}

func (s cancelingAt) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	return cancelCall(ctx, func() (storage.Dive, error) { return s.Store.GetDive(ctx, org, id) })
}

func (s cancelingAt) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	return cancelCall(ctx, func() (storage.EmbedTarget, error) { return s.Store.GetEmbedTarget(ctx, org, diveID, folded) })
}

func (s cancelingAt) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	return cancelWrite(ctx, func() error { return s.Store.CreateEmbedSession(ctx, es, lim, a) })
}

func (s cancelingAt) EmbedSessionByDigest(ctx context.Context, d storage.Digest) (storage.EmbedSession, error) {
	return cancelCall(ctx, func() (storage.EmbedSession, error) { return s.Store.EmbedSessionByDigest(ctx, d) })
}

func (s cancelingAt) MarkSeeded(ctx context.Context, org string, keys []string) error {
	return cancelWrite(ctx, func() error { return s.Store.MarkSeeded(ctx, org, keys) })
}

func (s cancelingAt) SeedMarks(ctx context.Context, org string) ([]string, error) {
	return cancelCall(ctx, func() ([]string, error) { return s.Store.SeedMarks(ctx, org) })
}

func (s cancelingAt) AddFeedback(ctx context.Context, f storage.Feedback) error {
	return cancelWrite(ctx, func() error { return s.Store.AddFeedback(ctx, f) })
}

func (s cancelingAt) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	return cancelCall(ctx, func() (storage.EventPage, error) { return s.Store.ListEvents(ctx, org, q) })
}

func (s cancelingAt) Ping(ctx context.Context) error {
	return cancelWrite(ctx, func() error { return s.Store.Ping(ctx) })
}

// cancelWorld is the data every cancel probe starts from: org "acme"
// with its Admin "admin", the service account "robot" holding one token,
// and a Dive; direct is a Service on the same store that nothing cancels.
type cancelWorld struct {
	direct     *orgadmin.Service
	store      storage.Store
	admin      orgadmin.Caller
	adminToken string
	robotToken string
	robotTok   orgadmin.Token
	dive       string
	streamed   syncLog // Config.AuditLog of the world's Services
}

// config is the Config of the world's Services, the probed ones too.
func (w *cancelWorld) config() orgadmin.Config {
	c := probeConfig()
	c.AuditLog = slog.New(slog.NewJSONHandler(&w.streamed, nil))
	return c
}

// requireStreamed fails t unless every event in the trails of the
// world's orgs went to Config.AuditLog.
func (w *cancelWorld) requireStreamed(t testing.TB) {
	t.Helper()
	ids := map[string]bool{}
	for _, line := range w.streamed.lines() {
		if id, ok := line["id"].(string); ok {
			ids[id] = true
		}
	}
	for _, org := range []string{"acme", "beta", "gamma"} {
		for e, err := range w.direct.AllAuditEvents(context.Background(), w.direct.ActAsOrg(org), orgadmin.AuditQuery{}) {
			if errors.Is(err, orgadmin.ErrNotFound) {
				break
			}
			require.NoError(t, err)
			require.True(t, ids[e.ID], "event %s %s %s in the trail, not in the audit log", org, e.Action, e.TargetUsername)
		}
	}
}

// maxTokensInProbe is the token limit of the probes' services: robot holds
// one token, so two more fit. maxUsersInProbe is their limit of users
// in an org: admin and robot, and two more.
const (
	maxTokensInProbe = 3
	maxUsersInProbe  = 4
)

func probeConfig() orgadmin.Config {
	return orgadmin.Config{MaxTokensPerUser: maxTokensInProbe, MaxUsersPerOrg: maxUsersInProbe}
}

func newCancelWorld(t *testing.T, store storage.Store) *cancelWorld {
	t.Helper()
	ctx := t.Context()
	w := &cancelWorld{store: store, dive: "0b0d5f5e-4d0b-4a8e-9d43-5b1c4b8b3a01"}
	w.direct = orgadmin.New(store, w.config())
	token, err := w.direct.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	w.adminToken = token
	w.admin, err = w.direct.Authenticate(ctx, token)
	require.NoError(t, err)
	_, err = w.direct.CreateServiceAccount(ctx, w.admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	w.robotTok, err = w.direct.CreateToken(ctx, w.admin, "robot", orgadmin.CreateTokenInput{Name: "ci"})
	require.NoError(t, err)
	w.robotToken = w.robotTok.Value
	require.NoError(t, w.direct.RegisterDive(ctx, "acme", orgadmin.Dive{ID: w.dive, Title: "Sales"}))
	return w
}

// requireSeeded requires, after a creation cut short was made again, the
// token value of username of org to authenticate, username to have been
// created once and its token seeded once (a token seeded by a call cut
// short is withdrawn, an event of its own, then seeded again), and org to
// hold users users. It returns the token's caller.
func (w *cancelWorld) requireSeeded(t testing.TB, org, username, value string, users int) orgadmin.Caller {
	t.Helper()
	ctx := context.Background()
	c, err := w.direct.Authenticate(ctx, value)
	require.NoError(t, err)
	require.Equal(t, 1, w.events(t, org, orgadmin.ActionUserCreate, username))
	require.Equal(t, 1, w.events(t, org, orgadmin.ActionTokenSeed, username)-w.events(t, org, orgadmin.ActionTokenDelete, username))
	page, err := w.direct.ListUsers(ctx, c, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	require.Len(t, page.Users, users)
	return c
}

// events returns how many audit events of action on the target named
// username org holds.
func (w *cancelWorld) events(t testing.TB, org, action, username string) int {
	t.Helper()
	n := 0
	for e, err := range w.direct.AllAuditEvents(context.Background(), w.direct.ActAsOrg(org), orgadmin.AuditQuery{Action: action, TargetUsername: username}) {
		require.NoError(t, err)
		_ = e
		n++
	}
	return n
}

// cancelProbe is one write, run on a Service whose store cancels its
// context, and the check of what it left, run on the world's direct
// Service: landed says whether the write's change is there, given the
// write's answer (nil or a CANCELED error).
type cancelProbe struct {
	name  string
	write func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error
	check func(t testing.TB, w *cancelWorld, err error)
	// visible, when not nil, checks what reads and writes see at once,
	// before any clean-up (mongostore's Cleanup) has run.
	visible func(t testing.TB, w *cancelWorld, err error)
}

// requireAuditedIff fails t unless org's trail holds one event of action
// on username when landed, and none when not.
func (w *cancelWorld) requireAuditedIff(t testing.TB, landed bool, org, action, username string) {
	t.Helper()
	want := 0
	if landed {
		want = 1
	}
	require.Equal(t, want, w.events(t, org, action, username), "%s events of %s (change landed: %v)", action, username, landed)
}

// requireLandedIfNil fails t when the write answered success without its
// change.
func requireLandedIfNil(t testing.TB, err error, landed bool) {
	t.Helper()
	if err == nil {
		require.True(t, landed, "the write succeeded but its change is not there")
	}
}

func (w *cancelWorld) userThere(t testing.TB, username string) bool {
	t.Helper()
	_, err := w.direct.GetUser(context.Background(), "acme", username)
	if errors.Is(err, orgadmin.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// listedUsers returns the usernames ListUsers shows.
func (w *cancelWorld) listedUsers(t testing.TB) []string {
	t.Helper()
	var names []string
	for u, err := range w.direct.AllUsers(context.Background(), w.admin, orgadmin.ListUsersOptions{}) {
		require.NoError(t, err)
		names = append(names, u.Username)
	}
	return names
}

// requireTokenSlots fails t unless robot's live tokens and the tokens it
// can still be given add up to the limit: no slot is held by a token
// that is not listed.
func (w *cancelWorld) requireTokenSlots(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	listed, err := w.direct.ListTokens(ctx, w.admin, "robot")
	require.NoError(t, err)
	for _, tk := range listed {
		if tk.ID == w.robotTok.ID {
			continue
		}
		// every listed token authenticates (its value is unknown here: it
		// was never shown); it is counted below.
	}
	more := 0
	for range maxTokensInProbe + 1 {
		_, err := w.direct.CreateToken(ctx, w.admin, "robot", orgadmin.CreateTokenInput{Name: "fill"})
		if err != nil {
			require.ErrorIs(t, err, orgadmin.ErrBadRequest, "the limit refuses")
			break
		}
		more++
	}
	require.Equal(t, maxTokensInProbe, len(listed)+more, "listed %d, room for %d more", len(listed), more)
}

// requireUserSlots fails t unless acme's users and the users it can
// still be given add up to the limit: no slot is held by a user that is
// not listed.
func (w *cancelWorld) requireUserSlots(t testing.TB) {
	t.Helper()
	listed := len(w.listedUsers(t))
	more := 0
	for i := range maxUsersInProbe + 1 {
		_, err := w.direct.CreateServiceAccount(context.Background(), w.admin, orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("filler%d", i)})
		if err != nil {
			require.ErrorIs(t, err, orgadmin.ErrBadRequest, "the limit refuses")
			break
		}
		more++
	}
	require.Equal(t, maxUsersInProbe, listed+more, "listed %d, room for %d more", listed, more)
}

// requireWholeDeletion fails t unless robot is wholly there (found,
// listed, its token working, no event of its deletion) or wholly gone.
func requireWholeDeletion(t testing.TB, w *cancelWorld, err error) {
	t.Helper()
	there := w.userThere(t, "robot")
	requireLandedIfNil(t, err, !there)
	w.requireAuditedIff(t, !there, "acme", orgadmin.ActionUserDelete, "robot")
	require.Equal(t, there, strings.Contains(strings.Join(w.listedUsers(t), ","), "robot"), "listed as it is there")
	_, authErr := w.direct.Authenticate(context.Background(), w.robotToken)
	if there {
		require.NoError(t, authErr, "the token of a user that is there works")
	} else {
		require.ErrorIs(t, authErr, orgadmin.ErrUnauthorized, "the token of a deleted user works")
	}
}

// requireWholeRevocation fails t unless robot's token is wholly valid
// (authenticating, listed, no event of its deletion) or wholly revoked.
func requireWholeRevocation(t testing.TB, w *cancelWorld, err error) {
	t.Helper()
	_, authErr := w.direct.Authenticate(context.Background(), w.robotToken)
	landed := errors.Is(authErr, orgadmin.ErrUnauthorized)
	if !landed {
		require.NoError(t, authErr)
	}
	requireLandedIfNil(t, err, landed)
	listed, lerr := w.direct.ListTokens(context.Background(), w.admin, "robot")
	require.NoError(t, lerr)
	require.Equal(t, landed, len(listed) == 0, "listed as it authenticates")
	w.requireAuditedIff(t, landed, "acme", orgadmin.ActionTokenDelete, "robot")
}

func cancelProbes() []cancelProbe {
	newConfig := orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeMega, FlockSize: 7},
	}
	newDive := "7c0f1b7e-2f5a-4f61-9a3e-0f6f1d2c3b4a"
	return []cancelProbe{
		{"CreateServiceAccount",
			func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error {
				_, err := svc.CreateServiceAccount(ctx, w.admin, orgadmin.CreateServiceAccountInput{Username: "newbie"})
				return err
			},
			func(t testing.TB, w *cancelWorld, err error) {
				landed := w.userThere(t, "newbie")
				requireLandedIfNil(t, err, landed)
				w.requireAuditedIff(t, landed, "acme", orgadmin.ActionUserCreate, "newbie")
				require.Equal(t, landed, strings.Contains(strings.Join(w.listedUsers(t), ","), "newbie"), "listed as it is there")
				// The name is free again, or taken by the user that is there.
				_, err = w.direct.CreateServiceAccount(context.Background(), w.admin, orgadmin.CreateServiceAccountInput{Username: "newbie"})
				if landed {
					require.ErrorIs(t, err, orgadmin.ErrBadRequest)
				} else {
					require.NoError(t, err, "the name of a creation that did not land is free")
				}
				w.requireUserSlots(t)
			},
			nil},
		{"DeleteUser",
			func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error {
				_, err := svc.DeleteUser(ctx, w.admin, "robot")
				return err
			},
			func(t testing.TB, w *cancelWorld, err error) {
				requireWholeDeletion(t, w, err)
				w.requireUserSlots(t)
			},
			func(t testing.TB, w *cancelWorld, err error) {
				requireWholeDeletion(t, w, err)
				w.requireUserSlots(t) // its slot is free at once
			}},
		{"SetInstanceConfig",
			func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error {
				_, err := svc.SetInstanceConfig(ctx, w.admin, "robot", orgadmin.SetInstanceConfigInput{Config: newConfig})
				return err
			},
			func(t testing.TB, w *cancelWorld, err error) {
				c, gerr := w.direct.GetInstanceConfig(context.Background(), w.admin, "robot")
				require.NoError(t, gerr)
				landed := c.ReadScaling.FlockSize == 7
				requireLandedIfNil(t, err, landed)
				w.requireAuditedIff(t, landed, "acme", orgadmin.ActionInstancesSet, "robot")
			},
			nil},
		{"GrantPrivilege",
			func(ctx context.Context, svc *orgadmin.Service, _ *cancelWorld) error {
				return svc.GrantPrivilege(ctx, "acme", "robot", orgadmin.PrivilegeViewAllMembers)
			},
			func(t testing.TB, w *cancelWorld, err error) {
				u, gerr := w.direct.GetUser(context.Background(), "acme", "robot")
				require.NoError(t, gerr)
				landed := len(u.Privileges) == 1
				requireLandedIfNil(t, err, landed)
				w.requireAuditedIff(t, landed, "acme", orgadmin.ActionUserGrant, "robot")
			},
			nil},
		{"CreateToken",
			func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error {
				_, err := svc.CreateToken(ctx, w.admin, "robot", orgadmin.CreateTokenInput{Name: "new"})
				return err
			},
			func(t testing.TB, w *cancelWorld, err error) {
				listed, lerr := w.direct.ListTokens(context.Background(), w.admin, "robot")
				require.NoError(t, lerr)
				landed := len(listed) == 2
				requireLandedIfNil(t, err, landed)
				created := w.events(t, "acme", orgadmin.ActionTokenCreate, "robot") - 1 // robot's first
				withdrawn := w.events(t, "acme", orgadmin.ActionTokenDelete, "robot")
				require.Equal(t, len(listed)-1, created-withdrawn, "events: %d created, %d withdrawn; %d listed", created, withdrawn, len(listed))
				w.requireTokenSlots(t)
			},
			nil},
		{"DeleteToken",
			func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error {
				return svc.DeleteToken(ctx, w.admin, "robot", w.robotTok.ID)
			},
			func(t testing.TB, w *cancelWorld, err error) {
				requireWholeRevocation(t, w, err)
				w.requireTokenSlots(t)
			},
			requireWholeRevocation},
		{"CreateEmbedSession",
			func(ctx context.Context, svc *orgadmin.Service, w *cancelWorld) error {
				_, err := svc.CreateEmbedSession(ctx, w.admin, w.dive, orgadmin.CreateEmbedSessionInput{Username: "robot"})
				return err
			},
			func(t testing.TB, w *cancelWorld, err error) {
				n := w.events(t, "acme", orgadmin.ActionEmbedSessionCreate, "robot")
				if err == nil {
					require.Equal(t, 1, n)
				}
				require.LessOrEqual(t, n, 1)
			},
			nil},
		{"RegisterDive",
			func(ctx context.Context, svc *orgadmin.Service, _ *cancelWorld) error {
				return svc.RegisterDive(ctx, "acme", orgadmin.Dive{ID: newDive, Title: "New"})
			},
			func(t testing.TB, w *cancelWorld, err error) {
				_, serr := w.direct.CreateEmbedSession(context.Background(), w.admin, newDive, orgadmin.CreateEmbedSessionInput{Username: "robot"})
				landed := serr == nil
				if !landed {
					require.ErrorIs(t, serr, orgadmin.ErrNotFound)
				}
				requireLandedIfNil(t, err, landed)
				n := 0
				for e, lerr := range w.direct.AllAuditEvents(context.Background(), w.direct.ActAsOrg("acme"), orgadmin.AuditQuery{Action: orgadmin.ActionDiveRegister, TargetID: newDive}) {
					require.NoError(t, lerr)
					_ = e
					n++
				}
				require.Equal(t, landed, n == 1, "%d events of the Dive's registration (landed: %v)", n, landed)
			},
			nil},
		{"Bootstrap",
			func(ctx context.Context, svc *orgadmin.Service, _ *cancelWorld) error {
				_, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "beta", Username: "root", Token: "beta-admin-token-0123456789"})
				return err
			},
			func(t testing.TB, w *cancelWorld, err error) {
				// Bootstrapping again, as a restarted server does, completes
				// what was cut short, and leaves one Admin whose token works.
				ctx := context.Background()
				_, berr := w.direct.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "beta", Username: "root", Token: "beta-admin-token-0123456789"})
				require.NoError(t, berr, "bootstrap again")
				w.requireSeeded(t, "beta", "root", "beta-admin-token-0123456789", 1)
			},
			nil},
		{"ApplySeed",
			func(ctx context.Context, svc *orgadmin.Service, _ *cancelWorld) error {
				return svc.ApplySeed(ctx, cancelSeed())
			},
			func(t testing.TB, w *cancelWorld, err error) {
				ctx := context.Background()
				require.NoError(t, w.direct.ApplySeed(ctx, cancelSeed()), "seed again")
				c := w.requireSeeded(t, "gamma", "carol", "seeded-token-value-0123456789", 2)
				ts, terr := w.direct.ListTokens(ctx, c, "carol")
				require.NoError(t, terr)
				require.Len(t, ts, 1)
				// The Dive, whether its creation was cut short or not, is
				// registered once.
				n := 0
				for e, lerr := range w.direct.AllAuditEvents(ctx, w.direct.ActAsOrg("gamma"), orgadmin.AuditQuery{Action: orgadmin.ActionDiveRegister, TargetID: seededDive}) {
					require.NoError(t, lerr)
					_ = e
					n++
				}
				require.Equal(t, 1, n, "events of the seeded Dive's registration")
			},
			nil},
		{"SubmitFeedback",
			func(ctx context.Context, svc *orgadmin.Service, _ *cancelWorld) error {
				_, err := svc.SubmitFeedback(ctx, orgadmin.FeedbackInput{PagePath: "/docs", Text: "fine"})
				return err
			},
			func(testing.TB, *cancelWorld, error) {},
			nil},
	}
}

func cancelSeed() orgadmin.Seed {
	return orgadmin.Seed{Organizations: []orgadmin.SeedOrg{{
		ID: "gamma",
		Users: []orgadmin.SeedUser{
			{Username: "carol", Role: "Admin", Tokens: []orgadmin.SeedToken{{Name: "ci", Value: "seeded-token-value-0123456789"}}},
			{Username: "bot", IsServiceAccount: true},
		},
		Dives: []orgadmin.SeedDive{{ID: seededDive, Title: "Seeded"}},
	}}}
}

// seededDive is the Dive of cancelSeed.
const seededDive = "5eed0000-0000-4000-8000-000000000001"

// cleaner is a store that removes what interrupted writes left
// (mongostore's pending events and tombstones).
type cleaner interface {
	Cleanup(ctx context.Context, now time.Time) (int, error)
}

// cancelKind opens fresh stores on which a context's trigger counts:
// the store as its adapter made it (raw), for the checks, and the one
// the probed Service uses (probed).
type cancelKind struct {
	name string
	open func(t *testing.T) (raw, probed storage.Store)
}

// storeCalls counts the store calls of k's stores.
func storeCalls(k everystore.Kind) cancelKind {
	return cancelKind{name: k.Name, open: func(t *testing.T) (storage.Store, storage.Store) {
		s := k.Open(t).Store
		return s, cancelingAt{s}
	}}
}

// redisTrips counts the round trips of a Redis client (a command or a
// pipeline, a Lua script included).
type redisTrips struct{}

func (redisTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (redisTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		i := enter(ctx)
		defer leave(ctx, i)
		return next(ctx, cmd)
	}
}

func (redisTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		i := enter(ctx)
		defer leave(ctx, i)
		return next(ctx, cmds)
	}
}

// redisRoundTrips counts the round trips of stores on c.
func redisRoundTrips(name string, c redis.UniversalClient) cancelKind {
	c.AddHook(redisTrips{})
	return cancelKind{name: name, open: func(t *testing.T) (storage.Store, storage.Store) {
		s, err := redisstore.New(c, redisstore.Options{Prefix: testdb.RedisPrefix(t, c), Timeout: testdb.Timeout})
		require.NoError(t, err)
		return s, s
	}}
}

// mongoRoundTrips counts the commands of stores on a MongoDB-wire
// server: one is canceled once it is started (before), or once its reply
// is in (after).
func mongoRoundTrips(t *testing.T) cancelKind {
	var started sync.Map // request id → call number
	monitor := &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			started.Store(e.RequestID, enter(ctx))
		},
		Succeeded: func(ctx context.Context, e *event.CommandSucceededEvent) {
			if i, ok := started.LoadAndDelete(e.RequestID); ok {
				leave(ctx, i.(int))
			}
		},
		Failed: func(_ context.Context, e *event.CommandFailedEvent) { started.Delete(e.RequestID) },
	}
	uri := testdb.MongoURI(t)
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(testdb.Timeout).SetMonitor(monitor))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	dbs := testdb.NewMongoDatabases(t, c)
	return cancelKind{name: "mongo", open: func(t *testing.T) (storage.Store, storage.Store) {
		s, err := mongostore.New(t.Context(), dbs.Database(t), mongostore.Options{Timeout: testdb.Timeout})
		require.NoError(t, err)
		return s, s
	}}
}

// A write whose caller's context is canceled at any of its store calls,
// before the call or once it has returned, answers success or CANCELED
// (never an internal error), and leaves the change whole and audited, or
// absent and unaudited: no half-deleted user, no quota slot held by a
// token that is not listed, no event without its change, and no event of
// the trail that Config.AuditLog did not get. Bootstrap and seeding, run
// again, complete what was cut short.
func TestCanceledWritesLeaveNothingHalfDone(t *testing.T) {
	everystore.Run(t, func(t *testing.T, k everystore.Kind) { runCancelProbes(t, storeCalls(k)) })
}

// The same, with the cancel at any round trip between a store and its
// server: in the middle of the store calls that take several.
func TestCanceledRoundTripsLeaveNothingHalfDone(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) { runCancelProbes(t, redisRoundTrips("miniredis", testdb.Miniredis(t))) })
	t.Run("redis", func(t *testing.T) { runCancelProbes(t, redisRoundTrips("redis", testdb.RedisServer(t))) })
	t.Run("cluster", func(t *testing.T) { runCancelProbes(t, redisRoundTrips("cluster", testdb.RedisCluster(t))) })
	t.Run("mongo", func(t *testing.T) { runCancelProbes(t, mongoRoundTrips(t)) })
}

func runCancelProbes(t *testing.T, k cancelKind) {
	for _, p := range cancelProbes() {
		t.Run(p.name, func(t *testing.T) {
			// How many calls the write makes when nothing cancels.
			raw, probed := k.open(t)
			w := newCancelWorld(t, raw)
			counter := &trigger{cancel: func() {}}
			require.NoError(t, p.write(withTrigger(context.Background(), counter), orgadmin.New(probed, probeConfig()), w))
			calls := counter.calls
			require.NotZero(t, calls, "no call counted")
			for n := 1; n <= calls; n++ {
				for _, after := range []bool{false, true} {
					if after && n == calls {
						continue // canceled once all is done
					}
					t.Run(fmt.Sprintf("call%d/after=%v", n, after), func(t *testing.T) {
						raw, probed := k.open(t)
						w := newCancelWorld(t, raw)
						ctx, cancel := context.WithCancel(context.Background())
						defer cancel()
						ctx = withTrigger(ctx, &trigger{n: n, after: after, cancel: cancel})
						err := p.write(ctx, orgadmin.New(probed, w.config()), w)
						if err != nil {
							require.Equal(t, orgadmin.CodeCanceled, orgadmin.ErrorCode(err), "a canceled write's error: %v", err)
							require.ErrorIs(t, err, context.Canceled)
						}
						if p.visible != nil {
							p.visible(t, w, err)
						}
						if c, ok := raw.(cleaner); ok {
							_, cerr := c.Cleanup(context.Background(), time.Now().Add(time.Hour))
							require.NoError(t, cerr)
						}
						w.requireStreamed(t)
						p.check(t, w, err)
					})
				}
			}
		})
	}
}
