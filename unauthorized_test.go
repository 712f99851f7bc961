package orgadmin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
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
	assert.ErrorIs(t, err, orgadmin.ErrRevokedToken)
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

// A token invalidated with DeleteToken and presented again is
// UNAUTHORIZED for ErrRevokedToken, not ErrUnknownToken, through Bearer
// and through a Caller that Authenticate made with it, with no issue that
// tells the client; until it would have expired, or for
// Config.RevokedTokenRetention when it never expires, after which it is
// unknown. A deleted user's tokens are unknown, and a value seeded again
// after its revocation authenticates.
func TestUnauthorizedSaysRevoked(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{RevokedTokenRetention: 48 * time.Hour})
	e.serviceAccount(t, "bot")
	forever := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "forever"})
	hourly := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "hourly", TTL: orgadmin.Some(time.Hour)})
	viaCaller, err := e.svc.Authenticate(ctx, forever.Value)
	require.NoError(t, err)
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", forever.ID))
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", hourly.ID))

	revoked := func(a orgadmin.Auth, why error) {
		t.Helper()
		_, err := e.svc.GetInstanceConfig(ctx, a, "bot")
		requireCode(t, err, orgadmin.ErrUnauthorized)
		assert.ErrorIs(t, err, why)
		if why == orgadmin.ErrRevokedToken {
			assert.NotErrorIs(t, err, orgadmin.ErrUnknownToken)
		}
		var oe *orgadmin.Error
		require.ErrorAs(t, err, &oe)
		assert.Empty(t, oe.Issues, "the reason is not for the client")
	}
	revoked(orgadmin.Bearer(forever.Value), orgadmin.ErrRevokedToken)
	revoked(viaCaller, orgadmin.ErrRevokedToken)
	revoked(orgadmin.Bearer(hourly.Value), orgadmin.ErrRevokedToken)
	_, err = e.svc.Authenticate(ctx, forever.Value)
	assert.ErrorIs(t, err, orgadmin.ErrRevokedToken)

	// The hourly token would have expired: from then on it is unknown.
	e.clk.Advance(time.Hour)
	revoked(orgadmin.Bearer(hourly.Value), orgadmin.ErrUnknownToken)
	revoked(orgadmin.Bearer(forever.Value), orgadmin.ErrRevokedToken)
	// The other is kept for the retention.
	e.clk.Advance(47 * time.Hour)
	revoked(orgadmin.Bearer(forever.Value), orgadmin.ErrUnknownToken)
	revoked(viaCaller, orgadmin.ErrUnknownToken)

	// A deleted user's token is unknown, not revoked.
	e.serviceAccount(t, "gone")
	goneTok := e.token(t, "gone", orgadmin.CreateTokenInput{Name: "t"})
	_, err = e.svc.DeleteUser(ctx, e.admin, "gone")
	require.NoError(t, err)
	_, err = e.svc.Authenticate(ctx, goneTok.Value)
	requireCode(t, err, orgadmin.ErrUnauthorized)
	assert.ErrorIs(t, err, orgadmin.ErrUnknownToken)

	// A seeded value revoked, then seeded again, authenticates.
	seed := orgadmin.SeedTokenInput{Value: "seeded-value-0001", CreateTokenInput: orgadmin.CreateTokenInput{Name: "seed"}}
	st, err := e.svc.SeedToken(ctx, testOrg, "bot", seed)
	require.NoError(t, err)
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", st.ID))
	revoked(orgadmin.Bearer(seed.Value), orgadmin.ErrRevokedToken)
	_, err = e.svc.SeedToken(ctx, testOrg, "bot", seed)
	require.NoError(t, err)
	_, err = e.svc.GetInstanceConfig(ctx, orgadmin.Bearer(seed.Value), "bot")
	require.NoError(t, err)
}

// An organization remembers at most Config.MaxRevokedTokensPerOrg revoked
// tokens: beyond it, a revocation forgets those that would be forgotten
// first, which are refused from then on as unknown rather than revoked.
func TestRevokedTokensAreBoundedPerOrg(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{MaxRevokedTokensPerOrg: 2})
	e.serviceAccount(t, "bot")
	forever := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "forever"}) // remembered 30 days
	hourly := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "hourly", TTL: orgadmin.Some(time.Hour)})
	daily := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "daily", TTL: orgadmin.Some(24 * time.Hour)})
	for _, tok := range []orgadmin.Token{forever, hourly, daily} {
		require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", tok.ID))
	}
	for _, c := range []struct {
		tok orgadmin.Token
		why error
	}{{forever, orgadmin.ErrRevokedToken}, {hourly, orgadmin.ErrUnknownToken}, {daily, orgadmin.ErrRevokedToken}} {
		_, err := e.svc.GetInstanceConfig(ctx, orgadmin.Bearer(c.tok.Value), "bot")
		requireCode(t, err, orgadmin.ErrUnauthorized)
		assert.ErrorIs(t, err, c.why, c.tok.Name)
	}
}

// revocationStore is a memory store that keeps the Revocation of the last
// DeleteToken.
type revocationStore struct {
	*memstore.Store
	last *storage.Revocation
}

func (s revocationStore) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	*s.last = r
	return s.Store.DeleteToken(ctx, org, userID, id, r, a)
}

// The bound is 100 000 revoked tokens per organization unless Config
// says otherwise; a negative MaxRevokedTokensPerOrg means none.
func TestRevokedTokensBoundDefault(t *testing.T) {
	ctx := context.Background()
	for cfg, want := range map[int]int{0: orgadmin.DefaultMaxRevokedTokensPerOrg, 7: 7, -1: 0} {
		st := revocationStore{memstore.New(), new(storage.Revocation)}
		svc := orgadmin.New(st, orgadmin.Config{MaxRevokedTokensPerOrg: cfg})
		token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
		require.NoError(t, err)
		admin, err := svc.Authenticate(ctx, token)
		require.NoError(t, err)
		tok, err := svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: "t"})
		require.NoError(t, err)
		require.NoError(t, svc.DeleteToken(ctx, admin, "admin", tok.ID))
		assert.Equal(t, want, st.last.MaxPerOrg, "Config.MaxRevokedTokensPerOrg %d", cfg)
	}
	assert.Equal(t, 100_000, orgadmin.DefaultMaxRevokedTokensPerOrg)
}

// The default retention of a revoked token without expiry is 30 days.
func TestRevokedTokenRetentionDefault(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	tok := e.token(t, "bot", orgadmin.CreateTokenInput{Name: "t"})
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "bot", tok.ID))
	assert.Equal(t, 30*24*time.Hour, orgadmin.DefaultRevokedTokenRetention)
	e.clk.Advance(orgadmin.DefaultRevokedTokenRetention - time.Millisecond)
	_, err := e.svc.Authenticate(ctx, tok.Value)
	assert.ErrorIs(t, err, orgadmin.ErrRevokedToken)
	e.clk.Advance(time.Millisecond)
	_, err = e.svc.Authenticate(ctx, tok.Value)
	assert.ErrorIs(t, err, orgadmin.ErrUnknownToken)
}
