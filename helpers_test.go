package orgadmin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// t0 is the fake clock's starting instant: a whole millisecond, like every
// time the service stores.
var t0 = time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC)

// fakeClock is a clock the tests move by hand.
type fakeClock = fakeclock.Clock

func newFakeClock() *fakeClock { return fakeclock.New(t0) }

// env is a Service on a fresh memory store with a fake clock, and an org
// "acme" whose Admin "admin" is authenticated as admin.
type env struct {
	svc        *orgadmin.Service
	store      *memstore.Store
	clk        *fakeClock
	admin      orgadmin.Caller
	adminToken string
}

const testOrg = "acme"

// newEnv returns an env whose Service uses cfg with the fake clock's Now.
func newEnv(t testing.TB, cfg orgadmin.Config) *env {
	t.Helper()
	clk := newFakeClock()
	cfg.Now = clk.Now
	store := memstore.New()
	svc := orgadmin.New(store, cfg)
	tok, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: testOrg, Username: "admin"})
	require.NoError(t, err)
	admin, err := svc.Authenticate(context.Background(), tok)
	require.NoError(t, err)
	return &env{svc: svc, store: store, clk: clk, admin: admin, adminToken: tok}
}

// serviceAccount creates a service account named name in the env's org.
func (e *env) serviceAccount(t testing.TB, name string) orgadmin.User {
	t.Helper()
	u, err := e.svc.CreateServiceAccount(context.Background(), e.admin, orgadmin.CreateServiceAccountInput{Username: name})
	require.NoError(t, err)
	return u
}

// human creates a user through the Go API in the env's org.
func (e *env) human(t testing.TB, nu orgadmin.NewUser) orgadmin.User {
	t.Helper()
	u, err := e.svc.CreateUser(context.Background(), testOrg, nu)
	require.NoError(t, err)
	return u
}

// login seeds a read_write token for username and authenticates with it.
func (e *env) login(t testing.TB, username string) (orgadmin.Caller, string) {
	t.Helper()
	ctx := context.Background()
	value := "seeded-login-token-" + username
	_, err := e.svc.SeedToken(ctx, testOrg, username, orgadmin.SeedTokenInput{
		Value:            value,
		CreateTokenInput: orgadmin.CreateTokenInput{Name: "login"},
	})
	require.NoError(t, err)
	c, err := e.svc.Authenticate(ctx, value)
	require.NoError(t, err)
	return c, value
}

// token mints a read_write token for username as the Admin.
func (e *env) token(t testing.TB, username string, in orgadmin.CreateTokenInput) orgadmin.Token {
	t.Helper()
	if in.Name == "" {
		in.Name = "t"
	}
	tok, err := e.svc.CreateToken(context.Background(), e.admin, username, in)
	require.NoError(t, err)
	return tok
}

// requireCode asserts that err is an *orgadmin.Error of the sentinel's code,
// compared with errors.Is, and returns it.
func requireCode(t testing.TB, err error, sentinel *orgadmin.Error) *orgadmin.Error {
	t.Helper()
	require.Error(t, err)
	require.Truef(t, errors.Is(err, sentinel), "want %s, got %v", sentinel.Code, err)
	var e *orgadmin.Error
	require.True(t, errors.As(err, &e))
	return e
}

// issuePaths returns the paths of the issues of a BAD_REQUEST error.
func issuePaths(t testing.TB, err error) [][]any {
	t.Helper()
	e := requireCode(t, err, orgadmin.ErrBadRequest)
	out := make([][]any, len(e.Issues))
	for i, is := range e.Issues {
		out[i] = pathOf(is.Path)
	}
	return out
}

// pathOf returns p with its keys as strings and its indexes as ints.
func pathOf(p orgadmin.Path) []any {
	out := make([]any, len(p))
	for i, e := range p {
		if n, ok := e.Index(); ok {
			out[i] = n
		} else {
			out[i], _ = e.Key()
		}
	}
	return out
}

// issueCodes returns the codes of e's issues.
func issueCodes(e *orgadmin.Error) []string {
	out := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		out[i] = string(is.Code)
	}
	return out
}

// The operations of the API, by name, for e.call.
const (
	opGetInstances         = "get instance config"
	opSetInstances         = "set instance config"
	opGetActiveAccounts    = "get active accounts"
	opCreateServiceAccount = "create service account"
	opListUsers            = "list users"
	opDeleteUser           = "delete user"
	opCreateToken          = "create token"
	opListTokens           = "list tokens"
	opDeleteToken          = "delete token"
	opCreateEmbedSession   = "create embed session"
)

var allOps = []string{
	opGetInstances, opSetInstances, opGetActiveAccounts, opCreateServiceAccount, opListUsers,
	opDeleteUser, opCreateToken, opListTokens, opDeleteToken, opCreateEmbedSession,
}

// call runs the operation op as a on the user target (for the operations
// that name one), with an input that breaks no rule, and returns its
// error: a token or Dive it names does not exist.
func (e *env) call(t testing.TB, a orgadmin.Auth, op, target string) error {
	t.Helper()
	ctx := context.Background()
	var err error
	switch op {
	case opGetInstances:
		_, err = e.svc.GetInstanceConfig(ctx, a, target)
	case opSetInstances:
		_, err = e.svc.SetInstanceConfig(ctx, a, target, orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
			ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeStandard},
			ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard, FlockSize: 1},
		}})
	case opGetActiveAccounts:
		_, err = e.svc.GetActiveAccounts(ctx, a)
	case opCreateServiceAccount:
		_, err = e.svc.CreateServiceAccount(ctx, a, orgadmin.CreateServiceAccountInput{Username: "made_by_call"})
		if errors.Is(err, orgadmin.ErrBadRequest) { // made by an earlier call
			err = nil
		}
	case opListUsers:
		_, err = e.svc.ListUsers(ctx, a, orgadmin.ListUsersOptions{})
	case opDeleteUser:
		_, err = e.svc.DeleteUser(ctx, a, target)
	case opCreateToken:
		_, err = e.svc.CreateToken(ctx, a, target, orgadmin.CreateTokenInput{Name: "by call"})
	case opListTokens:
		_, err = e.svc.ListTokens(ctx, a, target)
	case opDeleteToken:
		err = e.svc.DeleteToken(ctx, a, target, "00000000-0000-4000-8000-000000000000")
	case opCreateEmbedSession:
		_, err = e.svc.CreateEmbedSession(ctx, a, "00000000-0000-4000-8000-000000000000", orgadmin.CreateEmbedSessionInput{Username: "bot"})
	default:
		t.Fatalf("no operation %q", op)
	}
	return err
}

// cooldownOf returns the cooldown of s in whole seconds, or -1 when it is
// unset.
func cooldownOf(s orgadmin.InstanceSide) int {
	if d, ok := s.Cooldown.Get(); ok {
		return int(d / time.Second)
	}
	return -1
}
