package redisstore

import (
	"context"
	"errors"
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

// Every operation called with a bearer token reads the credential and its
// target together: on a single server, a read of the caller's target is
// one round trip, authentication included, and a write one more; a page
// of users costs the same however deep it starts.
func testRoundTrips(t *testing.T, c redis.UniversalClient, single bool) {
	ctx := context.Background()
	counter := &sent{}
	c.AddHook(counter)
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
		ReadWrite:   orgadmin.InstanceSide{Size: orgadmin.SizeJumbo},
		ReadScaling: orgadmin.InstanceSide{Size: orgadmin.SizeStandard, FlockSize: 1},
	}
	bearer := orgadmin.Bearer(token)
	deep, err := svc.ListUsers(ctx, bearer, orgadmin.ListUsersOptions{Limit: orgadmin.Some(250)})
	require.NoError(t, err)
	require.NotEmpty(t, deep.NextPageToken)

	ops := []struct {
		name  string
		trips int64 // on a single server, authentication included
		call  func(round int) error
	}{
		{"get instance config", 1, func(int) error {
			_, err := svc.GetInstanceConfig(ctx, bearer, "robot000")
			return err
		}},
		{"get own instance config", 1, func(int) error {
			_, err := svc.GetInstanceConfig(ctx, bearer, "admin")
			return err
		}},
		{"set instance config", 2, func(int) error {
			_, err := svc.SetInstanceConfig(ctx, bearer, "robot000", orgadmin.SetInstanceConfigInput{Config: cfg})
			return err
		}},
		{"get active accounts", 2, func(int) error { _, err := svc.GetActiveAccounts(ctx, bearer); return err }},
		{"create service account", 2, func(round int) error {
			_, err := svc.CreateServiceAccount(ctx, bearer, orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("new_sa%d", round)})
			return err
		}},
		{"list users", 2, func(int) error {
			_, err := svc.ListUsers(ctx, bearer, orgadmin.ListUsersOptions{})
			return err
		}},
		{"list users, page 250 users in", 2, func(int) error {
			_, err := svc.ListUsers(ctx, bearer, orgadmin.ListUsersOptions{PageToken: deep.NextPageToken})
			return err
		}},
		{"list users, offset 250", 2, func(int) error {
			_, err := svc.ListUsers(ctx, bearer, orgadmin.ListUsersOptions{Offset: orgadmin.Some(250)})
			return err
		}},
		{"create token", 2, func(int) error {
			_, err := svc.CreateToken(ctx, bearer, "robot000", orgadmin.CreateTokenInput{Name: "t"})
			return err
		}},
		{"list tokens", 1, func(int) error { _, err := svc.ListTokens(ctx, bearer, "robot000"); return err }},
		{"list own tokens", 1, func(int) error { _, err := svc.ListTokens(ctx, bearer, "admin"); return err }},
		{"list tokens of nobody", 1, func(int) error {
			_, err := svc.ListTokens(ctx, bearer, "nobody")
			if errors.Is(err, orgadmin.ErrNotFound) {
				return nil
			}
			return err
		}},
		{"delete token", 2, func(round int) error { return svc.DeleteToken(ctx, bearer, "robot000", seeded[round].ID) }},
		{"create embed session", 3, func(int) error {
			_, err := svc.CreateEmbedSession(ctx, bearer, dive, orgadmin.CreateEmbedSessionInput{Username: "robot000", Version: orgadmin.Some(1)})
			return err
		}},
		{"delete user", 2, func(round int) error {
			_, err := svc.DeleteUser(ctx, bearer, fmt.Sprintf("robot%03d", 1+round))
			return err
		}},
	}
	for _, op := range ops {
		// Once warm: each script has been loaded, and the token's place
		// is known, by an earlier call.
		for round := range 2 {
			counter.trips.Store(0)
			require.NoError(t, op.call(round), op.name)
			if round == 0 {
				continue
			}
			if single {
				assert.EqualValues(t, op.trips, counter.trips.Load(), op.name)
			} else {
				// The pointer before the org's records, and the pointer
				// keys of what is created or deleted.
				assert.LessOrEqual(t, counter.trips.Load(), op.trips+2, op.name)
			}
			t.Logf("%s: %d round trips", op.name, counter.trips.Load())
		}
	}

	// A revoked token is told from an unknown one in the read that finds
	// no token: one round trip, on a Cluster too, whether this process
	// knew where the token's records were (warm) or not.
	warm, err := svc.CreateToken(ctx, bearer, "admin", orgadmin.CreateTokenInput{Name: "warm"})
	require.NoError(t, err)
	_, err = svc.Authenticate(ctx, warm.Value)
	require.NoError(t, err)
	cold, err := svc.CreateToken(ctx, bearer, "admin", orgadmin.CreateTokenInput{Name: "cold"})
	require.NoError(t, err)
	for _, tok := range []orgadmin.Token{warm, cold} {
		require.NoError(t, svc.DeleteToken(ctx, bearer, "admin", tok.ID))
	}
	for _, c := range []struct {
		name, value string
		why         error
	}{
		{"revoked, warm", warm.Value, orgadmin.ErrRevokedToken},
		{"revoked, cold", cold.Value, orgadmin.ErrRevokedToken},
		{"unknown", "never-issued-0123456789", orgadmin.ErrUnknownToken},
	} {
		for range 2 {
			counter.trips.Store(0)
			_, err := svc.Authenticate(ctx, c.value)
			require.ErrorIs(t, err, c.why, c.name)
			assert.EqualValues(t, 1, counter.trips.Load(), c.name)
		}
	}
}
