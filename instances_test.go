package orgadmin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// defaultConfig is the instance configuration of a new user as responses
// show it (DESIGN §7).
func defaultConfig() orgadmin.InstanceConfig {
	return orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "standard", Cooldown: orgadmin.Some(60 * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: "standard", FlockSize: 4, Cooldown: orgadmin.Some(60 * time.Second)},
	}
}

// setConfig sets username's configuration as the Admin and returns the
// answer.
func (e *env) setConfig(t testing.TB, username string, rw, rs orgadmin.InstanceSide) orgadmin.InstanceConfig {
	t.Helper()
	got, err := e.svc.SetInstanceConfig(context.Background(), e.admin, username, orgadmin.SetInstanceConfigInput{
		Config: orgadmin.InstanceConfig{ReadWrite: rw, ReadScaling: rs},
	})
	require.NoError(t, err)
	return got
}

func (e *env) getConfig(t testing.TB, username string) orgadmin.InstanceConfig {
	t.Helper()
	got, err := e.svc.GetInstanceConfig(context.Background(), e.admin, username)
	require.NoError(t, err)
	return got
}

func TestInstanceConfig_Defaults(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	assert.Equal(t, defaultConfig(), e.getConfig(t, "bot"))
	assert.Equal(t, defaultConfig(), e.getConfig(t, "admin"))
}

func TestInstanceConfig_EffectiveCooldownPerSize(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	e.serviceAccount(t, "bot")
	want := map[orgadmin.Size]int{"standard": 60, "jumbo": 60, "mega": 300, "giga": 600}
	for size, cd := range want {
		got := e.setConfig(t, "bot",
			orgadmin.InstanceSide{Size: size},
			orgadmin.InstanceSide{Size: size, FlockSize: 2})
		exp := orgadmin.InstanceConfig{
			ReadWrite:   orgadmin.InstanceSide{Size: size, Cooldown: orgadmin.Some(time.Duration(cd) * time.Second)},
			ReadScaling: orgadmin.InstanceSide{Size: size, FlockSize: 2, Cooldown: orgadmin.Some(time.Duration(cd) * time.Second)},
		}
		assert.Equalf(t, exp, got, "set answer for %s", size)
		assert.Equalf(t, exp, e.getConfig(t, "bot"), "get for %s", size)
		assert.Equalf(t, time.Duration(cd)*time.Second, orgadmin.DefaultCooldown(size), "DefaultCooldown(%s)", size)
	}

	// An explicit cooldown is shown as set; replacing the configuration
	// without it restores the size's default.
	got := e.setConfig(t, "bot",
		orgadmin.InstanceSide{Size: "giga", Cooldown: orgadmin.Some(120 * time.Second)},
		orgadmin.InstanceSide{Size: "mega", FlockSize: 0, Cooldown: orgadmin.Some(86400 * time.Second)})
	assert.Equal(t, 120, cooldownOf(got.ReadWrite))
	assert.Equal(t, 86400, cooldownOf(got.ReadScaling))
	got = e.setConfig(t, "bot",
		orgadmin.InstanceSide{Size: "giga"},
		orgadmin.InstanceSide{Size: "mega", FlockSize: 0})
	assert.Equal(t, 600, cooldownOf(got.ReadWrite))
	assert.Equal(t, 300, cooldownOf(got.ReadScaling))
}

func TestInstanceConfig_PulseHasNoCooldown(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	got := e.setConfig(t, "bot",
		orgadmin.InstanceSide{Size: "pulse"},
		orgadmin.InstanceSide{Size: "pulse", FlockSize: 3})
	exp := orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "pulse"},
		ReadScaling: orgadmin.InstanceSide{Size: "pulse", FlockSize: 3},
	}
	assert.Equal(t, exp, got)
	assert.Equal(t, exp, e.getConfig(t, "bot"))

	_, err := e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "pulse", Cooldown: orgadmin.Some(60 * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: "pulse", FlockSize: 3, Cooldown: orgadmin.Some(60 * time.Second)},
	}})
	be := requireCode(t, err, orgadmin.ErrBadRequest)
	assert.Equal(t, [][]any{
		{"config", "read_write", "cooldown_seconds"},
		{"config", "read_scaling", "cooldown_seconds"},
	}, issuePaths(t, err))
	assert.Equal(t, orgadmin.IssueCode("not_allowed"), be.Issues[0].Code)
	assert.Equal(t, exp, e.getConfig(t, "bot"), "a refused configuration changes nothing")
}

func TestInstanceConfig_FlockSizeBounds(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for _, n := range []int{0, 64} {
		got := e.setConfig(t, "bot", orgadmin.InstanceSide{Size: "standard"}, orgadmin.InstanceSide{Size: "standard", FlockSize: n})
		assert.Equal(t, n, got.ReadScaling.FlockSize)
		assert.Equal(t, n, e.getConfig(t, "bot").ReadScaling.FlockSize)
	}
	for _, n := range []int{65, -1} {
		_, err := e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
			ReadWrite:   orgadmin.InstanceSide{Size: "standard"},
			ReadScaling: orgadmin.InstanceSide{Size: "standard", FlockSize: n},
		}})
		assert.Equalf(t, [][]any{{"config", "read_scaling", "flock_size"}}, issuePaths(t, err), "flock_size %d", n)
	}
	assert.Equal(t, 64, e.getConfig(t, "bot").ReadScaling.FlockSize)
}

func TestInstanceConfig_CooldownBounds(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for _, cd := range []int{60, 86400} {
		got := e.setConfig(t, "bot",
			orgadmin.InstanceSide{Size: "jumbo", Cooldown: orgadmin.Some(time.Duration(cd) * time.Second)},
			orgadmin.InstanceSide{Size: "giga", FlockSize: 1, Cooldown: orgadmin.Some(time.Duration(cd) * time.Second)})
		assert.Equal(t, cd, cooldownOf(got.ReadWrite))
		assert.Equal(t, cd, cooldownOf(got.ReadScaling))
	}
	for _, cd := range []int{59, 86401, 0} {
		_, err := e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
			ReadWrite:   orgadmin.InstanceSide{Size: "jumbo", Cooldown: orgadmin.Some(time.Duration(cd) * time.Second)},
			ReadScaling: orgadmin.InstanceSide{Size: "giga", FlockSize: 1, Cooldown: orgadmin.Some(time.Duration(cd) * time.Second)},
		}})
		assert.Equalf(t, [][]any{
			{"config", "read_write", "cooldown_seconds"},
			{"config", "read_scaling", "cooldown_seconds"},
		}, issuePaths(t, err), "cooldown %d", cd)
	}
}

func TestInstanceConfig_UnknownSizeAndMissingSides(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	_, err := e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite: orgadmin.InstanceSide{Size: "Standard"},
	}})
	assert.Equal(t, [][]any{{"config", "read_write", "instance_size"}, {"config", "read_scaling", "instance_size"}}, issuePaths(t, err))
	_, err = e.svc.SetInstanceConfig(ctx, e.admin, "bot", orgadmin.SetInstanceConfigInput{})
	assert.Equal(t, [][]any{{"config", "read_write", "instance_size"}, {"config", "read_scaling", "instance_size"}}, issuePaths(t, err))
	_, err = e.svc.SetInstanceConfig(ctx, e.admin, "nobody", orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "standard"},
		ReadScaling: orgadmin.InstanceSide{Size: "standard", FlockSize: 1},
	}})
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestInstanceConfig_UserManagesOwn(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.human(t, orgadmin.NewUser{Username: "carol"})
	e.serviceAccount(t, "bot")
	carol, _ := e.login(t, "carol")
	cfg := orgadmin.SetInstanceConfigInput{Config: orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "mega"},
		ReadScaling: orgadmin.InstanceSide{Size: "pulse", FlockSize: 1},
	}}
	_, err := e.svc.SetInstanceConfig(ctx, carol, "Carol", cfg)
	require.NoError(t, err)
	got, err := e.svc.GetInstanceConfig(ctx, carol, "carol")
	require.NoError(t, err)
	assert.Equal(t, orgadmin.SizeMega, got.ReadWrite.Size)

	_, err = e.svc.GetInstanceConfig(ctx, carol, "bot")
	requireCode(t, err, orgadmin.ErrForbidden)
	_, err = e.svc.SetInstanceConfig(ctx, carol, "bot", cfg)
	requireCode(t, err, orgadmin.ErrForbidden)
}

func TestConfig_DefaultInstancesApplyToNewUsers(t *testing.T) {
	custom := orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: "jumbo", Cooldown: orgadmin.Some(120 * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: "pulse", FlockSize: 0},
	}
	e := newEnv(t, orgadmin.Config{DefaultInstances: custom})
	e.serviceAccount(t, "bot")
	e.human(t, orgadmin.NewUser{Username: "carol"})
	for _, u := range []string{"bot", "carol", "admin"} {
		assert.Equalf(t, custom, e.getConfig(t, u), "user %s", u)
	}

	assert.Panics(t, func() {
		orgadmin.New(e.store, orgadmin.Config{DefaultInstances: orgadmin.InstanceConfig{
			ReadWrite: orgadmin.InstanceSide{Size: "tiny"},
		}})
	}, "a broken default is a programming error")
	assert.PanicsWithValue(t, "orgadmin: New: nil store", func() { orgadmin.New(nil, orgadmin.Config{}) }, "so is no store")
}

// --- Ducklings and active accounts (DESIGN §8) ----------------------------

func (e *env) active(t testing.TB) []orgadmin.ActiveAccount {
	t.Helper()
	accts, err := e.svc.GetActiveAccounts(context.Background(), e.admin)
	require.NoError(t, err)
	return accts
}

// statusOf returns the status of Duckling id of username, or "" when it is
// not listed as running.
func (e *env) statusOf(t testing.TB, username, id string) string {
	t.Helper()
	for _, a := range e.active(t) {
		if a.Username != username {
			continue
		}
		for _, d := range a.Ducklings {
			if d.ID == id {
				return string(d.Status)
			}
		}
	}
	return ""
}

func rw(status orgadmin.DucklingState) orgadmin.Duckling {
	return orgadmin.Duckling{ID: "rw", Type: "read_write", Status: status}
}

func rs(n int, status orgadmin.DucklingState) orgadmin.Duckling {
	return orgadmin.Duckling{ID: fmt.Sprintf("rs.%d", n), Type: "read_scaling", Status: status}
}

func TestDucklings_MarkedActiveIsActive(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	assert.Equal(t, []orgadmin.ActiveAccount{}, e.active(t), "no running Duckling: no account")

	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "BOT", "rw"))
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rs.0"))
	assert.Equal(t, []orgadmin.ActiveAccount{{Username: "bot", Ducklings: []orgadmin.Duckling{rw("active"), rs(0, "active")}}}, e.active(t))
}

func TestDucklings_IdleCoolsDownForEffectiveCooldown(t *testing.T) {
	cases := []struct {
		name     string
		side     orgadmin.InstanceSide
		cooldown time.Duration
	}{
		{"standard", orgadmin.InstanceSide{Size: "standard"}, 60 * time.Second},
		{"jumbo", orgadmin.InstanceSide{Size: "jumbo"}, 60 * time.Second},
		{"mega", orgadmin.InstanceSide{Size: "mega"}, 300 * time.Second},
		{"giga", orgadmin.InstanceSide{Size: "giga"}, 600 * time.Second},
		{"custom", orgadmin.InstanceSide{Size: "standard", Cooldown: orgadmin.Some(90 * time.Second)}, 90 * time.Second},
		{"pulse", orgadmin.InstanceSide{Size: "pulse"}, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, id := range []string{"rw", "rs.1"} {
				t.Run(id, func(t *testing.T) {
					e := newEnv(t, orgadmin.Config{})
					ctx := context.Background()
					e.serviceAccount(t, "bot")
					// The other side gets a cooldown that differs, so the
					// test sees which side's cooldown applies.
					other := orgadmin.InstanceSide{Size: "standard", Cooldown: orgadmin.Some(3600 * time.Second)}
					rwSide, rsSide := c.side, other
					if id != "rw" {
						rwSide, rsSide = other, c.side
					}
					rsSide.FlockSize = 4
					e.setConfig(t, "bot", rwSide, rsSide)

					require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", id))
					e.clk.Advance(5 * time.Second)
					assert.Equal(t, "active", e.statusOf(t, "bot", id))
					require.NoError(t, e.svc.MarkDucklingIdle(ctx, testOrg, "bot", id))
					assert.Equal(t, "cooldown", e.statusOf(t, "bot", id))
					e.clk.Advance(c.cooldown - time.Millisecond)
					assert.Equal(t, "cooldown", e.statusOf(t, "bot", id), "1ms before the end of cooldown")
					e.clk.Advance(time.Millisecond)
					assert.Equal(t, "", e.statusOf(t, "bot", id), "cooldown over: no longer running")
					assert.Equal(t, []orgadmin.ActiveAccount{}, e.active(t))
				})
			}
		})
	}
}

func TestDucklings_CooldownUsesCurrentConfiguration(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	require.NoError(t, e.svc.MarkDucklingIdle(ctx, testOrg, "bot", "rw"))
	e.clk.Advance(60 * time.Second)
	assert.Equal(t, "", e.statusOf(t, "bot", "rw"))
	e.setConfig(t, "bot", orgadmin.InstanceSide{Size: "giga"}, orgadmin.InstanceSide{Size: "standard", FlockSize: 4})
	assert.Equal(t, "cooldown", e.statusOf(t, "bot", "rw"), "the effective cooldown of its side is the current one")
}

func TestDucklings_ActiveMarkExpiresAfterLease(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	e.setConfig(t, "bot",
		orgadmin.InstanceSide{Size: "standard", Cooldown: orgadmin.Some(3600 * time.Second)},
		orgadmin.InstanceSide{Size: "standard", FlockSize: 4})
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rs.0"))

	e.clk.Advance(10*time.Minute - time.Millisecond)
	assert.Equal(t, "active", e.statusOf(t, "bot", "rw"))
	assert.Equal(t, "active", e.statusOf(t, "bot", "rs.0"))
	e.clk.Advance(time.Millisecond)
	// Idle since the mark at t0: rw cools down until t0+1h, rs.0 (60s) is
	// long done.
	assert.Equal(t, "cooldown", e.statusOf(t, "bot", "rw"))
	assert.Equal(t, "", e.statusOf(t, "bot", "rs.0"))
	e.clk.Advance(50*time.Minute - time.Millisecond)
	assert.Equal(t, "cooldown", e.statusOf(t, "bot", "rw"))
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, "", e.statusOf(t, "bot", "rw"))
	assert.Equal(t, []orgadmin.ActiveAccount{}, e.active(t))
}

func TestDucklings_RenewalExtendsLease(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	e.setConfig(t, "bot",
		orgadmin.InstanceSide{Size: "mega"},
		orgadmin.InstanceSide{Size: "standard", FlockSize: 4})
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))
	e.clk.Advance(9 * time.Minute)
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))
	e.clk.Advance(10*time.Minute - time.Millisecond)
	assert.Equal(t, "active", e.statusOf(t, "bot", "rw"))
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, "", e.statusOf(t, "bot", "rw"), "idle since the renewal 10 min ago; mega cools down in 5 min")
}

func TestDucklings_CustomLease(t *testing.T) {
	e := newEnv(t, orgadmin.Config{DucklingLease: time.Minute})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	e.setConfig(t, "bot",
		orgadmin.InstanceSide{Size: "standard", Cooldown: orgadmin.Some(120 * time.Second)},
		orgadmin.InstanceSide{Size: "standard", FlockSize: 4})
	require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", "rw"))
	e.clk.Advance(time.Minute - time.Millisecond)
	assert.Equal(t, "active", e.statusOf(t, "bot", "rw"))
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, "cooldown", e.statusOf(t, "bot", "rw"))
	e.clk.Advance(time.Minute - time.Millisecond)
	assert.Equal(t, "cooldown", e.statusOf(t, "bot", "rw"))
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, "", e.statusOf(t, "bot", "rw"))
}

func TestDucklings_ReplicaBeyondFlockSizeNotRunning(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for _, id := range []string{"rs.3", "rs.4", "rs.63"} {
		require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", id))
	}
	assert.Equal(t, []orgadmin.ActiveAccount{{Username: "bot", Ducklings: []orgadmin.Duckling{rs(3, "active")}}}, e.active(t), "flock_size 4: rs.0 to rs.3")

	e.setConfig(t, "bot", orgadmin.InstanceSide{Size: "standard"}, orgadmin.InstanceSide{Size: "standard", FlockSize: 3})
	assert.Equal(t, []orgadmin.ActiveAccount{}, e.active(t), "flock_size 3: nothing running")
	e.setConfig(t, "bot", orgadmin.InstanceSide{Size: "standard"}, orgadmin.InstanceSide{Size: "standard", FlockSize: 0})
	assert.Equal(t, []orgadmin.ActiveAccount{}, e.active(t))
}

func TestDucklings_MalformedID(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for _, id := range []string{"rs.64", "rs.01", "rs.", "x", "", "RW", "rs.-1", "rs.1a", "rs.100", " rw", "rs 1", "rs.1 "} {
		err := e.svc.MarkDucklingActive(ctx, testOrg, "bot", id)
		assert.Equalf(t, [][]any{{"id"}}, issuePaths(t, err), "active %q", id)
		err = e.svc.MarkDucklingIdle(ctx, testOrg, "bot", id)
		assert.Equalf(t, [][]any{{"id"}}, issuePaths(t, err), "idle %q", id)
	}
	for _, id := range []string{"rw", "rs.0", "rs.9", "rs.10", "rs.63"} {
		assert.NoErrorf(t, e.svc.MarkDucklingActive(ctx, testOrg, "bot", id), "%q", id)
	}
	err := e.svc.MarkDucklingActive(ctx, testOrg, "nobody", "rw")
	requireCode(t, err, orgadmin.ErrNotFound)
	err = e.svc.MarkDucklingActive(ctx, "no-such-org", "bot", "rw")
	requireCode(t, err, orgadmin.ErrNotFound)
}

func TestDucklings_SignedReplicaNumberRefused(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	e.serviceAccount(t, "bot")
	for _, id := range []string{"rs.+1", "rs.+0", "rs.-0"} {
		err := e.svc.MarkDucklingActive(ctx, testOrg, "bot", id)
		assert.Equalf(t, [][]any{{"id"}}, issuePaths(t, err), "%q", id)
	}
	assert.Equal(t, []orgadmin.ActiveAccount{}, e.active(t))
}

func TestActiveAccounts_Ordering(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	for _, n := range []string{"carol", "Bob", "alice", "dave"} {
		e.serviceAccount(t, n)
		e.setConfig(t, n, orgadmin.InstanceSide{Size: "standard"}, orgadmin.InstanceSide{Size: "standard", FlockSize: 12})
	}
	mark := func(user, id string, active bool) {
		t.Helper()
		if active {
			require.NoError(t, e.svc.MarkDucklingActive(ctx, testOrg, user, id))
		} else {
			require.NoError(t, e.svc.MarkDucklingIdle(ctx, testOrg, user, id))
		}
	}
	mark("carol", "rs.10", true)
	mark("carol", "rs.2", false)
	mark("carol", "rw", true)
	mark("carol", "rs.0", true)
	mark("carol", "rs.11", true)
	mark("Bob", "rs.1", true)
	mark("alice", "rw", false)
	mark("dave", "rw", true)
	mark("dave", "rw", false) // the latest report wins

	assert.Equal(t, []orgadmin.ActiveAccount{
		{Username: "alice", Ducklings: []orgadmin.Duckling{rw("cooldown")}},
		{Username: "Bob", Ducklings: []orgadmin.Duckling{rs(1, "active")}},
		{Username: "carol", Ducklings: []orgadmin.Duckling{rw("active"), rs(0, "active"), rs(2, "cooldown"), rs(10, "active"), rs(11, "active")}},
		{Username: "dave", Ducklings: []orgadmin.Duckling{rw("cooldown")}},
	}, e.active(t))

	e.clk.Advance(60 * time.Second)
	mark("alice", "rs.3", true)
	assert.Equal(t, []orgadmin.ActiveAccount{
		{Username: "alice", Ducklings: []orgadmin.Duckling{rs(3, "active")}},
		{Username: "Bob", Ducklings: []orgadmin.Duckling{rs(1, "active")}},
		{Username: "carol", Ducklings: []orgadmin.Duckling{rw("active"), rs(0, "active"), rs(10, "active"), rs(11, "active")}},
	}, e.active(t))
}
