package orgadmin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// An UNAUTHORIZED error says why, for logs and metrics, through errors.Is;
// its answer is the same whatever the reason.
func TestUnauthorizedSaysWhy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{})
	tok, err := e.svc.CreateToken(ctx, e.admin, "admin", orgadmin.CreateTokenInput{Name: "short", TTL: orgadmin.Some(300 * time.Second)})
	require.NoError(t, err)

	for _, c := range []struct {
		token string
		why   error
	}{
		{"", orgadmin.ErrNoCredential},
		{"oa_never_issued_token_value", orgadmin.ErrUnknownToken},
	} {
		_, err := e.svc.ListUsers(ctx, orgadmin.Bearer(c.token), orgadmin.ListUsersOptions{})
		requireCode(t, err, orgadmin.ErrUnauthorized)
		assert.ErrorIs(t, err, c.why)
	}
	e.clk.Advance(301 * time.Second)
	_, err = e.svc.ListUsers(ctx, orgadmin.Bearer(tok.Value), orgadmin.ListUsersOptions{})
	requireCode(t, err, orgadmin.ErrUnauthorized)
	assert.ErrorIs(t, err, orgadmin.ErrExpiredToken)
	var oe *orgadmin.Error
	require.ErrorAs(t, err, &oe)
	assert.Empty(t, oe.Issues, "the reason is not for the client")
}

// A Caller outlives neither its token nor its user: one that Authenticate
// made is UNAUTHORIZED once its token is invalidated or expires, or its
// user deleted; one that ActAs made, once its user is deleted, even if
// the username is taken again; and a privilege granted since counts.
func TestCallerDoesNotOutliveItsTokenOrUser(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	other, err := e.svc.CreateToken(ctx, e.admin, "admin", orgadmin.CreateTokenInput{Name: "other"})
	require.NoError(t, err)

	// Its token invalidated.
	viaToken, err := e.svc.Authenticate(ctx, other.Value)
	require.NoError(t, err)
	_, err = e.svc.ListUsers(ctx, viaToken, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	err = e.svc.DeleteToken(ctx, e.admin, "admin", other.ID)
	require.NoError(t, err)
	_, err = e.svc.CreateServiceAccount(ctx, viaToken, orgadmin.CreateServiceAccountInput{Username: "late"})
	requireCode(t, err, orgadmin.ErrUnauthorized)
	assert.ErrorIs(t, err, orgadmin.ErrUnknownToken)
	_, err = e.svc.GetUser(ctx, testOrg, "late")
	requireCode(t, err, orgadmin.ErrNotFound)

	// Its token expired.
	short, err := e.svc.CreateToken(ctx, e.admin, "admin", orgadmin.CreateTokenInput{Name: "short", TTL: orgadmin.Some(orgadmin.MinTokenTTL)})
	require.NoError(t, err)
	viaShort, err := e.svc.Authenticate(ctx, short.Value)
	require.NoError(t, err)
	e.clk.Advance(orgadmin.MinTokenTTL)
	_, err = e.svc.ListUsers(ctx, viaShort, orgadmin.ListUsersOptions{})
	requireCode(t, err, orgadmin.ErrUnauthorized)
	assert.ErrorIs(t, err, orgadmin.ErrExpiredToken)

	// Its user deleted, and a user of the same name created anew.
	bot, err := e.svc.ActAs(ctx, testOrg, "bot")
	require.NoError(t, err)
	botTok, err := e.svc.CreateToken(ctx, e.admin, "bot", orgadmin.CreateTokenInput{Name: "t"})
	require.NoError(t, err)
	botViaToken, err := e.svc.Authenticate(ctx, botTok.Value)
	require.NoError(t, err)
	_, err = e.svc.DeleteUser(ctx, e.admin, "bot")
	require.NoError(t, err)
	e.serviceAccount(t, "bot")
	_, err = e.svc.GetInstanceConfig(ctx, bot, "bot")
	requireCode(t, err, orgadmin.ErrUnauthorized)
	assert.ErrorIs(t, err, orgadmin.ErrCallerGone)
	_, err = e.svc.GetInstanceConfig(ctx, botViaToken, "bot")
	requireCode(t, err, orgadmin.ErrUnauthorized)
	assert.ErrorIs(t, err, orgadmin.ErrUnknownToken)

	// A privilege granted since counts for a Caller of ActAs.
	_, err = e.svc.CreateUser(ctx, testOrg, orgadmin.NewUser{Username: "mia"})
	require.NoError(t, err)
	mia, err := e.svc.ActAs(ctx, testOrg, "mia")
	require.NoError(t, err)
	_, err = e.svc.ListUsers(ctx, mia, orgadmin.ListUsersOptions{})
	requireCode(t, err, orgadmin.ErrForbidden)
	require.NoError(t, e.svc.GrantPrivilege(ctx, testOrg, "mia", orgadmin.PrivilegeViewAllMembers))
	_, err = e.svc.ListUsers(ctx, mia, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
}
