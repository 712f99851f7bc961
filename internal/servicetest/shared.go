package servicetest

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

// RunShared checks what a store shared by several processes must
// guarantee: two Services, each on a Store of its own over one database,
// see each other's revocations and deletions at once. newStores makes each
// pair: two Stores of one fresh database, as two processes would hold
// them. The networked adapters (redisstore, mongostore) run it from their
// tests.
func RunShared(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	t.Run("Revocations", func(t *testing.T) { testRevocations(t, services(newStores(t))) })
	t.Run("TokenRacingUserDeletion", func(t *testing.T) { testTokenRacingUserDeletion(t, services(newStores(t))) })
}

func services(a, b storage.Store) [2]*orgadmin.Service {
	return [2]*orgadmin.Service{orgadmin.New(a, orgadmin.Config{}), orgadmin.New(b, orgadmin.Config{})}
}

// A token revoked, or a user deleted, through one Service is refused by
// the other on its next call, though both had just authenticated it; and a
// second process bootstrapping the same org makes no second Admin.
func testRevocations(t *testing.T, services [2]*orgadmin.Service) {
	a, b := services[0], services[1]
	ctx := t.Context()

	adminToken, err := a.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	again, err := b.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err, "a second process bootstrapping the same org")
	admin, err := b.Authenticate(ctx, adminToken)
	require.NoError(t, err)
	_, err = a.Authenticate(ctx, again)
	require.NoError(t, err)

	_, err = a.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	tok, err := b.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "ci"})
	require.NoError(t, err)
	other, err := a.CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "other"})
	require.NoError(t, err)
	for _, svc := range services {
		for _, v := range []string{tok.Value, other.Value} {
			_, err := svc.Authenticate(ctx, v)
			require.NoError(t, err)
		}
	}

	require.NoError(t, a.DeleteToken(ctx, admin, "robot", tok.ID))
	for _, svc := range services {
		_, err := svc.Authenticate(ctx, tok.Value)
		require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "a revoked token authenticates")
	}
	_, err = b.Authenticate(ctx, other.Value)
	require.NoError(t, err)

	_, err = b.DeleteUser(ctx, admin, "robot")
	require.NoError(t, err)
	for _, svc := range services {
		_, err := svc.Authenticate(ctx, other.Value)
		require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "a token of a deleted user authenticates")
	}
	page, err := a.ListUsers(ctx, admin, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, 1, page.TotalCount, "users after a second bootstrap and a deletion")
}

// Tokens created through one Service while the other deletes their user:
// once the delete has returned, none of them authenticates through either
// Service, even after the username is created again.
func testTokenRacingUserDeletion(t *testing.T, services [2]*orgadmin.Service) {
	a, b := services[0], services[1]
	ctx := t.Context()
	adminToken, err := a.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := a.Authenticate(ctx, adminToken)
	require.NoError(t, err)

	for round := range 5 {
		_, err := a.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "doomed"})
		require.NoError(t, err)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			values []string
		)
		start := make(chan struct{})
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				tok, err := a.CreateToken(ctx, admin, "doomed", orgadmin.CreateTokenInput{Name: "racer"})
				if err != nil {
					assert.True(t, errors.Is(err, orgadmin.ErrNotFound), "round %d: %v", round, err)
					return
				}
				mu.Lock()
				values = append(values, tok.Value)
				mu.Unlock()
			}()
		}
		close(start)
		_, err = b.DeleteUser(ctx, admin, "doomed")
		require.NoError(t, err)
		wg.Wait()
		if round%2 == 1 {
			_, err := b.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "doomed"})
			require.NoError(t, err)
			_, err = a.DeleteUser(ctx, admin, "doomed")
			require.NoError(t, err)
		}
		for _, v := range values {
			for _, svc := range services {
				_, err := svc.Authenticate(ctx, v)
				require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "round %d: a token of a deleted user authenticates", round)
			}
		}
	}
}
