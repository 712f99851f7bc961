package orgadmin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// A Caller comes only from the Service: a zero or hand-made one is nobody,
// refused by every operation before anything else.
func TestCaller_OnlyFromTheService(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	for _, op := range allOps {
		err := e.call(t, orgadmin.Caller{}, op, "bot")
		assert.ErrorIs(t, err, orgadmin.ErrUnauthorized, op)
		assert.ErrorIs(t, err, orgadmin.ErrCallerNotIssued, op)
	}
	_, err := e.svc.GetUser(context.Background(), testOrg, "made_by_call")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound, "nothing was done")
	for _, op := range allOps {
		err := e.call(t, e.admin, op, "bot")
		assert.NotErrorIs(t, err, orgadmin.ErrUnauthorized, op)
	}
}

// A Caller another Service made is checked against this Service's store
// (Auth): Authenticate's by its token, ActAs's by its user's id; one of
// the same store passes, one of another does not, and ActAsOrg's, which
// reads nothing, is its org's Admin rights anywhere.
func TestCaller_AnotherServicesIsCheckedAgainstThisStore(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	other := newEnv(t, orgadmin.Config{}) // another store: its own admin
	sameStore := orgadmin.New(e.store, orgadmin.Config{Now: e.clk.Now})
	asAdmin, err := sameStore.ActAs(ctx, testOrg, "admin")
	require.NoError(t, err)
	byToken, err := sameStore.Authenticate(ctx, e.adminToken)
	require.NoError(t, err)
	otherActAs, err := other.svc.ActAs(ctx, testOrg, "admin")
	require.NoError(t, err)

	_, err = e.svc.ListUsers(ctx, other.admin, orgadmin.ListUsersOptions{})
	assert.ErrorIs(t, err, orgadmin.ErrUnknownToken, "another store's token")
	_, err = e.svc.ListUsers(ctx, otherActAs, orgadmin.ListUsersOptions{})
	assert.ErrorIs(t, err, orgadmin.ErrCallerGone, "another store's user of that name")
	for _, c := range []orgadmin.Caller{asAdmin, byToken, other.svc.ActAsOrg(testOrg)} {
		page, err := e.svc.ListUsers(ctx, c, orgadmin.ListUsersOptions{})
		require.NoError(t, err)
		assert.Equal(t, 2, page.TotalCount)
	}
}

// ActAsOrg acts with an Admin's rights in its org, as no user.
func TestCaller_ActAsOrg(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	org := e.svc.ActAsOrg(testOrg)
	assert.Equal(t, testOrg, org.Org())
	assert.Equal(t, orgadmin.RoleAdmin, org.Role())
	assert.Empty(t, org.UserID())
	assert.Empty(t, org.Username())
	assert.Equal(t, orgadmin.TokenReadWrite, org.TokenType())

	page, err := e.svc.ListUsers(ctx, org, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 2, page.TotalCount)
	_, err = e.svc.CreateToken(ctx, org, "bot", orgadmin.CreateTokenInput{Name: "x"})
	require.NoError(t, err, "a service account's token")
	_, err = e.svc.CreateToken(ctx, org, "admin", orgadmin.CreateTokenInput{Name: "x"})
	assert.ErrorIs(t, err, orgadmin.ErrForbidden, "never a human user's")
	_, err = e.svc.DeleteUser(ctx, org, "admin")
	require.NoError(t, err, "it is nobody, so any user may be deleted")

	// Another org's: sees nothing of this one.
	other := e.svc.ActAsOrg("other")
	_, err = e.svc.GetInstanceConfig(ctx, other, "bot")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// Accessors return copies: a caller's privileges cannot be changed through
// them.
func TestCaller_PrivilegesAreACopy(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: "carol", Privileges: []string{"x"}})
	require.NoError(t, err)
	carol, err := e.svc.ActAs(ctx, testOrg, "carol")
	require.NoError(t, err)
	p := carol.Privileges()
	p[0] = orgadmin.PrivilegeViewAllMembers
	_, err = e.svc.ListUsers(ctx, carol, orgadmin.ListUsersOptions{})
	assert.ErrorIs(t, err, orgadmin.ErrForbidden)
	assert.Equal(t, []string{"x"}, carol.Privileges())
}

// Ids are UUIDs of version 7 that increase in the order they are minted,
// even on a clock that stands still or steps back, so that tokens created
// at the same millisecond are listed in the order they were created.
func TestIDs_IncreaseInCreationOrder(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	var created []string
	for i := range 50 {
		if i == 25 {
			e.clk.Advance(-time.Hour) // a clock that steps back
		}
		tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: fmt.Sprint(i)})
		id, err := uuid.Parse(tok.ID)
		require.NoError(t, err)
		assert.Equal(t, uuid.Version(7), id.Version())
		created = append(created, tok.ID)
	}
	assert.True(t, slices.IsSorted(created), "ids increase")
	toks, err := e.svc.ListTokens(ctx, e.admin, "bot")
	require.NoError(t, err)
	var names []string
	for _, tok := range toks[:25] { // the 25 at the same, earlier, time come first
		names = append(names, tok.Name)
	}
	want := make([]string, 25)
	for i := range want {
		want[i] = fmt.Sprint(25 + i)
	}
	assert.Equal(t, want, names)
}

// An issue's path holds keys and indexes, written as strings and numbers.
func TestIssue_PathJSON(t *testing.T) {
	is := orgadmin.Issue{Message: "m", Path: orgadmin.NewPath("required_resources", 2, "url"), Code: orgadmin.IssueTooSmall}
	b, err := json.Marshal(is)
	require.NoError(t, err)
	assert.JSONEq(t, `{"message":"m","path":["required_resources",2,"url"],"code":"too_small"}`, string(b))
	var back orgadmin.Issue
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, is, back)
	assert.Equal(t, "required_resources.2.url", back.Path.String())
	i, ok := back.Path[1].Index()
	assert.True(t, ok)
	assert.Equal(t, 2, i)
	_, ok = back.Path[0].Index()
	assert.False(t, ok)
	k, ok := back.Path[0].Key()
	assert.True(t, ok)
	assert.Equal(t, "required_resources", k)
	assert.Equal(t, orgadmin.PathKey("2"), orgadmin.NewPath("2")[0], `the key "2" is no index`)
	assert.NotEqual(t, orgadmin.PathKey("2"), orgadmin.PathIndex(2))

	assert.Error(t, json.Unmarshal([]byte(`{"path":[1.5]}`), &back))
	assert.Error(t, json.Unmarshal([]byte(`{"path":[true]}`), &back))
	assert.Panics(t, func() { orgadmin.NewPath(1.5) })
}

// ErrorCode and errors.Is see through wrapping; a type assertion would not.
func TestErrorCode_SeesThroughWrapping(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	_, err := e.svc.GetInstanceConfig(context.Background(), e.admin, "ghost")
	for _, w := range []error{err, fmt.Errorf("a: %w", err), fmt.Errorf("b: %w", fmt.Errorf("a: %w", err)), errors.Join(errors.New("x"), err)} {
		assert.Equal(t, orgadmin.CodeNotFound, orgadmin.ErrorCode(w))
		assert.ErrorIs(t, w, orgadmin.ErrNotFound)
		assert.NotErrorIs(t, w, orgadmin.ErrBadRequest)
	}
	assert.Equal(t, orgadmin.Code(""), orgadmin.ErrorCode(nil))
	assert.Equal(t, orgadmin.CodeInternal, orgadmin.ErrorCode(errors.New("x")))
	assert.ErrorIs(t, &orgadmin.Error{Code: orgadmin.CodeTooManyRequests}, orgadmin.ErrTooManyRequests)
}

// A TTL and a cooldown are durations of whole seconds in range.
func TestDurations_WholeSecondsInRange(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for ttl, code := range map[time.Duration]orgadmin.IssueCode{
		300:                                orgadmin.IssueInvalidType,
		5*time.Minute + time.Millisecond:   orgadmin.IssueInvalidType,
		299 * time.Second:                  orgadmin.IssueTooSmall,
		0:                                  orgadmin.IssueTooSmall,
		orgadmin.MaxTokenTTL + time.Second: orgadmin.IssueTooBig,
	} {
		_, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "x", TTL: orgadmin.Some(ttl)})
		be := requireCode(t, err, orgadmin.ErrBadRequest)
		assert.Equal(t, [][]any{{"ttl"}}, issuePaths(t, err), "%v", ttl)
		assert.Equal(t, code, be.Issues[0].Code, "%v", ttl)
	}
	for _, ttl := range []time.Duration{orgadmin.MinTokenTTL, orgadmin.MaxTokenTTL, time.Hour} {
		tok, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "x", TTL: orgadmin.Some(ttl)})
		require.NoError(t, err)
		assert.Equal(t, ttl, tok.ExpireAt.Sub(tok.CreatedAt))
	}
	_, err := e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeStandard, Cooldown: orgadmin.Some(90*time.Second + time.Nanosecond)},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard, Cooldown: orgadmin.Some(90 * time.Second)},
	}})
	assert.Equal(t, [][]any{{"config", "read_write", "cooldown_seconds"}}, issuePaths(t, err))
}

// AllUsers walks every page, stops when the loop does, and yields a
// failure once.
func TestAllUsers(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for i := range 7 {
		e.serviceAccount(t, fmt.Sprintf("bot%d", i))
	}
	var names []string
	for u, err := range e.svc.AllUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(3)}) {
		require.NoError(t, err)
		names = append(names, u.Username)
	}
	assert.Equal(t, []string{"admin", "bot0", "bot1", "bot2", "bot3", "bot4", "bot5", "bot6"}, names)

	n := 0
	for range e.svc.AllUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), ServiceAccount: orgadmin.Some(true)}) {
		if n++; n == 3 {
			break
		}
	}
	assert.Equal(t, 3, n)

	var errs []error
	for _, err := range e.svc.AllUsers(ctx, orgadmin.Bearer("wrong"), orgadmin.ListUsersOptions{}) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], orgadmin.ErrUnauthorized)
}
