package orgadmin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// A Caller counts only as the Service made it: one made by hand, or one
// the Service made and that was changed since, is UNAUTHORIZED, so a
// program acting for its users (an authentication hook) cannot reach
// another org or widen a user's authority.
func TestCallerOnlyAsIssued(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{})
	require.NoError(t, e.svc.CreateOrg(ctx, "globex"))
	_, err := e.svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "boss", Role: orgadmin.RoleAdmin})
	require.NoError(t, err)
	e.serviceAccount(t, "bot")
	bot, err := e.svc.ActAs(ctx, testOrg, "bot")
	require.NoError(t, err)
	_, err = e.svc.GetInstanceConfig(ctx, bot, "bot")
	require.NoError(t, err, "as issued")

	forged := []struct {
		name   string
		caller orgadmin.Caller
	}{
		{"made by hand", orgadmin.Caller{Org: "globex", UserID: bot.UserID, Username: "boss", Role: orgadmin.RoleAdmin, TokenType: orgadmin.TokenReadWrite}},
		{"zero", orgadmin.Caller{}},
		{"another org", func() orgadmin.Caller { c := bot; c.Org = "globex"; return c }()},
		{"another role", func() orgadmin.Caller { c := bot; c.Role = orgadmin.RoleAdmin; return c }()},
		{"another user", func() orgadmin.Caller { c := bot; c.UserID, c.Username = e.admin.UserID, "admin"; return c }()},
		{"a privilege more", func() orgadmin.Caller {
			c := bot
			c.Privileges = append(c.Privileges, orgadmin.PrivilegeViewAllMembers)
			return c
		}()},
	}
	for _, f := range forged {
		_, err := e.svc.ListUsers(ctx, f.caller, orgadmin.ListUsersOptions{})
		requireCode(t, err, orgadmin.ErrUnauthorized)
		assert.ErrorIs(t, err, orgadmin.ErrCallerNotIssued, f.name)
		_, err = e.svc.GetInstanceConfig(ctx, f.caller, "boss")
		requireCode(t, err, orgadmin.ErrUnauthorized)
	}
	// Changing the returned slice's items changes nothing the Service
	// decides with either.
	admin, err := e.svc.ActAs(ctx, testOrg, "admin")
	require.NoError(t, err)
	_, err = e.svc.GetInstanceConfig(ctx, admin, "bot")
	require.NoError(t, err)
}

// An UNAUTHORIZED error says why, for logs and metrics, through errors.Is;
// its answer is the same whatever the reason.
func TestUnauthorizedSaysWhy(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{})
	ttl := 300
	tok, err := e.svc.CreateToken(ctx, e.admin, "admin", orgadmin.CreateTokenInput{Name: "short", TTL: &ttl})
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
