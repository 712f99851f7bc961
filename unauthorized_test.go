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
