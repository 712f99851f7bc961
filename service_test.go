package orgadmin_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// --- Authentication -------------------------------------------------------

func TestAuthenticate_ValidToken(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	sa := e.serviceAccount(t, "Bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "ci"})

	c, err := e.svc.Authenticate(ctx, tok.Value)
	require.NoError(t, err)
	assert.Equal(t, testOrg, c.Org())
	assert.Equal(t, sa.ID, c.UserID())
	assert.Equal(t, "Bot", c.Username())
	assert.Equal(t, orgadmin.RoleMember, c.Role())
	assert.True(t, c.IsServiceAccount())
	assert.Equal(t, tok.ID, c.TokenID())
	assert.Equal(t, orgadmin.TokenReadWrite, c.TokenType())

	assert.Equal(t, "admin", e.admin.Username())
	assert.Equal(t, orgadmin.RoleAdmin, e.admin.Role())
	assert.False(t, e.admin.IsServiceAccount())
}

func TestAuthenticate_UnknownToken(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	for _, v := range []string{"", "x", "oat_unknown", e.adminToken + "x", e.adminToken[:len(e.adminToken)-1]} {
		_, err := e.svc.Authenticate(context.Background(), v)
		requireCode(t, err, orgadmin.ErrUnauthorized)
		assert.Equal(t, orgadmin.CodeUnauthorized, orgadmin.ErrorCode(err))
	}
}

func TestAuthenticate_ExpiresExactlyAtExpireAt(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "short", TTL: orgadmin.Some(300 * time.Second)})
	assert.Equal(t, t0.Add(300*time.Second), tok.ExpireAt)

	e.clk.Advance(299*time.Second + 999*time.Millisecond)
	_, err := e.svc.Authenticate(ctx, tok.Value)
	require.NoError(t, err, "valid 1ms before expire_at")

	e.clk.Advance(time.Millisecond)
	_, err = e.svc.Authenticate(ctx, tok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestAuthenticate_RevokedToken(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{})
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", tok.ID))
	_, err := e.svc.Authenticate(ctx, tok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestAuthenticate_DeletedUser(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{})
	_, err := e.svc.DeleteUser(ctx, e.admin, "bot")
	require.NoError(t, err)
	_, err = e.svc.Authenticate(ctx, tok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestAuthenticate_ValueOver512BytesIsUnauthorized(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	max := strings.Repeat("k", 512)
	_, err := e.svc.SeedToken(ctx, testOrg, "bot", orgadmin.SeedTokenInput{Value: max, CreateTokenInput: orgadmin.CreateTokenInput{Name: "long"}})
	require.NoError(t, err)

	c, err := e.svc.Authenticate(ctx, max)
	require.NoError(t, err, "512 bytes is the longest accepted value")
	assert.Equal(t, "bot", c.Username())

	_, err = e.svc.Authenticate(ctx, max+"k")
	requireCode(t, err, orgadmin.ErrUnauthorized)
	_, err = e.svc.Authenticate(ctx, strings.Repeat("k", 1<<20))
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestAuthenticate_ReadScalingTokenIsForbiddenEverywhere(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	tok, err := e.svc.CreateToken(ctx, e.admin, "admin", orgadmin.CreateTokenInput{Name: "rs", Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
	require.NoError(t, err)
	assert.True(t, tok.ReadOnly())
	assert.Equal(t, orgadmin.TokenReadScaling, tok.Type)

	c, err := e.svc.Authenticate(ctx, tok.Value)
	require.NoError(t, err, "a read_scaling token is a valid credential")
	assert.Equal(t, orgadmin.TokenReadScaling, c.TokenType())
	assert.Equal(t, orgadmin.RoleAdmin, c.Role())

	for _, op := range allOps {
		for _, a := range []orgadmin.Auth{c, orgadmin.Bearer(tok.Value)} {
			err := e.call(t, a, op, "admin")
			assert.Truef(t, errors.Is(err, orgadmin.ErrForbidden), "%s: %v", op, err)
		}
	}
}

// --- Authorization (DESIGN §2) --------------------------------------------

func TestWhoMayDoWhat(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.human(t, orgadmin.NewUser{Username: "member"})
	e.human(t, orgadmin.NewUser{Username: "viewer", Privileges: []string{orgadmin.PrivilegeViewAllMembers}})
	e.serviceAccount(t, "bot")
	e.serviceAccount(t, "doomed")
	member, memberToken := e.login(t, "member")
	viewer, viewerToken := e.login(t, "viewer")
	tokens := map[string]string{"admin": e.adminToken, "member": memberToken, "viewer": viewerToken}

	cases := []struct {
		caller orgadmin.Caller
		op     string
		target string
		ok     bool
	}{
		{e.admin, opGetInstances, "member", true},
		{member, opGetInstances, "MEMBER", true},
		{member, opGetInstances, "viewer", false},
		{member, opSetInstances, "member", true},
		{member, opSetInstances, "bot", false},
		{e.admin, opGetActiveAccounts, "", true},
		{viewer, opGetActiveAccounts, "", false},
		{e.admin, opCreateServiceAccount, "", true},
		{member, opCreateServiceAccount, "", false},
		{e.admin, opListUsers, "", true},
		{viewer, opListUsers, "", true},
		{member, opListUsers, "", false},
		{member, opDeleteUser, "bot", false},
		{e.admin, opDeleteUser, "doomed", true},
		{member, opCreateToken, "member", true},
		{member, opCreateToken, "bot", false},
		{member, opListTokens, "member", true},
		{member, opListTokens, "viewer", false},
		{e.admin, opListTokens, "viewer", true},
		{member, opDeleteToken, "viewer", false},
		{member, opDeleteToken, "member", true},
		{e.admin, opCreateEmbedSession, "", true},
		{member, opCreateEmbedSession, "", false},
	}
	for _, c := range cases {
		// As a Caller, then with its bearer token: the same answer.
		for _, a := range []orgadmin.Auth{c.caller, orgadmin.Bearer(tokens[c.caller.Username()])} {
			err := e.call(t, a, c.op, c.target)
			if c.ok {
				assert.Falsef(t, errors.Is(err, orgadmin.ErrForbidden), "%s %s on %q: %v", c.caller.Username(), c.op, c.target, err)
			} else {
				assert.Truef(t, errors.Is(err, orgadmin.ErrForbidden), "%s %s on %q: %v", c.caller.Username(), c.op, c.target, err)
			}
		}
	}
}

func TestCreateToken_AdminNeverForAnotherHumanUser(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	e.human(t, orgadmin.NewUser{Username: "boss", Role: orgadmin.RoleAdmin})

	_, err := e.svc.CreateToken(ctx, e.admin, "carol", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrForbidden)
	_, err = e.svc.CreateToken(ctx, e.admin, "boss", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrForbidden)

	carol, _ := e.login(t, "carol")
	tok, err := e.svc.CreateToken(ctx, carol, "Carol", orgadmin.CreateTokenInput{Name: "mine"})
	require.NoError(t, err, "a user may create tokens for themself")
	assert.Equal(t, "mine", tok.Name)
}

func TestAuthorization_OrderOfChecks(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	member, _ := e.login(t, "carol")
	bad := orgadmin.CreateTokenInput{Name: ""}

	// 403 from the role comes before 400 from the body.
	_, err := e.svc.CreateServiceAccount(ctx, member, orgadmin.CreateServiceAccountInput{Username: "1bad"})
	requireCode(t, err, orgadmin.ErrForbidden)
	// 400 comes before 404.
	_, err = e.svc.CreateToken(ctx, e.admin, "nosuch", bad)
	requireCode(t, err, orgadmin.ErrBadRequest)
	// 400 comes before the 403 that depends on the target.
	_, err = e.svc.CreateToken(ctx, e.admin, "carol", bad)
	requireCode(t, err, orgadmin.ErrBadRequest)
	// 404 comes before the 403 that depends on the target.
	_, err = e.svc.CreateToken(ctx, e.admin, "nosuch", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrNotFound)
	// A path username longer than 255 characters is a 400, a well-formed
	// name that cannot exist a 404.
	_, err = e.svc.GetInstanceConfig(ctx, e.admin, strings.Repeat("a", 256))
	requireCode(t, err, orgadmin.ErrBadRequest)
	_, err = e.svc.GetInstanceConfig(ctx, e.admin, "no-such")
	requireCode(t, err, orgadmin.ErrNotFound)
}

// With a bearer token, the order is the same, beginning with 401: a bad
// token is refused whatever else is wrong, a Member's 403 comes before
// every problem of its request, and the path's problems come in one 400
// with the body's.
func TestAuthorization_OrderOfChecksWithBearer(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	_, carol := e.login(t, "carol")
	bad := orgadmin.CreateTokenInput{Name: "", DecodeIssues: []orgadmin.Issue{{Message: "Expected number, received string", Path: orgadmin.NewPath("ttl"), Code: orgadmin.IssueInvalidType}}}
	long := strings.Repeat("a", 256)

	for _, tok := range []string{"", "unknown-token-value", strings.Repeat("t", 513)} {
		_, err := e.svc.CreateToken(ctx, orgadmin.Bearer(tok), long, bad)
		requireCode(t, err, orgadmin.ErrUnauthorized)
	}
	_, err := e.svc.CreateToken(ctx, orgadmin.Bearer(carol), long, bad)
	requireCode(t, err, orgadmin.ErrForbidden)
	_, err = e.svc.CreateServiceAccount(ctx, orgadmin.Bearer(carol), orgadmin.CreateServiceAccountInput{Username: "1bad"})
	requireCode(t, err, orgadmin.ErrForbidden)
	_, err = e.svc.CreateToken(ctx, orgadmin.Bearer(e.adminToken), long, bad)
	assert.Equal(t, [][]any{{"username"}, {"ttl"}, {"name"}}, issuePaths(t, err))
	_, err = e.svc.CreateToken(ctx, orgadmin.Bearer(e.adminToken), "carol", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrForbidden)
}

// What a decoder found wrong is reported with every other problem of the
// request, once: a field it could not read was left unset, and is not
// reported again as missing; an issue of the whole body stands for every
// field.
func TestDecodeIssuesAreReportedWithTheRest(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	mistyped := func(path ...any) orgadmin.Issue {
		return orgadmin.Issue{Message: "Expected string, received number", Path: orgadmin.NewPath(path...), Code: orgadmin.IssueInvalidType}
	}
	_, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{
		TTL: orgadmin.Some(1 * time.Second), DecodeIssues: []orgadmin.Issue{mistyped("name")},
	})
	be := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, [][]any{{"name"}, {"ttl"}}, issuePaths(t, err))
	assert.Equal(t, "Expected string, received number", be.Issues[0].Message)

	_, err = e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{
		Config:       orgadmin.InstanceConfig{ReadScaling: orgadmin.InstanceSide{Size: "huge", FlockSize: 1}},
		DecodeIssues: []orgadmin.Issue{mistyped("config", "read_write")},
	})
	assert.Equal(t, [][]any{{"config", "read_write"}, {"config", "read_scaling", "instance_size"}}, issuePaths(t, err))

	whole := orgadmin.Issue{Message: "Body is not valid JSON", Path: orgadmin.Path{}, Code: orgadmin.IssueInvalidType}
	_, err = e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{DecodeIssues: []orgadmin.Issue{whole}})
	assert.Equal(t, [][]any{{}}, issuePaths(t, err))
	_, err = e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(0), DecodeIssues: []orgadmin.Issue{mistyped("offset")}})
	assert.Equal(t, [][]any{{"offset"}, {"limit"}}, issuePaths(t, err))
	_, err = e.svc.SubmitFeedback(ctx, orgadmin.FeedbackInput{PagePath: "/", Text: "x", DecodeIssues: []orgadmin.Issue{whole}})
	requireCode(t, err, orgadmin.ErrBadRequest)

	// Nothing was written.
	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	assert.Empty(t, toks)
}

func TestTenancy_OtherOrgIsInvisible(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	otherTok, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "globex", Username: "root"})
	require.NoError(t, err)
	other, err := e.svc.Authenticate(ctx, otherTok)
	require.NoError(t, err)
	e.serviceAccount(t, "bot")

	_, err = e.svc.GetInstanceConfig(ctx, other, "bot")
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = e.svc.ListTokens(ctx, other, "bot")
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = e.svc.CreateToken(ctx, other, "bot", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = e.svc.DeleteUser(ctx, other, "bot")
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = e.svc.DeleteUser(ctx, other, "admin")
	requireCode(t, err, orgadmin.ErrNotFound)

	page, err := e.svc.ListUsers(ctx, other, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"root"}, usernames(page.Users))
	assert.Equal(t, 1, page.TotalCount)

	// The same username may exist in both orgs.
	_, err = e.svc.CreateServiceAccount(ctx, other, orgadmin.CreateServiceAccountInput{Username: "bot"})
	require.NoError(t, err)
}

// --- Users ----------------------------------------------------------------

func usernames(us []orgadmin.User) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.Username
	}
	return out
}

func TestCreateServiceAccount_MemberRoleServiceAccount(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	u, err := e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: "Ci_Bot", Description: "builds"})
	require.NoError(t, err)
	assert.Equal(t, "Ci_Bot", u.Username)
	assert.Equal(t, "builds", u.Description)
	assert.Equal(t, orgadmin.RoleMember, u.Role)
	assert.True(t, u.IsServiceAccount)
	assert.Equal(t, testOrg, u.Org)
	assert.Equal(t, t0, u.CreatedAt)
	assert.Len(t, u.ID, 36)

	got, err := e.svc.GetUser(ctx, testOrg, "ci_bot")
	require.NoError(t, err)
	assert.Equal(t, u, got, "the spelling given at creation is stored; lookups fold")
}

func TestCreateServiceAccount_DuplicateFoldedUsername(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "Bot")
	for _, name := range []string{"Bot", "bot", "BOT"} {
		_, err := e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: name})
		be := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, be.Issues, 1)
		assert.Equal(t, orgadmin.NewPath("username"), be.Issues[0].Path)
		assert.Equal(t, orgadmin.IssueCode("already_exists"), be.Issues[0].Code)
	}
	// Folding is Unicode simple folding: the Kelvin sign is a k.
	e.serviceAccount(t, "kilo")
	_, err := e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: "\u212Ailo"})
	requireCode(t, err, orgadmin.ErrBadRequest)
}

func TestCreateServiceAccount_ValidationReportsAllProblems(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	_, err := e.svc.CreateServiceAccount(context.Background(), e.admin, orgadmin.CreateServiceAccountInput{
		Username:    "9lives",
		Description: strings.Repeat("d", 1001),
	})
	assert.Equal(t, [][]any{{"username"}, {"description"}}, issuePaths(t, err))
	_, err = e.svc.CreateServiceAccount(context.Background(), e.admin, orgadmin.CreateServiceAccountInput{
		Username: "ok", Description: strings.Repeat("é", 1000),
	})
	assert.NoError(t, err)
}

// limitIssue is the one issue of a creation past Config.MaxUsersPerOrg.
var limitIssue = orgadmin.Issue{Message: "The organization holds the maximum number of users", Path: orgadmin.NewPath("username"), Code: orgadmin.IssueTooBig}

func TestCreateServiceAccount_LimitPerOrg(t *testing.T) {
	e := newEnv(t, orgadmin.Config{MaxUsersPerOrg: 3})
	ctx := context.Background()
	e.serviceAccount(t, "bot1")
	e.human(t, orgadmin.NewUser{Username: "carol"}) // admin, bot1, carol: full

	_, err := e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: "bot2"})
	be := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, []orgadmin.Issue{limitIssue}, be.Issues)
	assert.Equal(t, "BAD_REQUEST: username: The organization holds the maximum number of users", err.Error())
	// The Go API and its human users count alike.
	_, err = e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: "dave", Role: orgadmin.RoleAdmin})
	be = requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, []orgadmin.Issue{limitIssue}, be.Issues)
	// A taken username is still told as such.
	_, err = e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: "BOT1"})
	be = requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, []string{string(orgadmin.IssueAlreadyExists)}, issueCodes(be))
	_, err = e.svc.GetUser(ctx, testOrg, "bot2")
	requireCode(t, err, orgadmin.ErrNotFound)

	// Deleting a user frees its place.
	_, err = e.svc.DeleteUser(ctx, e.admin, "bot1")
	require.NoError(t, err)
	e.serviceAccount(t, "bot2")
	page, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "bot2", "carol"}, usernames(page.Users))

	// The limit is per org.
	_, err = e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "globex", Username: "root"})
	require.NoError(t, err)
	for _, name := range []string{"g1", "g2"} {
		_, err := e.svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: name, IsServiceAccount: true})
		require.NoError(t, err)
	}
	_, err = e.svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "g3", IsServiceAccount: true})
	requireCode(t, err, orgadmin.ErrBadRequest)
}

// limitStore records the limit of users each CreateUser passes.
type limitStore struct {
	storage.Store
	max []int
}

func (l *limitStore) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	l.max = append(l.max, lim.Max)
	return l.Store.CreateUser(ctx, u, lim, a)
}

// The store is asked to keep 100 000 users an org by default, the limit
// configured when one is, and none for a negative one.
func TestCreateUser_DefaultLimitIs100000(t *testing.T) {
	assert.Equal(t, 100_000, orgadmin.DefaultMaxUsersPerOrg)
	for cfg, want := range map[int]int{0: 100_000, 7: 7, -1: 0, -100: 0} {
		store := &limitStore{Store: memstore.New()}
		svc := orgadmin.New(store, orgadmin.Config{MaxUsersPerOrg: cfg})
		_, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: testOrg, Username: "admin"})
		require.NoError(t, err)
		_, err = svc.CreateUser(context.Background(), testOrg, orgadmin.NewUser{Username: "bot", IsServiceAccount: true})
		require.NoError(t, err)
		assert.Equal(t, []int{want, want}, store.max, "MaxUsersPerOrg %d", cfg)
	}
}

// Bootstrap of an Admin the org has no place for fails with the limit's
// BAD_REQUEST, not as if the Admin had been created concurrently and then
// gone missing; the Admin it has is bootstrapped again as usual.
func TestBootstrap_OrgAtTheLimit(t *testing.T) {
	e := newEnv(t, orgadmin.Config{MaxUsersPerOrg: 1})
	ctx := context.Background()
	_, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: testOrg, Username: "root"})
	be := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, []orgadmin.Issue{limitIssue}, be.Issues)
	tok, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: testOrg, Username: "admin"})
	require.NoError(t, err)
	_, err = e.svc.Authenticate(ctx, tok)
	require.NoError(t, err)
}

func TestListUsers_OrderedByFoldedUsername(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, n := range []string{"carol", "Μαρία", "Bob", "Ángel", "alice", "Dave", "Σοφός"} {
		e.serviceAccount(t, n)
	}
	page, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	// By the bytes of the simple case folding: "ángel" (U+00E1) before
	// "μαρία" (U+03BC), whose capital folds to mu, not to the micro sign.
	assert.Equal(t, []string{"admin", "alice", "Bob", "carol", "Dave", "Ángel", "Μαρία", "Σοφός"}, usernames(page.Users))
	assert.Equal(t, 8, page.TotalCount)
	assert.Empty(t, page.NextPageToken, "last page")
}

func TestListUsers_PaginationAndFilter(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, n := range []string{"b1", "b2", "b3", "b4"} {
		e.serviceAccount(t, n)
	}
	e.human(t, orgadmin.NewUser{Username: "h1"})

	p1, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(2)})
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "b1"}, usernames(p1.Users))
	assert.Equal(t, 6, p1.TotalCount)
	require.NotEmpty(t, p1.NextPageToken)

	// page_token takes precedence over offset.
	p2, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), PageToken: p1.NextPageToken, Offset: orgadmin.Some(5)})
	require.NoError(t, err)
	assert.Equal(t, []string{"b2", "b3"}, usernames(p2.Users))
	p3, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), PageToken: p2.NextPageToken})
	require.NoError(t, err)
	assert.Equal(t, []string{"b4", "h1"}, usernames(p3.Users))
	assert.Empty(t, p3.NextPageToken)

	off, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Offset: orgadmin.Some(4)})
	require.NoError(t, err)
	assert.Equal(t, []string{"b4", "h1"}, usernames(off.Users))

	sa, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{ServiceAccount: orgadmin.Some(true)})
	require.NoError(t, err)
	assert.Equal(t, []string{"b1", "b2", "b3", "b4"}, usernames(sa.Users))
	assert.Equal(t, 4, sa.TotalCount)
	humans, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{ServiceAccount: orgadmin.Some(false)})
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "h1"}, usernames(humans.Users))
	assert.Equal(t, 2, humans.TotalCount)
}

// The next page of a filtered listing is filtered too: its page token
// carries is_service_account, so a client that passes the token alone, as
// SPEC says, stays in the listing. The other value with it is a 400; a
// token of an unfiltered listing takes the filter given with it.
func TestListUsers_PageTokenKeepsItsFilter(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, n := range []string{"a1", "b1", "c1", "d1"} {
		e.serviceAccount(t, n)
	}
	for _, n := range []string{"a2", "b2", "c2"} {
		e.human(t, orgadmin.NewUser{Username: n})
	}
	list := func(opt orgadmin.ListUsersOptions) orgadmin.UserPage {
		t.Helper()
		page, err := e.svc.ListUsers(ctx, e.admin, opt)
		require.NoError(t, err)
		return page
	}
	for _, tc := range []struct {
		filter bool
		pages  [][]string
		total  int
	}{
		{true, [][]string{{"a1", "b1"}, {"c1", "d1"}}, 4},
		{false, [][]string{{"a2", "admin"}, {"b2", "c2"}}, 4},
	} {
		p1 := list(orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), ServiceAccount: orgadmin.Some(tc.filter)})
		assert.Equal(t, tc.pages[0], usernames(p1.Users))
		p2 := list(orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), PageToken: p1.NextPageToken})
		assert.Equal(t, tc.pages[1], usernames(p2.Users), "is_service_account=%t, the token alone", tc.filter)
		assert.Equal(t, tc.total, p2.TotalCount)
		assert.Empty(t, p2.NextPageToken)
		again := list(orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), PageToken: p1.NextPageToken, ServiceAccount: orgadmin.Some(tc.filter)})
		assert.Equal(t, tc.pages[1], usernames(again.Users), "the same filter repeated")

		_, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{PageToken: p1.NextPageToken, ServiceAccount: orgadmin.Some(!tc.filter)})
		assert.Equal(t, [][]any{{"page_token"}}, issuePaths(t, err), "the other filter")
		assert.ErrorContains(t, err, fmt.Sprintf("Page token belongs to a listing with is_service_account=%t", tc.filter))
	}

	// An unfiltered listing's token: alone, every user; with a filter,
	// that filter (as every token was before tokens carried it).
	p1 := list(orgadmin.ListUsersOptions{Limit: orgadmin.Some(3)})
	assert.Equal(t, []string{"a1", "a2", "admin"}, usernames(p1.Users))
	all := list(orgadmin.ListUsersOptions{Limit: orgadmin.Some(10), PageToken: p1.NextPageToken})
	assert.Equal(t, []string{"b1", "b2", "c1", "c2", "d1"}, usernames(all.Users))
	assert.Equal(t, 8, all.TotalCount)
	sa := list(orgadmin.ListUsersOptions{Limit: orgadmin.Some(10), PageToken: p1.NextPageToken, ServiceAccount: orgadmin.Some(true)})
	assert.Equal(t, []string{"b1", "c1", "d1"}, usernames(sa.Users))
	assert.Equal(t, 4, sa.TotalCount)
}

func TestListUsers_IntoReusesTheArrayItIsGiven(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, n := range []string{"b1", "b2", "b3"} {
		e.serviceAccount(t, n)
	}
	into := make([]orgadmin.User, 1, 8)
	into[0].Username = "left over"
	page, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Into: into})
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "b1", "b2", "b3"}, usernames(page.Users), "the page alone, none of what Into held")
	assert.Same(t, &into[:1][0], &page.Users[0], "the page is in Into's array")

	// A page larger than Into's array goes to a new one.
	small := make([]orgadmin.User, 0, 2)
	page, err = e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Into: small})
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "b1", "b2", "b3"}, usernames(page.Users))

	// An empty page is an empty slice, Into or not.
	for _, into := range [][]orgadmin.User{nil, make([]orgadmin.User, 0, 4)} {
		page, err = e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Offset: orgadmin.Some(10), Into: into})
		require.NoError(t, err)
		assert.NotNil(t, page.Users)
		assert.Empty(t, page.Users)
		assert.Equal(t, 4, page.TotalCount)
	}
}

func TestListUsers_BadOptions(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	_, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(0), Offset: orgadmin.Some(-1), PageToken: "garbage!"})
	assert.Equal(t, [][]any{{"limit"}, {"offset"}, {"page_token"}}, issuePaths(t, err))
	_, err = e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(1001)})
	assert.Equal(t, [][]any{{"limit"}}, issuePaths(t, err))
	for _, lim := range []int{1, 1000} {
		_, err = e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(lim)})
		assert.NoError(t, err)
	}
	// A cursor that is not a folded username: upper case, or a name as
	// earlier versions folded it (the micro sign for "Μ").
	for _, after := range []string{"Bob", "\u00B5\u03B1", "\u03BC\u03B1"} {
		tok := base64.RawURLEncoding.EncodeToString([]byte("u" + after))
		_, err = e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{PageToken: tok})
		if after == "\u03BC\u03B1" {
			assert.NoError(t, err, "today's fold of the same name")
			continue
		}
		assert.Equal(t, [][]any{{"page_token"}}, issuePaths(t, err), "after %q", after)
	}
}

func TestDeleteUser_CascadesAndFreesUsername(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	sa := e.serviceAccount(t, "Bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{})
	_, err := e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeGiga},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeMega, FlockSize: 9},
	}})
	require.NoError(t, err)
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))
	const dive = "6f1c1c3e-3b7a-4f0e-9b0a-2d4a8f7e5c11"
	require.NoError(t, e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: dive, Title: "Sales"}))
	session, err := e.svc.CreateEmbedSession(ctx, e.admin, dive, orgadmin.CreateEmbedSessionInput{Username: "bot"})
	require.NoError(t, err)

	deleted, err := e.svc.DeleteUser(ctx, e.admin, "BOT")
	require.NoError(t, err)
	assert.Equal(t, "Bot", deleted.Username, "answers the stored spelling")
	assert.Equal(t, sa.ID, deleted.ID)

	_, err = e.svc.Authenticate(ctx, tok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
	_, err = e.svc.GetUser(ctx, testOrg, "bot")
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = e.svc.ResolveEmbedSession(ctx, session)
	requireCode(t, err, orgadmin.ErrNotFound)
	accts, err := e.svc.GetActiveAccounts(ctx, e.admin)
	require.NoError(t, err)
	assert.Empty(t, accts)
	_, err = e.svc.DeleteUser(ctx, e.admin, "bot")
	requireCode(t, err, orgadmin.ErrNotFound)

	// The username can be created anew, with nothing of the old user.
	again := e.serviceAccount(t, "bot")
	assert.NotEqual(t, sa.ID, again.ID)
	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	assert.Empty(t, toks)
	cfg, err := e.svc.GetInstanceConfig(ctx, e.admin, "bot")
	require.NoError(t, err)
	assert.Equal(t, defaultConfig(), cfg)
	accts, err = e.svc.GetActiveAccounts(ctx, e.admin)
	require.NoError(t, err)
	assert.Empty(t, accts)
	_, err = e.svc.Authenticate(ctx, tok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestDeleteUser_AdminCannotDeleteThemself(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, name := range []string{"admin", "ADMIN"} {
		_, err := e.svc.DeleteUser(ctx, e.admin, name)
		be := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, be.Issues, 1)
		assert.Equal(t, orgadmin.NewPath("username"), be.Issues[0].Path)
	}
	_, err := e.svc.GetUser(ctx, testOrg, "admin")
	require.NoError(t, err, "the Admin still exists")

	// Another Admin may delete them.
	e.human(t, orgadmin.NewUser{Username: "second", Role: orgadmin.RoleAdmin})
	second, _ := e.login(t, "second")
	_, err = e.svc.DeleteUser(ctx, second, "admin")
	require.NoError(t, err)
}

// --- Tokens ---------------------------------------------------------------

func TestCreateToken_ValueFormat(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "ci", Description: "pipeline"})

	assert.True(t, strings.HasPrefix(tok.Value, "oat_"), tok.Value)
	assert.Len(t, tok.Value, 53)
	assert.True(t, orgadmin.ValidSecretChecksum(tok.Value))
	for _, i := range []int{4, 20, 46, 47, 52} {
		b := []byte(tok.Value)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		assert.Falsef(t, orgadmin.ValidSecretChecksum(string(b)), "changed character %d", i)
	}
	assert.False(t, orgadmin.ValidSecretChecksum("xyz_"+tok.Value[4:]))
	assert.False(t, orgadmin.ValidSecretChecksum(tok.Value[:52]))

	assert.Equal(t, "ci", tok.Name)
	assert.Equal(t, "pipeline", tok.Description)
	assert.Equal(t, orgadmin.TokenReadWrite, tok.Type)
	assert.False(t, tok.ReadOnly())
	assert.Equal(t, t0, tok.CreatedAt)
	assert.True(t, tok.ExpireAt.IsZero(), "no ttl: never expires")
	assert.Len(t, tok.ID, 36)
}

func TestCreateToken_ValuesDiffer(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	a := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "same"})
	b := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "same"})
	assert.NotEqual(t, a.Value, b.Value)
	assert.NotEqual(t, a.ID, b.ID)
	assert.NotEqual(t, a.Value, e.adminToken)
}

// stringsIn returns every string and byte-array value reachable from v.
func stringsIn(v reflect.Value) []string {
	var out []string
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out = append(out, v.String())
		case reflect.Array, reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				b := make([]byte, v.Len())
				reflect.Copy(reflect.ValueOf(b), v)
				out = append(out, string(b))
				return
			}
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i))
			}
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				walk(iter.Key())
				walk(iter.Value())
			}
		}
	}
	walk(v)
	return out
}

func TestCreateToken_OnlyDigestIsStored(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "ci", TTL: orgadmin.Some(3600 * time.Second), Description: "d"})
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))

	a, err := e.store.ReadAccess(ctx, storage.AccessQuery{Digest: sha256.Sum256([]byte(tok.Value))})
	require.NoError(t, err)
	cred := a.Credential
	assert.Equal(t, tok.ID, cred.Token.ID)
	assert.Equal(t, storage.Digest(sha256.Sum256([]byte(tok.Value))), cred.Token.Digest)

	// Every record reachable through the store.
	var records []any
	records = append(records, cred)
	org, err := e.store.GetOrg(ctx, testOrg)
	require.NoError(t, err)
	records = append(records, org)
	page, err := e.store.ListUsers(ctx, testOrg, storage.UserQuery{Limit: 1000})
	require.NoError(t, err)
	records = append(records, page)
	for _, u := range page.Users {
		toks, err := e.store.ListTokens(ctx, testOrg, u.ID, e.clk.Now())
		require.NoError(t, err)
		records = append(records, toks)
	}
	acts, err := e.store.ListActivity(ctx, testOrg)
	require.NoError(t, err)
	records = append(records, acts)

	seen := 0
	for _, r := range records {
		for _, s := range stringsIn(reflect.ValueOf(r)) {
			seen++
			assert.NotContains(t, s, tok.Value)
			assert.NotContains(t, s, tok.Value[4:], "not even without its prefix")
		}
	}
	assert.Greater(t, seen, 10, "the scan reached the records")

	// And the token record itself has no field equal to the value.
	rv := reflect.ValueOf(cred.Token)
	for i := 0; i < rv.NumField(); i++ {
		for _, s := range stringsIn(rv.Field(i)) {
			assert.NotEqualf(t, tok.Value, s, "field %s", rv.Type().Field(i).Name)
		}
	}

	// What ListTokens answers carries no value either.
	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	assert.Empty(t, toks[0].Value)
}

func TestCreateToken_LimitPerUser(t *testing.T) {
	e := newEnv(t, orgadmin.Config{MaxTokensPerUser: 2})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	a := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "a"})
	e.token(t, "bot", orgadmin.CreateTokenInput{Name: "b", TTL: orgadmin.Some(300 * time.Second)})

	_, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "c"})
	requireCode(t, err, orgadmin.ErrBadRequest)

	// Invalidating one frees a slot.
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", a.ID))
	e.token(t, "bot", orgadmin.CreateTokenInput{Name: "c"})
	_, err = e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "d"})
	requireCode(t, err, orgadmin.ErrBadRequest)

	// So does expiry: only live tokens count.
	e.clk.Advance(300 * time.Second)
	e.token(t, "bot", orgadmin.CreateTokenInput{Name: "d"})
	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "d"}, tokenNames(toks))
}

func tokenNames(ts []orgadmin.Token) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func TestListTokens_OrderedByCreationThenID(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	first := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "first"})
	e.clk.Advance(time.Second)
	// Three tokens minted in the same millisecond sort by id.
	same := []orgadmin.Token{
		e.token(t, "bot", orgadmin.CreateTokenInput{Name: "s1"}),
		e.token(t, "bot", orgadmin.CreateTokenInput{Name: "s2"}),
		e.token(t, "bot", orgadmin.CreateTokenInput{Name: "s3"}),
	}
	e.clk.Advance(time.Millisecond)
	last := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "last"})

	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	require.Len(t, toks, 5)
	assert.Equal(t, first.ID, toks[0].ID)
	assert.Equal(t, last.ID, toks[4].ID)
	mid := []string{toks[1].ID, toks[2].ID, toks[3].ID}
	want := []string{same[0].ID, same[1].ID, same[2].ID}
	assert.ElementsMatch(t, want, mid)
	assert.IsNonDecreasing(t, mid, "same created_ts: ordered by id")
	for _, tk := range toks {
		assert.Empty(t, tk.Value)
	}
	assert.Equal(t, first.CreatedAt, toks[0].CreatedAt)
	assert.Equal(t, t0.Add(time.Second+time.Millisecond), toks[4].CreatedAt)
}

func TestListTokens_LeavesOutExpiredAndInvalidated(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	mint := func(name string, ttl orgadmin.Optional[time.Duration]) orgadmin.Token {
		t.Helper()
		e.clk.Advance(time.Millisecond) // distinct created_ts, so the order is known
		return e.token(t, "bot", orgadmin.CreateTokenInput{Name: name, TTL: ttl})
	}
	mint("forever", orgadmin.Optional[time.Duration]{})
	short := mint("short", orgadmin.Some(300*time.Second))
	mint("hour", orgadmin.Some(time.Hour))
	gone := mint("gone", orgadmin.Optional[time.Duration]{})
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", gone.ID))

	list := func() []orgadmin.Token {
		t.Helper()
		toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
		require.NoError(t, err)
		return toks
	}
	toks := list()
	assert.Equal(t, []string{"forever", "short", "hour"}, tokenNames(toks))
	assert.True(t, toks[0].ExpireAt.IsZero())
	assert.Equal(t, t0.Add(2*time.Millisecond+300*time.Second), toks[1].ExpireAt)
	assert.Equal(t, short.ExpireAt, toks[1].ExpireAt)
	assert.Equal(t, t0.Add(2*time.Millisecond), toks[1].CreatedAt)

	// Now is t0+4ms; short expires at t0+2ms+300s.
	e.clk.Advance(300*time.Second - 2*time.Millisecond - time.Millisecond)
	assert.Equal(t, []string{"forever", "short", "hour"}, tokenNames(list()))
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, []string{"forever", "hour"}, tokenNames(list()))
	e.clk.Advance(3300*time.Second + time.Millisecond) // hour expires at t0+3ms+3600s
	assert.Equal(t, []string{"forever"}, tokenNames(list()))

	// An expired token cannot be deleted either: it is gone.
	err := e.svc.DeleteToken(ctx, e.admin, "bot", short.ID)
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestDeleteToken_EndsAuthenticationAtOnce(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	keep := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "keep"})
	drop := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "drop"})
	_, err := e.svc.Authenticate(ctx, drop.Value)
	require.NoError(t, err)

	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "BOT", drop.ID))
	_, err = e.svc.Authenticate(ctx, drop.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
	_, err = e.svc.Authenticate(ctx, keep.Value)
	require.NoError(t, err)

	// A second Service sharing the store agrees.
	other := orgadmin.New(e.store, orgadmin.Config{Now: e.clk.Now})
	_, err = other.Authenticate(ctx, drop.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)

	err = e.svc.DeleteToken(ctx, e.admin, "bot", drop.ID)
	requireCode(t, err, orgadmin.ErrNotFound)
	err = e.svc.DeleteToken(ctx, e.admin, "bot", "00000000-0000-4000-8000-000000000000")
	requireCode(t, err, orgadmin.ErrNotFound)
	err = e.svc.DeleteToken(ctx, e.admin, "admin", keep.ID)
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestDeleteToken_UserDeletesOwnToken(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	e.human(t, orgadmin.NewUser{Username: "dave"})
	carol, carolTok := e.login(t, "carol")
	dave, _ := e.login(t, "dave")

	toks, err := e.svc.ListTokens(ctx, carol, "carol")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	err = e.svc.DeleteToken(ctx, dave, "carol", toks[0].ID)
	requireCode(t, err, orgadmin.ErrForbidden)
	require.NoError(t, e.svc.DeleteToken(ctx, carol, "carol", toks[0].ID))
	_, err = e.svc.Authenticate(ctx, carolTok)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestCreateToken_TTLBounds(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for _, ttl := range []int{300, 31536000} {
		tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "ok", TTL: orgadmin.Some(time.Duration(ttl) * time.Second)})
		assert.Equal(t, t0.Add(time.Duration(ttl)*time.Second), tok.ExpireAt)
	}
	for _, ttl := range []int{299, 31536001, 0, -1} {
		_, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "bad", TTL: orgadmin.Some(time.Duration(ttl) * time.Second)})
		assert.Equalf(t, [][]any{{"ttl"}}, issuePaths(t, err), "ttl %d", ttl)
	}
	for _, name := range []string{"n", strings.Repeat("名", 255)} {
		e.token(t, "bot", orgadmin.CreateTokenInput{Name: name})
	}
	_, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: strings.Repeat("名", 256)})
	assert.Equal(t, [][]any{{"name"}}, issuePaths(t, err))
}

// --- Validation -----------------------------------------------------------

func TestCreateToken_ReportsAllProblems(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	_, err := e.svc.CreateToken(context.Background(), e.admin, "bot", orgadmin.CreateTokenInput{
		Name: "", TTL: orgadmin.Some(10 * time.Second), Type: orgadmin.Some(orgadmin.TokenType("admin")), Description: strings.Repeat("x", 1001),
	})
	be := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, [][]any{{"name"}, {"ttl"}, {"description"}, {"token_type"}}, issuePaths(t, err))
	assert.Equal(t, []string{"too_small", "too_small", "too_big", "invalid_enum_value"}, issueCodes(be))
	for _, is := range be.Issues {
		assert.NotEmpty(t, is.Message)
	}
	_, err = e.svc.CreateToken(context.Background(), e.admin, "bot", orgadmin.CreateTokenInput{Name: "x", Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
	assert.NoError(t, err)
}

func TestSetInstanceConfig_ReportsAllProblems(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	set := func(in orgadmin.SetInstanceConfigInput) error {
		_, err := e.svc.SetInstanceConfig(context.Background(), e.admin, "admin", in)
		return err
	}
	err := set(orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "huge", Cooldown: orgadmin.Some(59 * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizePulse, FlockSize: 65, Cooldown: orgadmin.Some(60 * time.Second)},
	}})
	assert.Equal(t, [][]any{
		{"config", "read_write", "instance_size"},
		{"config", "read_write", "cooldown_seconds"},
		{"config", "read_scaling", "flock_size"},
		{"config", "read_scaling", "cooldown_seconds"},
	}, issuePaths(t, err))

	// A side left out has no size.
	err = set(orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadScaling: orgadmin.InstanceSide{FlockSize: 2},
	}})
	assert.Equal(t, [][]any{
		{"config", "read_write", "instance_size"},
		{"config", "read_scaling", "instance_size"},
	}, issuePaths(t, err))

	err = set(orgadmin.SetInstanceConfigInput{})
	assert.Equal(t, [][]any{{"config", "read_write", "instance_size"}, {"config", "read_scaling", "instance_size"}}, issuePaths(t, err))
}

// --- Bootstrap ------------------------------------------------------------

func TestBootstrap_CreatesOrgAndAdmin(t *testing.T) {
	clk := newFakeClock()
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	ctx := context.Background()

	_, err := store.GetOrg(ctx, "acme")
	require.ErrorIs(t, err, storage.ErrNotFound)

	tok, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "Root"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tok, "oat_"))
	assert.True(t, orgadmin.ValidSecretChecksum(tok))

	org, err := store.GetOrg(ctx, "acme")
	require.NoError(t, err)
	assert.Equal(t, t0, org.CreatedAt)
	c, err := svc.Authenticate(ctx, tok)
	require.NoError(t, err)
	assert.Equal(t, "Root", c.Username())
	assert.Equal(t, orgadmin.RoleAdmin, c.Role())
	assert.False(t, c.IsServiceAccount())
	assert.Equal(t, "acme", c.Org())
	_, err = svc.CreateServiceAccount(ctx, orgadmin.Bearer(tok), orgadmin.CreateServiceAccountInput{Username: "bot"})
	require.NoError(t, err, "the token works")
}

// seedShortLivedTwice loads sampleSeed on store and seeds alice a value
// with a TTL of 5 minutes twice (the second changes nothing), then moves
// the clock an hour on, past its expiry. It returns the Service, its
// clock, the input and the token seeded.
func seedShortLivedTwice(t *testing.T, store storage.Store) (*orgadmin.Service, *fakeClock, orgadmin.SeedTokenInput, orgadmin.Token) {
	t.Helper()
	clk := newFakeClock()
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	ctx := context.Background()
	loadSeed(t, svc, sampleSeed)
	in := orgadmin.SeedTokenInput{Value: "value-of-a-short-lived-token", CreateTokenInput: orgadmin.CreateTokenInput{Name: "short", TTL: orgadmin.Some(5 * time.Minute)}}
	first, err := svc.SeedToken(ctx, "acme", "alice", in)
	require.NoError(t, err)
	again, err := svc.SeedToken(ctx, "acme", "alice", in)
	require.NoError(t, err)
	assert.Equal(t, first.ID, again.ID, "a live token is held: nothing changes")
	clk.Advance(time.Hour)
	return svc, clk, in, first
}

// A value seeded again after its token expired is seeded anew: the
// expired token is no longer held, and a token that does not
// authenticate would be no answer. Another user's value stays refused.
func TestSeedToken_ExpiredValueIsSeededAnew(t *testing.T) {
	svc, clk, in, first := seedShortLivedTwice(t, memstore.New())
	ctx := context.Background()
	renewed, err := svc.SeedToken(ctx, "acme", "alice", in)
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, renewed.ID)
	assert.True(t, clk.Now().Add(5*time.Minute).Truncate(time.Millisecond).Equal(renewed.ExpireAt), "%v", renewed.ExpireAt)
	c, err := svc.Authenticate(ctx, in.Value)
	require.NoError(t, err)
	assert.Equal(t, "alice", c.Username())

	clk.Advance(time.Hour)
	_, err = svc.SeedToken(ctx, "acme", "bot", in)
	is := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, "value", is.Issues[0].Path.String(), "another user's value, expired or not")
}

// keepsExpired is a store that keeps a token's digest taken after the
// token expired, as the storage contract lets a store do.
type keepsExpired struct{ storage.Store }

func (k keepsExpired) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	if _, err := k.ReadAccess(ctx, storage.AccessQuery{Digest: t.Digest}); err == nil {
		return storage.ErrAlreadyExists
	}
	return k.Store.CreateToken(ctx, t, lim, a)
}

// On a store that keeps an expired token's value taken, seeding that
// value again is refused as in use: it returns no token that cannot
// authenticate.
func TestSeedToken_ExpiredValueTheStoreKeeps(t *testing.T) {
	svc, _, in, _ := seedShortLivedTwice(t, keepsExpired{memstore.New()})
	_, err := svc.SeedToken(context.Background(), "acme", "alice", in)
	is := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, []orgadmin.Issue{{Message: "Token value already in use", Path: orgadmin.NewPath("value"), Code: orgadmin.IssueAlreadyExists}}, is.Issues)
}

// A Bootstrap refused for a malformed username or token value writes
// nothing: neither the organization nor the Admin, nor an audit event.
// A seeded token value is 16 to 512 printable ASCII characters other than
// the space, which no bearer credential holds (DESIGN §6).
func TestSeedToken_ValueRule(t *testing.T) {
	svc, _, _ := seedEnv(t)
	ctx := context.Background()
	loadSeed(t, svc, sampleSeed)
	for i, v := range []string{strings.Repeat("a", 16), "!~" + strings.Repeat("z", 510)} {
		_, err := svc.SeedToken(ctx, "acme", "alice", orgadmin.SeedTokenInput{Value: v, CreateTokenInput: orgadmin.CreateTokenInput{Name: fmt.Sprint("ok", i)}})
		require.NoError(t, err, "%d bytes", len(v))
	}
	for _, v := range []string{
		strings.Repeat("a", 15), strings.Repeat("a", 513),
		"has a space in it 0123", "tab\tin-it-0123456789", "del\x7fin-it-0123456789", "ünïcode-value-0123456789",
	} {
		_, err := svc.SeedToken(ctx, "acme", "alice", orgadmin.SeedTokenInput{Value: v, CreateTokenInput: orgadmin.CreateTokenInput{Name: "bad"}})
		is := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, is.Issues, 1, "%q", v)
		assert.Equal(t, "value", is.Issues[0].Path.String())
		assert.Equal(t, "Token value must be 16 to 512 printable ASCII characters, without spaces", is.Issues[0].Message)
	}
}

func TestBootstrap_MalformedInputWritesNothing(t *testing.T) {
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{Now: newFakeClock().Now})
	ctx := context.Background()
	for _, tc := range []struct {
		in   orgadmin.BootstrapInput
		path string
	}{
		{orgadmin.BootstrapInput{Org: "acme", Username: "1root"}, "username"},
		{orgadmin.BootstrapInput{Org: "acme", Username: ""}, "username"},
		{orgadmin.BootstrapInput{Org: "acme", Username: "root", Token: "short"}, "token"},
		{orgadmin.BootstrapInput{Org: "bad org", Username: "root"}, "org"},
	} {
		_, err := svc.Bootstrap(ctx, tc.in)
		is := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, is.Issues, 1, "%+v", tc.in)
		assert.Equal(t, tc.path, is.Issues[0].Path.String(), "%+v", tc.in)
		_, err = store.GetOrg(ctx, "acme")
		require.ErrorIs(t, err, storage.ErrNotFound, "after Bootstrap(%+v)", tc.in)
	}
	_, err := svc.GetUser(ctx, "acme", "root")
	require.ErrorIs(t, err, orgadmin.ErrNotFound)

	// Every problem at once, each at its field.
	_, err = svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bad org", Username: "1root", Token: "short"})
	is := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, [][]any{{"org"}, {"username"}, {"token"}}, issuePaths(t, err))
	assert.Equal(t, "Organization id must be 1 to 128 ASCII letters, digits, '.', '_', ':' or '-'", is.Issues[0].Message)
}

func TestBootstrap_SameTokenAgainChangesNothing(t *testing.T) {
	clk := newFakeClock()
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	ctx := context.Background()
	in := orgadmin.BootstrapInput{Org: "acme", Username: "admin", Token: "env-provided-admin-token"}

	tok, err := svc.Bootstrap(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, in.Token, tok)
	c, err := svc.Authenticate(ctx, tok)
	require.NoError(t, err)
	before, err := svc.ListTokens(ctx, c, "admin")
	require.NoError(t, err)

	clk.Advance(time.Hour)
	// A restart: a new Service on the same store.
	svc2 := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	tok2, err := svc2.Bootstrap(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, in.Token, tok2)
	c2, err := svc2.Authenticate(ctx, tok2)
	require.NoError(t, err)
	assert.Equal(t, c, c2)

	page, err := svc2.ListUsers(ctx, c2, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, page.TotalCount)
	assert.Equal(t, []string{"admin"}, usernames(page.Users))
	after, err := svc2.ListTokens(ctx, c2, "admin")
	require.NoError(t, err)
	assert.Equal(t, before, after)
	require.Len(t, after, 1)
}

// Bootstrap again (a restart on a persistent store) mints a new token and
// revokes the one before: however often it runs, the Admin holds one
// bootstrap token, and tokens of other names are left alone.
func TestBootstrap_WithoutTokenReplacesTheBootstrapToken(t *testing.T) {
	clk := newFakeClock()
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	ctx := context.Background()
	in := orgadmin.BootstrapInput{Org: "acme", Username: "admin"}

	first, err := svc.Bootstrap(ctx, in)
	require.NoError(t, err)
	c1, err := svc.Authenticate(ctx, first)
	require.NoError(t, err)
	own, err := svc.CreateToken(ctx, c1, "admin", orgadmin.CreateTokenInput{Name: "own"})
	require.NoError(t, err)
	named, err := svc.CreateToken(ctx, c1, "admin", orgadmin.CreateTokenInput{Name: "Bootstrap"})
	require.NoError(t, err)
	last := first
	for range 50 {
		clk.Advance(time.Minute)
		next, err := orgadmin.New(store, orgadmin.Config{Now: clk.Now}).Bootstrap(ctx, in)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(next, "oat_"))
		assert.NotEqual(t, last, next)
		_, err = svc.Authenticate(ctx, last)
		requireCode(t, err, orgadmin.ErrUnauthorized)
		last = next
	}
	c2, err := svc.Authenticate(ctx, last)
	require.NoError(t, err)
	assert.Equal(t, c1.UserID(), c2.UserID())
	toks, err := svc.ListTokens(ctx, c2, "admin")
	require.NoError(t, err)
	names := make([]string, len(toks))
	for i, tok := range toks {
		names[i] = tok.Name
	}
	assert.ElementsMatch(t, []string{"own", "Bootstrap", orgadmin.BootstrapTokenName}, names)
	for _, v := range []string{own.Value, named.Value} {
		_, err := svc.Authenticate(ctx, v)
		require.NoError(t, err, "a token of another name stays")
	}

	page, err := svc.ListUsers(ctx, c2, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, page.TotalCount)
	assert.Equal(t, []string{"admin"}, usernames(page.Users))
}

// bootRacingStore is a store on which another process bootstraps the
// same Admin, whole, between this one's listing of the Admin's tokens
// (which found none to revoke) and its making of its own token.
type bootRacingStore struct {
	*memstore.Store
	other func()
}

func (s *bootRacingStore) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	ts, err := s.Store.ListTokens(ctx, org, userID, liveAt)
	if other := s.other; other != nil {
		s.other = nil
		other()
	}
	return ts, err
}

// Servers started together on one store without a given token each print
// a token, and of those only the latest made stays: the Admin never
// holds two bootstrap tokens.
func TestBootstrap_StartedTogetherLeaveOneBootstrapToken(t *testing.T) {
	clk := newFakeClock()
	ctx := context.Background()
	in := orgadmin.BootstrapInput{Org: "acme", Username: "admin"}
	store := &bootRacingStore{Store: memstore.New()}
	_, err := orgadmin.New(store.Store, orgadmin.Config{Now: clk.Now}).Bootstrap(ctx, in) // an earlier start
	require.NoError(t, err)
	var other string
	store.other = func() {
		var err error
		other, err = orgadmin.New(store.Store, orgadmin.Config{Now: clk.Now}).Bootstrap(ctx, in)
		require.NoError(t, err)
		clk.Advance(time.Second) // this one's token is made later
	}
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	this, err := svc.Bootstrap(ctx, in)
	require.NoError(t, err)
	require.Nil(t, store.other, "the other start ran")

	c, err := svc.Authenticate(ctx, this)
	require.NoError(t, err, "the latest stays")
	_, err = svc.Authenticate(ctx, other)
	requireCode(t, err, orgadmin.ErrUnauthorized)
	toks, err := svc.ListTokens(ctx, c, "admin")
	require.NoError(t, err)
	require.Len(t, toks, 1)
	assert.Equal(t, orgadmin.BootstrapTokenName, toks[0].Name)
}

// A given token replaces a minted bootstrap token, and a new given token
// the one given before.
func TestBootstrap_GivenTokenReplacesTheBootstrapToken(t *testing.T) {
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{})
	ctx := context.Background()
	minted, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	for _, v := range []string{"given-admin-token-0001", "given-admin-token-0002"} {
		tok, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin", Token: v})
		require.NoError(t, err)
		assert.Equal(t, v, tok)
		c, err := svc.Authenticate(ctx, v)
		require.NoError(t, err)
		toks, err := svc.ListTokens(ctx, c, "admin")
		require.NoError(t, err)
		require.Len(t, toks, 1)
		assert.Equal(t, orgadmin.BootstrapTokenName, toks[0].Name)
	}
	for _, v := range []string{minted, "given-admin-token-0001"} {
		_, err = svc.Authenticate(ctx, v)
		requireCode(t, err, orgadmin.ErrUnauthorized)
	}
}

// An Admin at the token limit never makes Bootstrap fail: the bootstrap
// token it holds makes room for the next, and when it holds none Bootstrap
// mints none and changes nothing.
// A given token that Bootstrap refuses (malformed, or another user's)
// revokes nothing: the bootstrap token of the last start still works.
func TestBootstrap_RefusedTokenRevokesNothing(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	_, other := e.login(t, "admin") // a token of the Admin's that is no bootstrap token
	e.serviceAccount(t, "robot")
	theirs, err := e.svc.SeedToken(ctx, testOrg, "robot", orgadmin.SeedTokenInput{Value: "robot-token-0000001", CreateTokenInput: orgadmin.CreateTokenInput{Name: "r"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		value string
		code  orgadmin.IssueCode
	}{
		{"short", orgadmin.IssueInvalidString},
		{"has a space in it 123", orgadmin.IssueInvalidString},
		{theirs.Value, orgadmin.IssueAlreadyExists},
	} {
		_, err := e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: testOrg, Username: "admin", Token: tc.value})
		is := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, is.Issues, 1, tc.value)
		assert.Equal(t, orgadmin.NewPath("token"), is.Issues[0].Path, tc.value)
		assert.Equal(t, tc.code, is.Issues[0].Code, tc.value)
		for _, v := range []string{e.adminToken, other, theirs.Value} {
			_, err := e.svc.Authenticate(ctx, v)
			require.NoError(t, err, "after Bootstrap with %q", tc.value)
		}
	}
}

// TestBootstrap_AnotherUsersTokenWritesNothing: a start that gives the
// token of another user creates no organization and no Admin either.
func TestBootstrap_AnotherUsersTokenWritesNothing(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "robot")
	theirs, err := e.svc.SeedToken(ctx, testOrg, "robot", orgadmin.SeedTokenInput{Value: "robot-token-0000001", CreateTokenInput: orgadmin.CreateTokenInput{Name: "r"}})
	require.NoError(t, err)
	for _, in := range []orgadmin.BootstrapInput{
		{Org: "globex", Username: "admin", Token: theirs.Value},  // another organization
		{Org: testOrg, Username: "newboss", Token: theirs.Value}, // another user of the same
	} {
		_, err := e.svc.Bootstrap(ctx, in)
		is := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, is.Issues, 1, "%+v", in)
		assert.Equal(t, orgadmin.IssueAlreadyExists, is.Issues[0].Code, "%+v", in)
		_, err = e.store.GetOrg(ctx, "globex")
		require.ErrorIs(t, err, storage.ErrNotFound, "after Bootstrap(%+v)", in)
		_, err = e.store.GetUser(ctx, testOrg, "newboss")
		require.ErrorIs(t, err, storage.ErrNotFound, "after Bootstrap(%+v)", in)
	}
	a, err := e.svc.Authenticate(ctx, theirs.Value)
	require.NoError(t, err)
	assert.Equal(t, "robot", a.Username())
}

// A value revoked from another user (perhaps leaked) is given by neither
// Bootstrap nor SeedToken to anyone else, and nothing is written; one
// revoked from the user itself is given again, the caller's word.
func TestRevokedValueIsHandedToNoOneElse(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "robot")
	e.serviceAccount(t, "other")
	const leaked = "robot-token-0000001"
	tok, err := e.svc.SeedToken(ctx, testOrg, "robot", orgadmin.SeedTokenInput{Value: leaked, CreateTokenInput: orgadmin.CreateTokenInput{Name: "r"}})
	require.NoError(t, err)
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "robot", tok.ID))

	for _, in := range []orgadmin.BootstrapInput{
		{Org: "globex", Username: "mallory", Token: leaked}, // another organization
		{Org: testOrg, Username: "newboss", Token: leaked},  // another user of the same
		{Org: testOrg, Username: "admin", Token: leaked},    // an existing other user
	} {
		_, err := e.svc.Bootstrap(ctx, in)
		is := requireCode(t, err, orgadmin.ErrBadRequest)
		assert.Equal(t, []orgadmin.Issue{{Message: "Token value was revoked from another user", Path: orgadmin.NewPath("token"), Code: orgadmin.IssueAlreadyExists}}, is.Issues, "%+v", in)
		_, err = e.store.GetOrg(ctx, "globex")
		require.ErrorIs(t, err, storage.ErrNotFound, "after Bootstrap(%+v)", in)
		_, err = e.store.GetUser(ctx, testOrg, "newboss")
		require.ErrorIs(t, err, storage.ErrNotFound, "after Bootstrap(%+v)", in)
	}
	_, err = e.svc.SeedToken(ctx, testOrg, "other", orgadmin.SeedTokenInput{Value: leaked, CreateTokenInput: orgadmin.CreateTokenInput{Name: "o"}})
	is := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, "value", is.Issues[0].Path.String())
	_, err = e.svc.Authenticate(ctx, leaked)
	require.ErrorIs(t, err, orgadmin.ErrRevokedToken, "still revoked")

	_, err = e.svc.SeedToken(ctx, testOrg, "robot", orgadmin.SeedTokenInput{Value: leaked, CreateTokenInput: orgadmin.CreateTokenInput{Name: "r"}})
	require.NoError(t, err, "its own user's")
	c, err := e.svc.Authenticate(ctx, leaked)
	require.NoError(t, err)
	assert.Equal(t, "robot", c.Username())

	// The Admin's own revoked bootstrap value comes back by Bootstrap.
	const boot = "admin-bootstrap-value-01"
	_, err = e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: testOrg, Username: "admin", Token: boot})
	require.NoError(t, err)
	_, err = e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: testOrg, Username: "admin"}) // revokes boot
	require.NoError(t, err)
	_, err = e.svc.Authenticate(ctx, boot)
	require.ErrorIs(t, err, orgadmin.ErrRevokedToken)
	_, err = e.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: testOrg, Username: "admin", Token: boot})
	require.NoError(t, err)
	_, err = e.svc.Authenticate(ctx, boot)
	require.NoError(t, err)
}

func TestBootstrap_AtTheTokenLimit(t *testing.T) {
	store := memstore.New()
	svc := orgadmin.New(store, orgadmin.Config{MaxTokensPerUser: 3})
	ctx := context.Background()
	in := orgadmin.BootstrapInput{Org: "acme", Username: "admin"}
	first, err := svc.Bootstrap(ctx, in)
	require.NoError(t, err)
	c, err := svc.Authenticate(ctx, first)
	require.NoError(t, err)
	var own []string
	for _, name := range []string{"a", "b"} {
		tok, err := svc.CreateToken(ctx, c, "admin", orgadmin.CreateTokenInput{Name: name})
		require.NoError(t, err)
		own = append(own, tok.Value)
	}
	_, err = svc.CreateToken(ctx, c, "admin", orgadmin.CreateTokenInput{Name: "full"})
	requireCode(t, err, orgadmin.ErrBadRequest)

	second, err := svc.Bootstrap(ctx, in)
	require.NoError(t, err)
	require.NotEmpty(t, second)
	c, err = svc.Authenticate(ctx, second)
	require.NoError(t, err)
	toks, err := svc.ListTokens(ctx, c, "admin")
	require.NoError(t, err)
	assert.Len(t, toks, 3)

	// The Admin revokes its bootstrap token and fills the place.
	for _, tok := range toks {
		if tok.Name == orgadmin.BootstrapTokenName {
			require.NoError(t, svc.DeleteToken(ctx, c, "admin", tok.ID))
		}
	}
	c, err = svc.Authenticate(ctx, own[0])
	require.NoError(t, err)
	_, err = svc.CreateToken(ctx, c, "admin", orgadmin.CreateTokenInput{Name: "c"})
	require.NoError(t, err)
	for _, given := range []string{"", "given-admin-token-0001"} {
		third, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin", Token: given})
		require.NoError(t, err)
		assert.Empty(t, third)
		toks, err = svc.ListTokens(ctx, c, "admin")
		require.NoError(t, err)
		assert.Len(t, toks, 3)
	}
}

func TestBootstrap_RefusesExistingNonAdmin(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	_, err := e.svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: testOrg, Username: "bot"})
	requireCode(t, err, orgadmin.ErrBadRequest)
	_, err = e.svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "bad org", Username: "x"})
	requireCode(t, err, orgadmin.ErrBadRequest)
}

// --- Errors ---------------------------------------------------------------

func TestErrors_IsComparesCode(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	_, err := e.svc.GetUser(context.Background(), testOrg, "nobody")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
	assert.NotErrorIs(t, err, orgadmin.ErrBadRequest)
	assert.NotErrorIs(t, err, orgadmin.ErrInternal)
	assert.Equal(t, orgadmin.CodeNotFound, orgadmin.ErrorCode(err))

	wrapped := fmt.Errorf("loading: %w", err)
	assert.ErrorIs(t, wrapped, orgadmin.ErrNotFound)
	assert.Equal(t, orgadmin.CodeNotFound, orgadmin.ErrorCode(wrapped))

	for _, s := range []*orgadmin.Error{orgadmin.ErrBadRequest, orgadmin.ErrUnauthorized, orgadmin.ErrForbidden, orgadmin.ErrNotFound, orgadmin.ErrInternal} {
		assert.ErrorIs(t, &orgadmin.Error{Code: s.Code, Issues: []orgadmin.Issue{{Message: "m"}}}, s)
		assert.Equal(t, s.Code, orgadmin.ErrorCode(s))
	}
}

func TestErrorCode_PlainErrorIsInternal(t *testing.T) {
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(errors.New("boom")))
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(storage.ErrNotFound))
	assert.Equal(t, orgadmin.Code(""), orgadmin.ErrorCode(nil))
}

// A nil *Error returned as an error (a non-nil error holding a nil
// pointer) panics nowhere: it is an internal error, wrapped or not, no
// sentinel's, and reads "<nil>".
func TestError_NilPointerHeldByAnErrorPanicsNowhere(t *testing.T) {
	var nilErr *orgadmin.Error
	var err error = nilErr
	for _, err := range []error{err, fmt.Errorf("x: %w", err)} {
		assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err))
		assert.False(t, errors.Is(err, orgadmin.ErrNotFound))
		assert.NotPanics(t, func() { _ = err.Error() })
	}
	assert.False(t, orgadmin.ErrNotFound.Is(nilErr), "a nil target matches nothing")
	assert.Equal(t, "<nil>", err.Error())
	assert.Equal(t, "x: <nil>", fmt.Errorf("x: %w", err).Error())
	assert.NoError(t, errors.Unwrap(err))
}

func TestCode_MessagesOfSpec(t *testing.T) {
	assert.Equal(t, "Bad Request", orgadmin.CodeBadRequest.Message())
	assert.Equal(t, "Invalid Credentials", orgadmin.CodeUnauthorized.Message())
	assert.Equal(t, "Unauthorized", orgadmin.CodeForbidden.Message())
	assert.Equal(t, "Not Found", orgadmin.CodeNotFound.Message())
	assert.Equal(t, "Internal Error", orgadmin.CodeInternal.Message())
}

// failingStore is a memory store whose token lookups fail with a cause that
// must stay in the logs.
type failingStore struct {
	*memstore.Store
	err error
}

func (s failingStore) ReadAccess(context.Context, storage.AccessQuery) (storage.Access, error) {
	return storage.Access{}, s.err
}

// failingReader is a Rand that always fails.
type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestError_InternalCauseNeverInIssues(t *testing.T) {
	ctx := context.Background()
	cause := errors.New("dial tcp 10.1.2.3:6379: secret-host refused")
	svc := orgadmin.New(failingStore{memstore.New(), cause}, orgadmin.Config{})
	_, err := svc.Authenticate(ctx, "some-token-value")
	ie := requireCode(t, err, orgadmin.ErrInternal)
	assert.ErrorIs(t, err, cause, "the cause is kept for logs")
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err))
	for _, is := range ie.Issues {
		assert.NotContains(t, is.Message, "secret-host")
		assert.NotContains(t, fmt.Sprint(is.Path), "secret-host")
	}

	// A failing random source is an internal error too.
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	randCause := errors.New("entropy pool /dev/secret exhausted")
	bad := orgadmin.New(e.store, orgadmin.Config{Now: e.clk.Now, Rand: failingReader{randCause}})
	_, err = bad.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "x"})
	ie = requireCode(t, err, orgadmin.ErrInternal)
	assert.ErrorIs(t, err, randCause)
	for _, is := range ie.Issues {
		assert.NotContains(t, is.Message, "/dev/secret")
	}

	// The same holds for an *Error built by hand.
	manual := &orgadmin.Error{Code: orgadmin.CodeInternal, Err: cause}
	assert.Empty(t, manual.Issues)
	assert.ErrorIs(t, manual, orgadmin.ErrInternal)
}

// requireTokenLimit creates limit tokens for the service account named
// username, as the Admin, then checks that one more is a BAD_REQUEST.
func requireTokenLimit(t testing.TB, e *env, username string, limit int) {
	t.Helper()
	ctx := context.Background()
	for i := range limit {
		_, err := e.svc.CreateToken(ctx, e.admin, username, orgadmin.CreateTokenInput{Name: fmt.Sprint("t", i)})
		require.NoError(t, err, "token %d", i)
	}
	_, err := e.svc.CreateToken(ctx, e.admin, username, orgadmin.CreateTokenInput{Name: "one more"})
	requireCode(t, err, orgadmin.ErrBadRequest)
}

func TestCreateToken_DefaultLimitIs1000(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	requireTokenLimit(t, e, "bot", 1000)
	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	assert.Len(t, toks, 1000)
	// The limit is per user.
	e.serviceAccount(t, "other")
	e.token(t, "other", orgadmin.CreateTokenInput{Name: "x"})
}

// A negative MaxTokensPerUser, EmbedSessionTTL or DucklingLease means the
// default, as a negative retention does: Bootstrap mints a token, the
// limit is 1000 live tokens, a session lives 24 hours and an active mark
// 10 minutes.
func TestConfig_NegativeMeansDefault(t *testing.T) {
	e := newEnv(t, orgadmin.Config{MaxTokensPerUser: -1, EmbedSessionTTL: -time.Hour, DucklingLease: -time.Minute})
	ctx := context.Background()
	require.NotEmpty(t, e.adminToken, "Bootstrap minted a token")
	e.serviceAccount(t, "bot")
	requireTokenLimit(t, e, "bot", 1000)

	require.NoError(t, e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b", Title: "Sales"}))
	value, err := e.svc.CreateEmbedSession(ctx, e.admin, "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b", orgadmin.CreateEmbedSessionInput{Username: "bot"})
	require.NoError(t, err)
	es, err := e.svc.ResolveEmbedSession(ctx, value)
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, es.ExpiresAt.Sub(es.CreatedAt))

	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))
	e.clk.Advance(10*time.Minute - time.Second)
	accounts, err := e.svc.GetActiveAccounts(ctx, e.admin)
	require.NoError(t, err)
	require.Len(t, accounts, 1)
	assert.Equal(t, orgadmin.StatusActive, accounts[0].Ducklings[0].Status)
}

func TestListUsers_RequiresViewAllMembers(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	carol, tok := e.login(t, "carol")
	_, err := e.svc.ListUsers(ctx, carol, orgadmin.ListUsersOptions{})
	requireCode(t, err, orgadmin.ErrForbidden)

	require.NoError(t, e.svc.GrantPrivilege(ctx, testOrg, "Carol", orgadmin.PrivilegeViewAllMembers))
	require.NoError(t, e.svc.GrantPrivilege(ctx, testOrg, "carol", orgadmin.PrivilegeViewAllMembers), "granting twice is harmless")
	carol, err = e.svc.Authenticate(ctx, tok)
	require.NoError(t, err)
	assert.Equal(t, []string{orgadmin.PrivilegeViewAllMembers}, carol.Privileges())
	page, err := e.svc.ListUsers(ctx, carol, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "carol"}, usernames(page.Users))

	// The privilege grants nothing else.
	_, err = e.svc.GetActiveAccounts(ctx, carol)
	requireCode(t, err, orgadmin.ErrForbidden)
	err = e.svc.GrantPrivilege(ctx, testOrg, "nobody", orgadmin.PrivilegeViewAllMembers)
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestSubmitFeedback_Rules(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	id, err := e.svc.SubmitFeedback(ctx, orgadmin.FeedbackInput{PagePath: "/docs/api", Text: strings.Repeat("é", 2000), PageTitle: "API", Source: "agent"})
	require.NoError(t, err)
	assert.Len(t, id, 36)
	id2, err := e.svc.SubmitFeedback(ctx, orgadmin.FeedbackInput{PagePath: "/docs/api", Text: "again"})
	require.NoError(t, err)
	assert.NotEqual(t, id, id2)

	_, err = e.svc.SubmitFeedback(ctx, orgadmin.FeedbackInput{})
	assert.Equal(t, [][]any{{"page_path"}, {"text"}}, issuePaths(t, err))
	_, err = e.svc.SubmitFeedback(ctx, orgadmin.FeedbackInput{PagePath: "/p", Text: strings.Repeat("x", 2001)})
	assert.Equal(t, [][]any{{"text"}}, issuePaths(t, err))
}

func TestBootstrap_ConcurrentCallsCreateOneAdmin(t *testing.T) {
	clk := newFakeClock()
	store := memstore.New()
	ctx := context.Background()
	const n = 8
	tokens := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One Service per goroutine, like processes sharing a store.
			svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
			tokens[i], errs[i] = svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
		}()
	}
	wg.Wait()
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	var userID string
	for i := range n {
		require.NoError(t, errs[i])
		c, err := svc.Authenticate(ctx, tokens[i])
		if err != nil {
			requireCode(t, err, orgadmin.ErrUnauthorized) // replaced by a later call
			continue
		}
		if userID == "" {
			userID = c.UserID()
		}
		assert.Equal(t, userID, c.UserID(), "every token belongs to the one Admin")
	}
	require.NotEmpty(t, userID, "a token of the last calls works")
	// One more call leaves one bootstrap token.
	last, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	c, err := svc.Authenticate(ctx, last)
	require.NoError(t, err)
	toks, err := svc.ListTokens(ctx, c, "admin")
	require.NoError(t, err)
	assert.Len(t, toks, 1)
	page, err := svc.ListUsers(ctx, c, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, page.TotalCount)
}

func TestCreateServiceAccount_ConcurrentSameFoldedNameOneWins(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	names := []string{"bot", "Bot", "BOT", "bOt", "boT", "BOt", "bOT", "BoT"}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.svc.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: name})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			requireCode(t, err, orgadmin.ErrBadRequest)
		}
	}
	assert.Equal(t, 1, ok)
	page, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, page.TotalCount)
}

func TestTimes_MillisecondPrecision(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.clk.Advance(1500 * time.Microsecond)
	u := e.serviceAccount(t, "bot")
	assert.Equal(t, t0.Add(time.Millisecond), u.CreatedAt, "truncated to the millisecond")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{TTL: orgadmin.Some(300 * time.Second)})
	assert.Equal(t, t0.Add(time.Millisecond), tok.CreatedAt)
	assert.Equal(t, t0.Add(time.Millisecond+300*time.Second), tok.ExpireAt)
	assert.Equal(t, time.UTC, tok.CreatedAt.Location())

	// The token expires at the expire_at it shows.
	e.clk.Advance(300*time.Second - 500*time.Microsecond - time.Nanosecond)
	_, err := e.svc.Authenticate(ctx, tok.Value)
	require.NoError(t, err)
	e.clk.Advance(time.Nanosecond)
	_, err = e.svc.Authenticate(ctx, tok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

func TestActAs(t *testing.T) {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	require.NoError(t, svc.CreateOrg(ctx, "acme"))
	_, err := svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "Bob"})
	require.NoError(t, err)

	bob, err := svc.ActAs(ctx, "acme", "BOB")
	require.NoError(t, err)
	assert.Equal(t, "Bob", bob.Username())
	assert.Equal(t, orgadmin.TokenReadWrite, bob.TokenType())
	_, err = svc.GetInstanceConfig(ctx, bob, "bob")
	require.NoError(t, err, "a user acting as themself")
	_, err = svc.ListUsers(ctx, bob, orgadmin.ListUsersOptions{})
	require.ErrorIs(t, err, orgadmin.ErrForbidden, "a Member without the privilege")

	_, err = svc.ActAs(ctx, "acme", "nobody")
	require.ErrorIs(t, err, orgadmin.ErrNotFound)
	_, err = svc.ActAs(ctx, "globex", "bob")
	require.ErrorIs(t, err, orgadmin.ErrNotFound)
}

func TestCreateOrg_IdRuleAndIdempotence(t *testing.T) {
	ctx := context.Background()
	svc := orgadmin.New(memstore.New(), orgadmin.Config{})
	for _, ok := range []string{"a", "acme", "Acme-2.eu_west:1", strings.Repeat("o", 128)} {
		require.NoError(t, svc.CreateOrg(ctx, ok), ok)
		require.NoError(t, svc.CreateOrg(ctx, ok), "again: %s", ok)
	}
	for _, bad := range []string{"", strings.Repeat("o", 129), "a b", "{acme}", "acmé", "a/b"} {
		requireCode(t, svc.CreateOrg(ctx, bad), orgadmin.ErrBadRequest)
	}
}

// A token id over 255 characters is malformed (400); a shorter unknown one,
// uuid or not, is simply missing (404).
func TestDeleteToken_IdBounds(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	requireCode(t, e.svc.DeleteToken(ctx, e.admin, "admin", strings.Repeat("x", 256)), orgadmin.ErrBadRequest)
	requireCode(t, e.svc.DeleteToken(ctx, e.admin, "admin", strings.Repeat("x", 255)), orgadmin.ErrNotFound)
	requireCode(t, e.svc.DeleteToken(ctx, e.admin, "admin", "not-a-uuid"), orgadmin.ErrNotFound)
	requireCode(t, e.svc.DeleteToken(ctx, e.admin, "admin", ""), orgadmin.ErrBadRequest)
}

// cancelingStore is a memory store that fails every user creation and
// token listing with its context's error once that context is done, as a
// networked store does.
type cancelingStore struct {
	*memstore.Store
}

func (s cancelingStore) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("create user: %w", err)
	}
	return s.Store.CreateUser(ctx, u, lim, a)
}

func (s cancelingStore) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	if err := ctx.Err(); err != nil {
		return storage.Access{}, err
	}
	return s.Store.ReadAccess(ctx, q)
}

// An operation whose caller's context is canceled fails with an error
// that errors.Is recognises as context.Canceled, classified CANCELED: not
// a server failure.
func TestCanceledCallerIsNoInternalError(t *testing.T) {
	svc := orgadmin.New(cancelingStore{memstore.New()}, orgadmin.Config{})
	token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, err := range map[string]error{
		"create service account": func() error {
			_, err := svc.CreateServiceAccount(ctx, orgadmin.Bearer(token), orgadmin.CreateServiceAccountInput{Username: "gone"})
			return err
		}(),
		"create user": func() error {
			_, err := svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "gone", Role: orgadmin.RoleMember})
			return err
		}(),
	} {
		require.Error(t, err, name)
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.ErrorIs(t, err, orgadmin.ErrCanceled, name)
		assert.NotErrorIs(t, err, orgadmin.ErrInternal, name)
		assert.Equal(t, orgadmin.CodeCanceled, orgadmin.ErrorCode(err), name)
	}
	_, err = svc.GetUser(t.Context(), "acme", "gone")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// A store failure that wraps context.Canceled while the caller's context
// is live (a driver canceling an operation of its own) is INTERNAL, to be
// retried, not CANCELED: the caller did not go away.
func TestStoreCancellationOfItsOwnIsInternal(t *testing.T) {
	cause := fmt.Errorf("connection pool cleared: %w", context.Canceled)
	svc := orgadmin.New(failingStore{memstore.New(), cause}, orgadmin.Config{})
	_, err := svc.Authenticate(t.Context(), "some-token-value")
	requireCode(t, err, orgadmin.ErrInternal)
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err))
	assert.NotErrorIs(t, err, orgadmin.ErrCanceled)
	assert.ErrorIs(t, err, cause, "the cause is kept for logs")
}

// rolledBackStore is a memory store whose writes, once their context is
// canceled, fail as database/sql's do: the transaction, rolled back when
// its context was canceled, answers sql.ErrTxDone, which does not wrap
// the context's error.
type rolledBackStore struct {
	*memstore.Store
}

func (s rolledBackStore) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	if ctx.Err() != nil {
		return fmt.Errorf("sqlstore: create user: %w", sql.ErrTxDone)
	}
	return s.Store.CreateUser(ctx, u, lim, a)
}

func (s rolledBackStore) SetInstances(ctx context.Context, org, userID string, c storage.InstanceConfig, a *storage.Audit) error {
	if ctx.Err() != nil {
		return fmt.Errorf("sqlstore: set instances: %w", sql.ErrTxDone)
	}
	return s.Store.SetInstances(ctx, org, userID, c, a)
}

// A store call that fails because its caller's context was canceled is
// CANCELED, whatever error the store's driver made of the cancellation:
// the client that left is no internal error, and errors.Is finds the
// context's error. A caller's deadline that passed is still an internal
// error (the operation took longer than its caller's budget), with the
// context's error in its chain.
func TestCanceledCallerIsNoInternalErrorWhateverTheDriverSays(t *testing.T) {
	svc := orgadmin.New(rolledBackStore{memstore.New()}, orgadmin.Config{})
	token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := svc.Authenticate(t.Context(), token)
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	setConfig := func(ctx context.Context) error {
		_, err := svc.SetInstanceConfig(ctx, admin, "admin", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
			ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
			ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeJumbo, FlockSize: 1},
		}})
		return err
	}
	for name, err := range map[string]error{
		"create service account": func() error {
			_, err := svc.CreateServiceAccount(canceled, admin, orgadmin.CreateServiceAccountInput{Username: "gone"})
			return err
		}(),
		"set instance config": setConfig(canceled),
	} {
		require.Error(t, err, name)
		assert.Equal(t, orgadmin.CodeCanceled, orgadmin.ErrorCode(err), name)
		assert.ErrorIs(t, err, context.Canceled, name)
		assert.ErrorIs(t, err, sql.ErrTxDone, name)
		assert.NotErrorIs(t, err, orgadmin.ErrInternal, name)
	}

	late, stop := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer stop()
	err = setConfig(late)
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(err))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// adminOnMemory returns a memory store with the org acme, its Admin admin
// and the service accounts named, and a Service of cfg on it.
func adminOnMemory(t *testing.T, cfg orgadmin.Config, accounts ...string) (*memstore.Store, *orgadmin.Service, orgadmin.Caller) {
	t.Helper()
	ctx := t.Context()
	mem := memstore.New()
	svc := orgadmin.New(mem, cfg)
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := svc.Authenticate(ctx, token)
	require.NoError(t, err)
	for _, name := range accounts {
		_, err = svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: name})
		require.NoError(t, err)
	}
	return mem, svc, admin
}

// lostReplyStore stores each token it is asked to, then fails, as a store
// whose answer was lost on its way back.
type lostReplyStore struct {
	*memstore.Store
}

func (s lostReplyStore) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	if err := s.Store.CreateToken(ctx, t, lim, a); err != nil {
		return err
	}
	return errors.New("connection reset")
}

// A token creation that fails after the store kept the token takes it out
// again: its value was never shown, so it could only hold a place under
// the limit.
func TestCreateToken_FailureLeavesNoToken(t *testing.T) {
	ctx := context.Background()
	mem, svc, admin := adminOnMemory(t, orgadmin.Config{MaxTokensPerUser: 2}, "robot")

	failing := orgadmin.New(lostReplyStore{mem}, orgadmin.Config{MaxTokensPerUser: 2})
	for range 3 {
		_, err := failing.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "lost"})
		requireCode(t, err, orgadmin.ErrInternal)
	}
	toks, err := svc.ListTokens(ctx, admin, "robot")
	require.NoError(t, err)
	assert.Empty(t, toks)
	for range 2 {
		_, err = svc.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "kept"})
		require.NoError(t, err, "no place under the limit is held")
	}
}

// The token a failed creation takes out again is audited: its creation,
// which the store kept, then its deletion, by the same actor, on the
// same token, the deletion newest; the deletion is streamed to the
// audit log.
func TestCreateToken_WithdrawnTokenIsAudited(t *testing.T) {
	ctx := context.Background()
	mem, svc, admin := adminOnMemory(t, orgadmin.Config{}, "robot")

	var log bytes.Buffer
	failing := orgadmin.New(lostReplyStore{mem}, orgadmin.Config{AuditLog: slog.New(slog.NewJSONHandler(&log, nil))})
	_, err := failing.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "lost"})
	requireCode(t, err, orgadmin.ErrInternal)

	page, err := svc.AuditEvents(ctx, admin, orgadmin.AuditQuery{TargetKind: orgadmin.TargetToken, TargetUsername: "robot"})
	require.NoError(t, err)
	require.Len(t, page.Events, 2)
	del, created := page.Events[0], page.Events[1]
	assert.Equal(t, orgadmin.ActionTokenDelete, del.Action)
	assert.Equal(t, orgadmin.ActionTokenCreate, created.Action)
	assert.Equal(t, created.TargetID, del.TargetID, "the deletion of the token created")
	for _, e := range page.Events {
		assert.Equal(t, "admin", e.ActorUsername)
		assert.Equal(t, admin.UserID(), e.ActorID)
		assert.Equal(t, "robot", e.TargetUsername)
	}
	// Both events are in the trail, so both went to the audit log, the
	// creation first.
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], `"action":"token.create"`)
	assert.Contains(t, lines[0], created.ID)
	assert.Contains(t, lines[1], `"action":"token.delete"`)
	assert.Contains(t, lines[1], del.ID)
}

// failedWriteStore fails each token creation without storing it (and
// each listing of tokens, when listFails), and counts the deletions of
// tokens it is asked for: audited ones in deletions, others in cleanups.
type failedWriteStore struct {
	*memstore.Store
	deletions *atomic.Int32
	listFails bool
	cleanups  *atomic.Int32
}

func (s failedWriteStore) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	if s.listFails {
		return nil, errors.New("connection reset")
	}
	return s.Store.ListTokens(ctx, org, userID, liveAt)
}

func (s failedWriteStore) CreateToken(context.Context, storage.Token, storage.TokenLimit, *storage.Audit) error {
	return errors.New("connection reset")
}

func (s failedWriteStore) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	if a != nil {
		s.deletions.Add(1)
	} else if s.cleanups != nil {
		s.cleanups.Add(1)
	}
	return s.Store.DeleteToken(ctx, org, userID, id, r, a)
}

// A token creation that fails before the store kept the token has nothing
// to take out: the deletion asked of the store, for what of the token it
// may have written, records no event, nor is any asked when the token
// cannot be looked for (a store whose interrupted deletion's event counts
// as made when the token is absent would record the deletion, and the
// creation with it), and the trail holds neither.
func TestCreateToken_NothingStoredNothingWithdrawn(t *testing.T) {
	ctx := context.Background()
	mem, svc, admin := adminOnMemory(t, orgadmin.Config{}, "robot")

	for _, listFails := range []bool{false, true} {
		var deletions, cleanups atomic.Int32
		failing := orgadmin.New(failedWriteStore{mem, &deletions, listFails, &cleanups}, orgadmin.Config{})
		_, err := failing.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "lost"})
		requireCode(t, err, orgadmin.ErrInternal)
		assert.Zero(t, deletions.Load(), "audited deletions asked of the store (listing fails: %v)", listFails)
		// A deletion without an event when the token is not listed; none
		// when it cannot be looked for (it may be stored, and its creation
		// counted).
		assert.EqualValues(t, map[bool]int32{false: 1, true: 0}[listFails], cleanups.Load(), "deletions without an event (listing fails: %v)", listFails)
	}
	page, err := svc.AuditEvents(ctx, admin, orgadmin.AuditQuery{TargetKind: orgadmin.TargetToken, TargetUsername: "robot"})
	require.NoError(t, err)
	assert.Empty(t, page.Events)
}

// A deletion of a token the user has not (an id never minted, another
// user's token) is NOT_FOUND, and no audited deletion is asked of the
// store (only one without an event, for what a deletion or creation cut
// short may have left).
func TestDeleteToken_UnknownTokenIsNotAudited(t *testing.T) {
	ctx := context.Background()
	mem, svc, admin := adminOnMemory(t, orgadmin.Config{}, "robot", "other")
	others, err := svc.CreateToken(ctx, admin, "other", orgadmin.CreateTokenInput{Name: "x"})
	require.NoError(t, err)

	var deletions atomic.Int32
	counting := orgadmin.New(failedWriteStore{mem, &deletions, false, nil}, orgadmin.Config{})
	for _, id := range []string{"5eed0000-0000-4000-8000-00000000dead", others.ID} {
		err = counting.DeleteToken(ctx, admin, "robot", id)
		requireCode(t, err, orgadmin.ErrNotFound)
	}
	assert.Zero(t, deletions.Load(), "audited deletions asked of the store")
	require.NoError(t, counting.DeleteToken(ctx, admin, "other", others.ID))
	assert.EqualValues(t, 1, deletions.Load())
}

// Listings read the store's records into arrays the Service reuses from
// one call to the next: what a call returns stays its caller's, whatever
// calls follow, concurrent ones included.
func TestListingsAreTheirCallersOwn(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for i := range 6 {
		e.serviceAccount(t, fmt.Sprintf("bot%d", i))
		for j := range i {
			e.token(t, fmt.Sprintf("bot%d", i), orgadmin.CreateTokenInput{Name: fmt.Sprintf("t%d", j)})
		}
	}
	admin := orgadmin.Bearer(e.adminToken)
	want := make(map[string][]orgadmin.Token)
	for i := range 6 {
		name := fmt.Sprintf("bot%d", i)
		ts, err := e.svc.ListTokens(ctx, admin, name)
		require.NoError(t, err)
		require.Len(t, ts, i)
		want[name] = ts
	}
	first, err := e.svc.ListUsers(ctx, admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(3)})
	require.NoError(t, err)
	kept := slices.Clone(first.Users)

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 200 {
				name := fmt.Sprintf("bot%d", (g+n)%6)
				ts, err := e.svc.ListTokens(ctx, admin, name)
				if !assert.NoError(t, err) || !assert.Equal(t, want[name], ts, name) {
					return
				}
				_, err = e.svc.ListTokens(ctx, admin, "nobody")
				requireCode(t, err, orgadmin.ErrNotFound)
				p, err := e.svc.ListUsers(ctx, admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(1 + n%4), Offset: orgadmin.Some(g)})
				if !assert.NoError(t, err) || !assert.Len(t, p.Users, 1+n%4) {
					return
				}
			}
		}()
	}
	wg.Wait()
	for name, ts := range want {
		again, err := e.svc.ListTokens(ctx, admin, name)
		require.NoError(t, err)
		assert.Equal(t, ts, again)
	}
	assert.Equal(t, kept, first.Users, "a page changed after later listings")
}

// meddlingStore makes another change of a user's privileges land just
// before each SetPrivileges, while meddle is set, as a concurrent grant
// would; it counts the SetPrivileges calls.
type meddlingStore struct {
	storage.Store
	calls  int
	meddle func(ctx context.Context, s storage.Store, org, userID string, call int)
}

func (m *meddlingStore) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) error {
	m.calls++
	if m.meddle != nil {
		m.meddle(ctx, m.Store, org, userID, m.calls)
	}
	return m.Store.SetPrivileges(ctx, org, userID, from, to, a)
}

// newMeddledService is a Service on a meddlingStore, with the user
// robot in testOrg.
func newMeddledService(t testing.TB) (*orgadmin.Service, *meddlingStore) {
	t.Helper()
	m := &meddlingStore{Store: memstore.New()}
	svc := orgadmin.New(m, orgadmin.Config{})
	_, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: testOrg, Username: "admin"})
	require.NoError(t, err)
	_, err = svc.CreateUser(context.Background(), testOrg, orgadmin.NewUser{Username: "robot"})
	require.NoError(t, err)
	return svc, m
}

// A grant that finds the privileges changed since it read them reads
// again and writes over what it reads then: every change lands, and the
// event of the grant says what it changed, from what.
func TestGrantPrivilege_ReadsAgainAfterAConflict(t *testing.T) {
	ctx := context.Background()
	svc, m := newMeddledService(t)
	m.meddle = func(ctx context.Context, s storage.Store, org, userID string, call int) {
		if call > 3 {
			return
		}
		u, err := s.GetUser(ctx, org, "robot")
		require.NoError(t, err)
		require.NoError(t, s.SetPrivileges(ctx, org, userID, u.Privileges, append(slices.Clip(u.Privileges), fmt.Sprint("other.", call)), nil))
	}
	require.NoError(t, svc.GrantPrivilege(ctx, testOrg, "robot", "granted"))
	assert.Equal(t, 4, m.calls, "three conflicts, then the write")
	u, err := svc.GetUser(ctx, testOrg, "robot")
	require.NoError(t, err)
	assert.Equal(t, []string{"other.1", "other.2", "other.3", "granted"}, u.Privileges)

	admin, err := svc.ActAs(ctx, testOrg, "admin")
	require.NoError(t, err)
	page, err := svc.AuditEvents(ctx, admin, orgadmin.AuditQuery{Action: orgadmin.ActionUserGrant})
	require.NoError(t, err)
	require.Len(t, page.Events, 1, "one event, of the write that landed")
	assert.JSONEq(t, `{"privileges": ["other.1", "other.2", "other.3"]}`, string(page.Events[0].Before))
	assert.JSONEq(t, `{"privileges": ["other.1", "other.2", "other.3", "granted"]}`, string(page.Events[0].After))
}

// A grant that keeps finding the privileges changed gives up after
// MaxPrivileges+1 attempts with the error of a failed store: no panic,
// no loop without end, nothing written.
func TestGrantPrivilege_BoundsItsAttempts(t *testing.T) {
	ctx := context.Background()
	svc, m := newMeddledService(t)
	m.meddle = func(ctx context.Context, s storage.Store, org, userID string, call int) {
		u, err := s.GetUser(ctx, org, "robot")
		require.NoError(t, err)
		next := []string{"a"} // the privileges change, and never grow
		if slices.Equal(u.Privileges, next) {
			next = []string{"b"}
		}
		require.NoError(t, s.SetPrivileges(ctx, org, userID, u.Privileges, next, nil))
	}
	err := svc.GrantPrivilege(ctx, testOrg, "robot", "granted")
	requireCode(t, err, orgadmin.ErrInternal)
	assert.ErrorIs(t, err, storage.ErrConflict)
	assert.Equal(t, orgadmin.MaxPrivileges+1, m.calls)

	m.meddle = nil
	u, err := svc.GetUser(ctx, testOrg, "robot")
	require.NoError(t, err)
	assert.NotContains(t, u.Privileges, "granted")
	admin, err := svc.ActAs(ctx, testOrg, "admin")
	require.NoError(t, err)
	page, err := svc.AuditEvents(ctx, admin, orgadmin.AuditQuery{Action: orgadmin.ActionUserGrant})
	require.NoError(t, err)
	assert.Empty(t, page.Events)
}

// A user holds at most MaxPrivileges privileges, however they come.
func TestPrivilegesAreBounded(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	privileges := func(n int) []string {
		ps := make([]string, n)
		for i := range ps {
			ps[i] = fmt.Sprintf("p.%d", i)
		}
		return ps
	}
	_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: "many", Privileges: privileges(orgadmin.MaxPrivileges + 1)})
	requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, [][]any{{"privileges"}}, issuePaths(t, err))
	_, err = e.svc.GetUser(ctx, testOrg, "many")
	requireCode(t, err, orgadmin.ErrNotFound)

	_, err = e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: "full", Privileges: privileges(orgadmin.MaxPrivileges)})
	require.NoError(t, err)
	require.NoError(t, e.svc.GrantPrivilege(ctx, testOrg, "full", "p.0"), "one held changes nothing")
	err = e.svc.GrantPrivilege(ctx, testOrg, "full", "one.more")
	requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, [][]any{{"privilege"}}, issuePaths(t, err))
	u, err := e.svc.GetUser(ctx, testOrg, "full")
	require.NoError(t, err)
	assert.Equal(t, privileges(orgadmin.MaxPrivileges), u.Privileges)
}
