package mongostore

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// Two Services sharing one database, as two processes would (each with a
// Store of its own), see each other's revocations and deletions at once.
func TestTwoServicesShareRevocations(t *testing.T) {
	db := newDB(t, client(t))
	services := make([]*orgadmin.Service, 2)
	for i := range services {
		s, err := New(t.Context(), db, Options{Timeout: testTimeout})
		require.NoError(t, err)
		services[i] = orgadmin.New(s, orgadmin.Config{})
	}
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
		_, err := svc.Authenticate(ctx, tok.Value)
		require.NoError(t, err)
	}

	// Revoked through a: b refuses it on the next call.
	require.NoError(t, a.DeleteToken(ctx, admin, "robot", tok.ID))
	for _, svc := range services {
		_, err := svc.Authenticate(ctx, tok.Value)
		require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
	}
	_, err = b.Authenticate(ctx, other.Value)
	require.NoError(t, err)

	// The user deleted through b: a refuses its remaining token.
	_, err = b.DeleteUser(ctx, admin, "robot")
	require.NoError(t, err)
	for _, svc := range services {
		_, err := svc.Authenticate(ctx, other.Value)
		require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
	}
}

// Tokens created through one Service while another deletes their user:
// once the delete has returned, none of them authenticates, through
// either Service, even after the username is created again.
func TestTokenRacingUserDeletionAcrossServices(t *testing.T) {
	db := newDB(t, client(t))
	var services [2]*orgadmin.Service
	for i := range services {
		s, err := New(t.Context(), db, Options{Timeout: testTimeout})
		require.NoError(t, err)
		services[i] = orgadmin.New(s, orgadmin.Config{})
	}
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
