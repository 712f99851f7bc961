package orgadmin_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// countingStore counts the calls made to the Store it wraps. The storage
// contract lets a networked store serve each call in one round trip, so the
// count bounds the round trips of every operation.
type countingStore struct {
	storage.Store
	calls atomic.Int64
}

func (c *countingStore) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	c.calls.Add(1)
	return c.Store.ReadAccess(ctx, q)
}
func (c *countingStore) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	c.calls.Add(1)
	return c.Store.GetUser(ctx, org, folded)
}
func (c *countingStore) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	c.calls.Add(1)
	return c.Store.CreateUser(ctx, u, lim, a)
}
func (c *countingStore) SetInstances(ctx context.Context, org, userID string, cfg storage.InstanceConfig, a *storage.Audit) error {
	c.calls.Add(1)
	return c.Store.SetInstances(ctx, org, userID, cfg, a)
}
func (c *countingStore) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	c.calls.Add(1)
	return c.Store.DeleteUser(ctx, org, userID, a)
}
func (c *countingStore) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	c.calls.Add(1)
	return c.Store.ListUsers(ctx, org, q)
}
func (c *countingStore) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	c.calls.Add(1)
	return c.Store.CreateToken(ctx, t, lim, a)
}
func (c *countingStore) ListTokens(ctx context.Context, org, userID string, at time.Time) ([]storage.Token, error) {
	c.calls.Add(1)
	return c.Store.ListTokens(ctx, org, userID, at)
}
func (c *countingStore) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	c.calls.Add(1)
	return c.Store.DeleteToken(ctx, org, userID, id, r, a)
}
func (c *countingStore) ListActivity(ctx context.Context, org string) ([]storage.Activity, error) {
	c.calls.Add(1)
	return c.Store.ListActivity(ctx, org)
}
func (c *countingStore) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	c.calls.Add(1)
	return c.Store.GetDive(ctx, org, id)
}
func (c *countingStore) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	c.calls.Add(1)
	return c.Store.GetEmbedTarget(ctx, org, diveID, folded)
}
func (c *countingStore) CreateEmbedSession(ctx context.Context, s storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	c.calls.Add(1)
	return c.Store.CreateEmbedSession(ctx, s, lim, a)
}

// Every API operation called with a bearer token reads the credential and
// what it needs of its target in one store call: a read of a user is that
// call alone, a change one more, an embed session (the Dive and its
// account, then the session) two more.
func TestStoreCallsPerOperation(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	const dive = "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"
	require.NoError(t, svc.RegisterDive(ctx, "acme", orgadmin.Dive{ID: dive, Version: 2}))
	for _, name := range []string{"robot", "gone"} {
		_, err = svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: name, IsServiceAccount: true})
		require.NoError(t, err)
	}
	extra, err := svc.SeedToken(ctx, "acme", "robot", orgadmin.SeedTokenInput{Value: "robot-token-0123456789", CreateTokenInput: orgadmin.CreateTokenInput{Name: "x"}})
	require.NoError(t, err)
	require.NoError(t, svc.MarkDucklingActive(ctx, "acme", "robot", "rw"))
	cfg := orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard, FlockSize: 1},
	}

	bearer := orgadmin.Bearer(token)
	ops := []struct {
		name  string
		calls int64
		call  func() error
	}{
		{"get instance config", 1, func() error { _, err := svc.GetInstanceConfig(ctx, bearer, "robot"); return err }},
		{"set instance config", 2, func() error {
			_, err := svc.SetInstanceConfig(ctx, bearer, "robot", orgadmin.SetInstanceConfigInput{Config: cfg})
			return err
		}},
		{"get active accounts", 2, func() error { _, err := svc.GetActiveAccounts(ctx, bearer); return err }},
		{"create service account", 2, func() error {
			_, err := svc.CreateServiceAccount(ctx, bearer, orgadmin.CreateServiceAccountInput{Username: "new_sa"})
			return err
		}},
		{"list users", 2, func() error {
			_, err := svc.ListUsers(ctx, bearer, orgadmin.ListUsersOptions{})
			return err
		}},
		{"create token", 2, func() error {
			_, err := svc.CreateToken(ctx, bearer, "robot", orgadmin.CreateTokenInput{Name: "t"})
			return err
		}},
		{"list tokens", 1, func() error { _, err := svc.ListTokens(ctx, bearer, "robot"); return err }},
		{"list own tokens", 1, func() error { _, err := svc.ListTokens(ctx, bearer, "ADMIN"); return err }},
		{"delete token", 2, func() error { return svc.DeleteToken(ctx, bearer, "robot", extra.ID) }},
		{"create embed session", 3, func() error {
			_, err := svc.CreateEmbedSession(ctx, bearer, dive, orgadmin.CreateEmbedSessionInput{Username: "robot", Version: orgadmin.Some(1)})
			return err
		}},
		{"delete user", 2, func() error { _, err := svc.DeleteUser(ctx, bearer, "gone"); return err }},
	}
	for _, op := range ops {
		store.calls.Store(0)
		require.NoError(t, op.call(), op.name)
		assert.EqualValues(t, op.calls, store.calls.Load(), op.name)
	}
}
