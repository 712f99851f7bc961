package orgadmin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// readerStore is a memory store with storage.CredentialTokensReader, built
// from its plain reads, so that the Service's one-step token listing can be
// compared with its two steps on the same data.
type readerStore struct {
	*memstore.Store
	calls int
}

func (r *readerStore) CredentialTokens(ctx context.Context, d storage.Digest, folded string, liveAt time.Time) (storage.Credential, storage.UserTokens, error) {
	r.calls++
	cred, err := r.TokenByDigest(ctx, d)
	if err != nil {
		return storage.Credential{}, storage.UserTokens{}, err
	}
	u, err := r.GetUser(ctx, cred.User.Org, folded)
	if err != nil {
		return cred, storage.UserTokens{}, nil
	}
	ts, err := r.ListTokens(ctx, u.Org, u.ID, liveAt)
	return cred, storage.UserTokens{Found: true, Tokens: ts}, err
}

// AuthenticateListTokens answers exactly what Authenticate then ListTokens
// answer, for every kind of caller and target, on a store that reads both
// at once and on one that does not.
func TestAuthenticateListTokensMatchesTwoSteps(t *testing.T) {
	clk := newFakeClock()
	store := &readerStore{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	plain := orgadmin.New(store.Store, orgadmin.Config{Now: clk.Now})
	ctx := context.Background()
	admin, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "Admin"})
	require.NoError(t, err)
	boss, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "globex", Username: "boss"})
	require.NoError(t, err)
	seed := func(org, user string, in orgadmin.CreateTokenInput) string {
		t.Helper()
		value := "value-of-" + org + "-" + user + "-" + strings.Repeat("x", 20) + in.Name
		_, err := svc.SeedToken(ctx, org, user, orgadmin.SeedTokenInput{Value: value, CreateTokenInput: in})
		require.NoError(t, err)
		return value
	}
	for _, u := range []orgadmin.NewUser{
		{Username: "bob", Role: orgadmin.RoleMember},
		{Username: "robot", Role: orgadmin.RoleMember, IsServiceAccount: true},
		{Username: "ghost", Role: orgadmin.RoleAdmin},
	} {
		_, err := svc.CreateUser(ctx, "acme", u)
		require.NoError(t, err)
	}
	_, err = svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "stranger", IsServiceAccount: true})
	require.NoError(t, err)
	bob := seed("acme", "bob", orgadmin.CreateTokenInput{Name: "b"})
	seed("acme", "robot", orgadmin.CreateTokenInput{Name: "r1"})
	seed("acme", "robot", orgadmin.CreateTokenInput{Name: "r2", TTL: orgadmin.Ptr(600)})
	seed("globex", "stranger", orgadmin.CreateTokenInput{Name: "s"})
	scaling := seed("acme", "Admin", orgadmin.CreateTokenInput{Name: "rs", TokenType: orgadmin.Ptr("read_scaling")})
	expiring := seed("acme", "Admin", orgadmin.CreateTokenInput{Name: "exp", TTL: orgadmin.Ptr(300)})
	ghost := seed("acme", "ghost", orgadmin.CreateTokenInput{Name: "g"})
	ghostCaller, err := svc.Authenticate(ctx, admin)
	require.NoError(t, err)
	_, err = svc.DeleteUser(ctx, ghostCaller, "ghost")
	require.NoError(t, err)
	clk.Advance(400 * time.Second) // expiring is dead, robot's r2 is live

	tokens := map[string]string{
		"Admin": admin, "Member": bob, "read_scaling": scaling, "expired": expiring,
		"deleted user": ghost, "Admin of globex": boss, "unknown": "never-issued-token",
		"empty": "", "too long": strings.Repeat("t", 513),
	}
	targets := []string{"admin", "ADMIN", "bob", "robot", "stranger", "nobody", "ghost", "not a name", strings.Repeat("n", 256), ""}
	for name, tok := range tokens {
		for _, target := range targets {
			wantCaller, wantTokens, wantErr := twoSteps(ctx, plain, tok, target)
			before := store.calls
			c, got, err := svc.AuthenticateListTokens(ctx, tok, target)
			msg := name + " lists " + target
			if wantErr != nil {
				require.Error(t, err, msg)
				assert.Equal(t, wantErr.Error(), err.Error(), msg)
				assert.Equal(t, orgadmin.ErrorCode(wantErr), orgadmin.ErrorCode(err), msg)
				assert.Nil(t, got, msg)
			} else {
				require.NoError(t, err, msg)
				assert.Equal(t, wantTokens, got, msg)
				assert.Equal(t, wantCaller, c, msg)
				assert.Equal(t, before+1, store.calls, "%s: one store read", msg)
			}
		}
	}
}

func twoSteps(ctx context.Context, svc *orgadmin.Service, token, username string) (orgadmin.Caller, []orgadmin.Token, error) {
	c, err := svc.Authenticate(ctx, token)
	if err != nil {
		return orgadmin.Caller{}, nil, err
	}
	ts, err := svc.ListTokens(ctx, c, username)
	if err != nil {
		return orgadmin.Caller{}, nil, err
	}
	return c, ts, nil
}
