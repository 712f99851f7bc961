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

func (c *countingStore) TokenByDigest(ctx context.Context, d storage.Digest) (storage.Credential, error) {
	c.calls.Add(1)
	return c.Store.TokenByDigest(ctx, d)
}
func (c *countingStore) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	c.calls.Add(1)
	return c.Store.GetUser(ctx, org, folded)
}
func (c *countingStore) CreateUser(ctx context.Context, u storage.User) error {
	c.calls.Add(1)
	return c.Store.CreateUser(ctx, u)
}
func (c *countingStore) SetInstances(ctx context.Context, org, folded string, cfg storage.InstanceConfig) error {
	c.calls.Add(1)
	return c.Store.SetInstances(ctx, org, folded, cfg)
}
func (c *countingStore) DeleteUser(ctx context.Context, org, folded string) (storage.User, error) {
	c.calls.Add(1)
	return c.Store.DeleteUser(ctx, org, folded)
}
func (c *countingStore) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	c.calls.Add(1)
	return c.Store.ListUsers(ctx, org, q)
}
func (c *countingStore) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit) error {
	c.calls.Add(1)
	return c.Store.CreateToken(ctx, t, lim)
}
func (c *countingStore) ListTokens(ctx context.Context, org, userID string, at time.Time) ([]storage.Token, error) {
	c.calls.Add(1)
	return c.Store.ListTokens(ctx, org, userID, at)
}
func (c *countingStore) DeleteToken(ctx context.Context, org, userID, id string, at time.Time) error {
	c.calls.Add(1)
	return c.Store.DeleteToken(ctx, org, userID, id, at)
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
func (c *countingStore) CreateEmbedSession(ctx context.Context, s storage.EmbedSession) error {
	c.calls.Add(1)
	return c.Store.CreateEmbedSession(ctx, s)
}

// Every API operation, authentication included, makes at most three store
// calls; authentication makes one, and a page of users one more, however
// deep.
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
		ReadWrite:   &orgadmin.InstanceSide{InstanceSize: orgadmin.SizeJumbo},
		ReadScaling: &orgadmin.InstanceSide{InstanceSize: orgadmin.SizeStandard, FlockSize: orgadmin.Ptr(1)},
	}

	ops := []struct {
		name string
		max  int64
		call func(c orgadmin.Caller) error
	}{
		{"get instance config", 3, func(c orgadmin.Caller) error { _, err := svc.GetInstanceConfig(ctx, c, "robot"); return err }},
		{"set instance config", 3, func(c orgadmin.Caller) error {
			_, err := svc.SetInstanceConfig(ctx, c, "robot", orgadmin.SetInstanceConfigInput{Config: &cfg})
			return err
		}},
		{"get active accounts", 3, func(c orgadmin.Caller) error { _, err := svc.GetActiveAccounts(ctx, c); return err }},
		{"create service account", 3, func(c orgadmin.Caller) error {
			_, err := svc.CreateServiceAccount(ctx, c, orgadmin.CreateServiceAccountInput{Username: "new_sa"})
			return err
		}},
		{"list users", 2, func(c orgadmin.Caller) error {
			_, err := svc.ListUsers(ctx, c, orgadmin.ListUsersOptions{})
			return err
		}},
		{"create token", 3, func(c orgadmin.Caller) error {
			_, err := svc.CreateToken(ctx, c, "robot", orgadmin.CreateTokenInput{Name: "t"})
			return err
		}},
		{"list tokens", 3, func(c orgadmin.Caller) error { _, err := svc.ListTokens(ctx, c, "robot"); return err }},
		// The caller's own id comes from authentication: no second read.
		{"list own tokens", 2, func(c orgadmin.Caller) error { _, err := svc.ListTokens(ctx, c, "ADMIN"); return err }},
		{"delete token", 3, func(c orgadmin.Caller) error { return svc.DeleteToken(ctx, c, "robot", extra.ID) }},
		{"create embed session", 3, func(c orgadmin.Caller) error {
			_, err := svc.CreateEmbedSession(ctx, c, dive, orgadmin.CreateEmbedSessionInput{Username: "robot", Version: orgadmin.Ptr(1)})
			return err
		}},
		{"delete user", 3, func(c orgadmin.Caller) error { _, err := svc.DeleteUser(ctx, c, "gone"); return err }},
	}
	for _, op := range ops {
		store.calls.Store(0)
		c, err := svc.Authenticate(ctx, token)
		require.NoError(t, err)
		assert.EqualValues(t, 1, store.calls.Load(), "authenticate")
		require.NoError(t, op.call(c), op.name)
		assert.LessOrEqual(t, store.calls.Load(), op.max, op.name)
	}
}
