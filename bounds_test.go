package orgadmin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// Rules of the Go API's inputs at their bounds, each beside the value one
// past it: what no HTTP test reaches (users and Dives are created through
// the Go API) or what only an HTTP test pinned.

// A username holds up to 255 code points, of any width; 256 is refused.
func TestCreateUser_UsernameOf255CodePoints(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, name := range []string{strings.Repeat("a", 255), strings.Repeat("é", 255), strings.Repeat("日", 255)} {
		_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: name})
		require.NoError(t, err, "%d bytes", len(name))
	}
	_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: strings.Repeat("b", 256)})
	assert.Equal(t, [][]any{{"username"}}, issuePaths(t, err))
}

// A human user's email, names and privileges hold 1 to 1024 characters
// (an email and names may be left empty); one more is a BAD_REQUEST at
// the field.
func TestCreateUser_FieldsAtTheirBounds(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	max := strings.Repeat("x", 1024)
	_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{
		Username: "at_bounds", Email: max, FirstName: max, LastName: max, Privileges: []string{max, "p"},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		nu   orgadmin.NewUser
		path []any
	}{
		{orgadmin.NewUser{Email: max + "x"}, []any{"email"}},
		{orgadmin.NewUser{FirstName: max + "x"}, []any{"first_name"}},
		{orgadmin.NewUser{LastName: max + "x"}, []any{"last_name"}},
		{orgadmin.NewUser{Privileges: []string{"p", max + "x"}}, []any{"privileges", 1}},
		{orgadmin.NewUser{Privileges: []string{""}}, []any{"privileges", 0}},
	} {
		tc.nu.Username = "past_bounds"
		_, err := e.svc.CreateUser(ctx, testOrg, tc.nu)
		assert.Equal(t, [][]any{tc.path}, issuePaths(t, err), "%+v", tc.path)
	}
	_, err = e.svc.GetUser(ctx, testOrg, "past_bounds")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// Only a human user has an email or a name: a service account with any of
// them is a BAD_REQUEST at is_service_account, and is not created.
func TestCreateUser_ServiceAccountHasNoEmailOrName(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, nu := range []orgadmin.NewUser{
		{Email: "bot@example.com"}, {FirstName: "Bot"}, {LastName: "Bot"},
	} {
		nu.Username, nu.IsServiceAccount = "bot", true
		_, err := e.svc.CreateUser(ctx, testOrg, nu)
		e := requireCode(t, err, orgadmin.ErrBadRequest)
		require.Len(t, e.Issues, 1)
		assert.Equal(t, "Only human users have an email or a name", e.Issues[0].Message)
		assert.Equal(t, []any{"is_service_account"}, pathOf(e.Issues[0].Path))
	}
	_, err := e.svc.GetUser(ctx, testOrg, "bot")
	assert.ErrorIs(t, err, orgadmin.ErrNotFound)
}

// A Dive's title holds up to 1000 characters; 1001 is refused and
// nothing is registered.
func TestRegisterDive_TitleOf1000Characters(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	const id = "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"
	err := e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: id, Title: strings.Repeat("é", 1001)})
	assert.Equal(t, [][]any{{"title"}}, issuePaths(t, err))
	_, err = e.svc.CreateEmbedSession(ctx, e.admin, id, orgadmin.CreateEmbedSessionInput{Username: e.serviceAccount(t, "viewer").Username})
	require.ErrorIs(t, err, orgadmin.ErrNotFound, "not registered")
	require.NoError(t, e.svc.RegisterDive(ctx, testOrg, orgadmin.Dive{ID: id, Title: strings.Repeat("é", 1000)}))
}

// Each filter of the audit trail holds up to 255 characters; 256 is a
// BAD_REQUEST at the filter.
func TestAuditEvents_FiltersOf255Characters(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	max := strings.Repeat("a", 255)
	for _, tc := range []struct {
		name string
		set  func(q *orgadmin.AuditQuery, v string)
	}{
		{"action", func(q *orgadmin.AuditQuery, v string) { q.Action = v }},
		{"actor", func(q *orgadmin.AuditQuery, v string) { q.Actor = v }},
		{"target_id", func(q *orgadmin.AuditQuery, v string) { q.TargetID = v }},
		{"target_username", func(q *orgadmin.AuditQuery, v string) { q.TargetUsername = v }},
	} {
		var q orgadmin.AuditQuery
		tc.set(&q, max)
		page, err := e.svc.AuditEvents(ctx, e.admin, q)
		require.NoError(t, err, tc.name)
		assert.Empty(t, page.Events, tc.name)
		tc.set(&q, max+"a")
		_, err = e.svc.AuditEvents(ctx, e.admin, q)
		assert.Equal(t, [][]any{{tc.name}}, issuePaths(t, err), tc.name)
	}
}

// An actor filter is a user id only when it is a UUID with its hyphens:
// a username of 32 hex digits (which uuid.Parse would take for an id) is
// a username.
func TestAuditEvents_ActorNamedLikeAHexUUIDIsAUsername(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	const name = "Fedcba9876543210fedcba9876543210"
	_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: name, Role: orgadmin.RoleAdmin})
	require.NoError(t, err)
	admin, err := e.svc.ActAs(ctx, testOrg, name)
	require.NoError(t, err)
	_, err = e.svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "made_by_hex"})
	require.NoError(t, err)
	events := allEvents(t, e.svc, e.admin, orgadmin.AuditQuery{Actor: name})
	require.Len(t, events, 1)
	assert.Equal(t, "made_by_hex", events[0].TargetUsername)
	assert.Equal(t, name, events[0].ActorUsername)
}

// The page token after the longest name a page can end on (255 code
// points of two bytes) is taken back: the next page follows it.
func TestListUsers_PageTokenAfterTheLongestName(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, name := range []string{strings.Repeat("é", 255), "ü"} {
		_, err := e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: name})
		require.NoError(t, err)
	}
	first, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(2)})
	require.NoError(t, err)
	require.Len(t, first.Users, 2)
	assert.Equal(t, strings.Repeat("é", 255), first.Users[1].Username)
	require.NotEmpty(t, first.NextPageToken)
	next, err := e.svc.ListUsers(ctx, e.admin, orgadmin.ListUsersOptions{Limit: orgadmin.Some(2), PageToken: first.NextPageToken})
	require.NoError(t, err)
	require.Len(t, next.Users, 1)
	assert.Equal(t, "ü", next.Users[0].Username)
}
