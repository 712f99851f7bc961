package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// sent is a go-redis hook that records what goes to the network: the
// round trips (one for each command, one for each pipeline) and the names
// of the commands, pipelines included.
type sent struct {
	trips atomic.Int64
	mu    sync.Mutex
	names []string
}

func (c *sent) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *sent) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *sent) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}

func (c *sent) add(cmds ...redis.Cmder) {
	c.trips.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		c.names = append(c.names, cmd.Name())
	}
}

// take returns the names of the commands sent since the last take.
func (c *sent) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.names
	c.names = nil
	return n
}

func TestRoundTripsMiniredis(t *testing.T) {
	testRoundTrips(t, miniClient(t), true)
}

func TestRoundTripsRedisServer(t *testing.T) {
	testRoundTrips(t, serverClient(t), true)
}

// On a Cluster, authentication reads the digest's pointer, then the org's
// slot: two round trips; creating and deleting tokens and sessions add one
// for the pointer keys.
func TestRoundTripsRedisCluster(t *testing.T) {
	testRoundTrips(t, clusterClient(t), false)
}

// Authentication is one round trip on a single server; every operation,
// authentication included, at most three; a page of users one more than
// authentication, however deep the page starts.
func testRoundTrips(t *testing.T, c redis.UniversalClient, single bool) {
	ctx := context.Background()
	counter := &sent{}
	c.AddHook(counter)
	auth, extra := int64(1), int64(0)
	if !single {
		auth, extra = 2, 2
	}
	svc := orgadmin.New(newStore(t, c, single), orgadmin.Config{})
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	const dive = "0b0d6f7e-5b1a-4c1e-9b0a-3c2d1e0f9a8b"
	require.NoError(t, svc.RegisterDive(ctx, "acme", orgadmin.Dive{ID: dive, Version: 2}))
	for i := range 300 {
		_, err = svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: fmt.Sprintf("robot%03d", i), IsServiceAccount: true})
		require.NoError(t, err)
	}
	var seeded [2]orgadmin.Token
	for i := range seeded {
		seeded[i], err = svc.SeedToken(ctx, "acme", "robot000", orgadmin.SeedTokenInput{Value: fmt.Sprintf("robot-token-%d-0123456789", i), CreateTokenInput: orgadmin.CreateTokenInput{Name: "x"}})
		require.NoError(t, err)
	}
	require.NoError(t, svc.MarkDucklingActive(ctx, "acme", "robot000", "rw"))
	cfg := orgadmin.InstanceConfig{
		ReadWrite:   &orgadmin.InstanceSide{InstanceSize: orgadmin.SizeJumbo},
		ReadScaling: &orgadmin.InstanceSide{InstanceSize: orgadmin.SizeStandard, FlockSize: orgadmin.Ptr(1)},
	}
	admin, err := svc.Authenticate(ctx, token)
	require.NoError(t, err)
	deep, err := svc.ListUsers(ctx, admin, orgadmin.ListUsersOptions{Limit: orgadmin.Ptr(250)})
	require.NoError(t, err)
	require.NotEmpty(t, deep.NextPageToken)

	ops := []struct {
		name string
		max  int64
		call func(c orgadmin.Caller, round int) error
	}{
		{"get instance config", 3, func(c orgadmin.Caller, round int) error {
			_, err := svc.GetInstanceConfig(ctx, c, "robot000")
			return err
		}},
		{"set instance config", 3, func(c orgadmin.Caller, round int) error {
			_, err := svc.SetInstanceConfig(ctx, c, "robot000", orgadmin.SetInstanceConfigInput{Config: &cfg})
			return err
		}},
		{"get active accounts", 3, func(c orgadmin.Caller, round int) error { _, err := svc.GetActiveAccounts(ctx, c); return err }},
		{"create service account", 3, func(c orgadmin.Caller, round int) error {
			_, err := svc.CreateServiceAccount(ctx, c, orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("new_sa%d", round)})
			return err
		}},
		{"list users", 2, func(c orgadmin.Caller, round int) error {
			_, err := svc.ListUsers(ctx, c, orgadmin.ListUsersOptions{})
			return err
		}},
		{"list users, page 250 users in", 2, func(c orgadmin.Caller, round int) error {
			_, err := svc.ListUsers(ctx, c, orgadmin.ListUsersOptions{PageToken: deep.NextPageToken})
			return err
		}},
		{"list users, offset 250", 2, func(c orgadmin.Caller, round int) error {
			_, err := svc.ListUsers(ctx, c, orgadmin.ListUsersOptions{Offset: orgadmin.Ptr(250)})
			return err
		}},
		{"create token", 3, func(c orgadmin.Caller, round int) error {
			_, err := svc.CreateToken(ctx, c, "robot000", orgadmin.CreateTokenInput{Name: "t"})
			return err
		}},
		{"list tokens", 3, func(c orgadmin.Caller, round int) error { _, err := svc.ListTokens(ctx, c, "robot000"); return err }},
		{"delete token", 3, func(c orgadmin.Caller, round int) error { return svc.DeleteToken(ctx, c, "robot000", seeded[round].ID) }},
		{"create embed session", 3, func(c orgadmin.Caller, round int) error {
			_, err := svc.CreateEmbedSession(ctx, c, dive, orgadmin.CreateEmbedSessionInput{Username: "robot000", Version: orgadmin.Ptr(1)})
			return err
		}},
		{"delete user", 3, func(c orgadmin.Caller, round int) error {
			_, err := svc.DeleteUser(ctx, c, fmt.Sprintf("robot%03d", 1+round))
			return err
		}},
	}
	for _, op := range ops {
		// Once warm: each script has been loaded by an earlier call.
		for round := range 2 {
			counter.trips.Store(0)
			c, err := svc.Authenticate(ctx, token)
			require.NoError(t, err)
			if round == 0 {
				require.NoError(t, op.call(c, round), op.name)
				continue
			}
			assert.EqualValues(t, auth, counter.trips.Load(), "authenticate")
			require.NoError(t, op.call(c, round), op.name)
			assert.LessOrEqual(t, counter.trips.Load(), op.max+extra, op.name)
			t.Logf("%s: %d round trips", op.name, counter.trips.Load())
		}
	}

	// A token listing, authentication included, costs what authentication
	// alone costs: the tokens come with the credential.
	for _, target := range []string{"admin", "robot000", "nobody"} {
		for round := range 2 {
			counter.trips.Store(0)
			_, toks, err := svc.AuthenticateListTokens(ctx, token, target)
			if target == "nobody" {
				require.ErrorIs(t, err, orgadmin.ErrNotFound)
			} else {
				require.NoError(t, err)
				require.NotEmpty(t, toks)
			}
			if round == 1 {
				assert.EqualValues(t, auth, counter.trips.Load(), "authenticate and list the tokens of %s", target)
			}
		}
	}
}
