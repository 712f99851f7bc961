package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

func TestSharedMiniredis(t *testing.T)    { testShared(t, miniClient(t), true) }
func TestSharedRedisServer(t *testing.T)  { testShared(t, serverClient(t), true) }
func TestSharedRedisCluster(t *testing.T) { testShared(t, clusterClient(t), false) }

// Two Services on one Redis, as two processes would be: a token revoked or
// a user deleted through one is refused by the other at once.
func testShared(t *testing.T, c redis.UniversalClient, single bool) {
	ctx := context.Background()
	a := newStore(t, c, single)
	b, err := New(c, Options{Prefix: a.prefix})
	require.NoError(t, err)
	b.single = single
	one, two := orgadmin.New(a, orgadmin.Config{}), orgadmin.New(b, orgadmin.Config{})

	adminToken, err := one.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := two.Authenticate(ctx, adminToken)
	require.NoError(t, err, "the second Service does not see the first's Admin")

	_, err = two.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	tok, err := one.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "ci"})
	require.NoError(t, err)
	other, err := one.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "other"})
	require.NoError(t, err)

	// Warm both: each has authenticated the tokens before they go.
	for _, svc := range []*orgadmin.Service{one, two} {
		for _, v := range []string{tok.Value, other.Value} {
			_, err := svc.Authenticate(ctx, v)
			require.NoError(t, err)
		}
	}

	require.NoError(t, one.DeleteToken(ctx, admin, "robot", tok.ID))
	_, err = two.Authenticate(ctx, tok.Value)
	require.True(t, errors.Is(err, orgadmin.ErrUnauthorized), "revoked token: %v", err)
	_, err = two.Authenticate(ctx, other.Value)
	require.NoError(t, err)

	_, err = two.DeleteUser(ctx, admin, "robot")
	require.NoError(t, err)
	_, err = one.Authenticate(ctx, other.Value)
	require.True(t, errors.Is(err, orgadmin.ErrUnauthorized), "token of a deleted user: %v", err)
}
