package servicetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage"
)

// RunShared checks what a store shared by several processes must
// guarantee: two Services, each on a Store of its own over one database,
// see each other's revocations and deletions at once; restarts (Bootstrap
// again) and loading a seed again from either process change nothing and
// bring back nothing revoked, expired or deleted; creations through both
// keep one limit of users; changes through both are each in the one audit
// trail both read, once. newStores makes each
// pair: two Stores of one fresh database, as two processes would hold
// them (for the memory store, one Store twice). Every adapter runs it from
// its tests.
func RunShared(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	t.Run("Revocations", func(t *testing.T) { testRevocations(t, services(newStores(t))) })
	t.Run("TokenRacingUserDeletion", func(t *testing.T) { testTokenRacingUserDeletion(t, services(newStores(t))) })
	t.Run("Restarts", func(t *testing.T) { testRestarts(t, newStores) })
	t.Run("Reseeding", func(t *testing.T) { testReseeding(t, newStores) })
	t.Run("SeedingAtOnce", func(t *testing.T) { testSeedingAtOnce(t, newStores) })
	t.Run("UserLimit", func(t *testing.T) { testSharedUserLimit(t, newStores) })
	t.Run("TokenLimit", func(t *testing.T) { testSharedTokenLimit(t, newStores) })
	t.Run("AuditTrail", func(t *testing.T) { testSharedAuditTrail(t, skewed(newStores(t))) })
}

func services(a, b storage.Store) [2]*orgadmin.Service {
	return servicesWith(orgadmin.Config{}, a, b)
}

// skewed is two Services on a and b whose clocks disagree: the second's
// runs 30 seconds behind the first's (less than AuditSettleAfter, so
// that neither settles the other's events in flight).
func skewed(a, b storage.Store) [2]*orgadmin.Service {
	behind := func() time.Time { return time.Now().Add(-30 * time.Second) }
	return [2]*orgadmin.Service{orgadmin.New(a, orgadmin.Config{}), orgadmin.New(b, orgadmin.Config{Now: behind})}
}

func servicesWith(cfg orgadmin.Config, a, b storage.Store) [2]*orgadmin.Service {
	return [2]*orgadmin.Service{orgadmin.New(a, cfg), orgadmin.New(b, cfg)}
}

// A token revoked, or a user deleted, through one Service is refused by
// the other on its next call, though both had just authenticated it; and a
// second process bootstrapping the same org makes no second Admin, and
// replaces the bootstrap token for both.
func testRevocations(t *testing.T, services [2]*orgadmin.Service) {
	a, b := services[0], services[1]
	ctx := t.Context()

	first, err := a.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	adminToken, err := b.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err, "a second process bootstrapping the same org")
	admin, err := a.Authenticate(ctx, adminToken)
	require.NoError(t, err)
	for _, svc := range services {
		_, err = svc.Authenticate(ctx, first)
		require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "a replaced bootstrap token authenticates")
	}

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

// Restarts (Bootstrap again, from either process) never accumulate
// credentials nor fail, an Admin at the token limit included.
func testRestarts(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	const limit = 4
	a, b := newStores(t)
	services := servicesWith(orgadmin.Config{MaxTokensPerUser: limit}, a, b)
	ctx := t.Context()
	in := orgadmin.BootstrapInput{Org: "acme", Username: "admin"}
	var last string
	for i := range 10 {
		tok, err := services[i%2].Bootstrap(ctx, in)
		require.NoError(t, err, "start %d", i)
		if last != "" {
			_, err := services[(i+1)%2].Authenticate(ctx, last)
			require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "start %d: the bootstrap token before it authenticates", i)
		}
		last = tok
	}
	admin, err := services[0].Authenticate(ctx, last)
	require.NoError(t, err)
	toks, err := services[1].ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	require.Len(t, toks, 1, "tokens after 10 starts")

	// Full, with a bootstrap token among the tokens: a start replaces it.
	var own []string
	for range limit - 1 {
		tok, err := services[0].CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: "own"})
		require.NoError(t, err)
		own = append(own, tok.Value)
	}
	last, err = services[1].Bootstrap(ctx, in)
	require.NoError(t, err)
	require.NotEmpty(t, last)
	admin, err = services[0].Authenticate(ctx, last)
	require.NoError(t, err)

	// Full without one: a start makes none, and changes nothing.
	toks, err = services[0].ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	require.Len(t, toks, limit)
	for _, tok := range toks {
		if tok.Name == orgadmin.BootstrapTokenName {
			require.NoError(t, services[0].DeleteToken(ctx, admin, "admin", tok.ID))
		}
	}
	admin, err = services[1].Authenticate(ctx, own[0])
	require.NoError(t, err)
	_, err = services[1].CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: "own"})
	require.NoError(t, err)
	none, err := services[0].Bootstrap(ctx, in)
	require.NoError(t, err, "a start with the Admin full")
	assert.Empty(t, none)
	toks, err = services[1].ListTokens(ctx, admin, "admin")
	require.NoError(t, err)
	assert.Len(t, toks, limit)
	for _, tok := range toks {
		assert.Equal(t, "own", tok.Name)
	}
}

// reseedFixture has an Admin with a lasting and a short-lived token, and a
// service account with a token.
const reseedFixture = `{"organizations": [{"id": "acme", "users": [
  {"username": "alice", "role": "Admin", "tokens": [
    {"name": "ci", "value": "seeded-token-ci-0001"},
    {"name": "short", "value": "seeded-token-short-0001", "ttl": 300}%s]},
  {"username": "robot", "is_service_account": true, "tokens": [{"name": "r", "value": "seeded-token-robot-0001"}]}]}]}`

// Loading a seed again, from either process, changes nothing and brings
// back nothing: a revoked token, an expired one that was cleaned up, or a
// deleted user stays gone; an entry new to the seed is loaded.
func testReseeding(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	clock := fakeclock.New(time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC))
	a, b := newStores(t)
	services := servicesWith(orgadmin.Config{Now: clock.Now}, a, b)
	ctx := t.Context()
	seed := func(svc *orgadmin.Service, extra string) {
		t.Helper()
		sd, err := orgadmin.DecodeSeed(strings.NewReader(fmt.Sprintf(reseedFixture, extra)))
		require.NoError(t, err)
		require.NoError(t, svc.ApplySeed(ctx, sd))
	}
	authenticates := func(value string) bool {
		t.Helper()
		var ok [2]bool
		for i, svc := range services {
			_, err := svc.Authenticate(ctx, value)
			if err != nil {
				require.ErrorIs(t, err, orgadmin.ErrUnauthorized)
			}
			ok[i] = err == nil
		}
		require.Equal(t, ok[0], ok[1], "both processes agree on %s", value)
		return ok[0]
	}

	seed(services[0], "")
	require.True(t, authenticates("seeded-token-ci-0001"))
	// alice revokes the token: a Caller made from it would stop working
	// with it, so she acts through ActAs.
	alice, err := services[1].ActAs(ctx, "acme", "alice")
	require.NoError(t, err)
	toks, err := services[1].ListTokens(ctx, alice, "alice")
	require.NoError(t, err)
	for _, tok := range toks {
		if tok.Name == "ci" {
			require.NoError(t, services[1].DeleteToken(ctx, alice, "alice", tok.ID))
		}
	}
	_, err = services[1].DeleteUser(ctx, alice, "robot")
	require.NoError(t, err)
	clock.Advance(301 * time.Second)
	// A token minted now lets the store clean up the expired one.
	fresh, err := services[0].CreateToken(ctx, alice, "alice", orgadmin.CreateTokenInput{Name: "fresh"})
	require.NoError(t, err)
	alice, err = services[0].Authenticate(ctx, fresh.Value)
	require.NoError(t, err)

	for i := range 4 {
		seed(services[i%2], "")
		assert.False(t, authenticates("seeded-token-ci-0001"), "a revoked seeded token, after loading %d", i)
		assert.False(t, authenticates("seeded-token-short-0001"), "an expired seeded token, after loading %d", i)
		assert.False(t, authenticates("seeded-token-robot-0001"), "a token of a deleted seeded user, after loading %d", i)
		_, err := services[i%2].GetUser(ctx, "acme", "robot")
		require.ErrorIs(t, err, orgadmin.ErrNotFound, "a deleted seeded user, after loading %d", i)
		toks, err := services[(i+1)%2].ListTokens(ctx, alice, "alice")
		require.NoError(t, err)
		require.Len(t, toks, 1)
		assert.Equal(t, "fresh", toks[0].Name)
	}

	seed(services[1], `, {"name": "new", "value": "seeded-token-new-0001"}`)
	assert.True(t, authenticates("seeded-token-new-0001"), "a token new to the seed")
	assert.False(t, authenticates("seeded-token-ci-0001"))
}

// Two processes started together on one fresh database with one seed
// both load it: each user and token is loaded once, and works through
// either.
func testSeedingAtOnce(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	sd, err := orgadmin.DecodeSeed(strings.NewReader(fmt.Sprintf(reseedFixture, "")))
	require.NoError(t, err)
	for round := range serviceRounds {
		services := services(newStores(t))
		ctx := t.Context()
		for i, err := range race(2, func(i int) error { return services[i].ApplySeed(ctx, sd) }) {
			require.NoError(t, err, "round %d: loading %d", round, i)
		}
		for _, v := range []string{"seeded-token-ci-0001", "seeded-token-short-0001", "seeded-token-robot-0001"} {
			for _, svc := range services {
				_, err := svc.Authenticate(ctx, v)
				require.NoError(t, err, "round %d: %s", round, v)
			}
		}
		alice, err := services[0].ActAs(ctx, "acme", "alice")
		require.NoError(t, err)
		page, err := services[1].ListUsers(ctx, alice, orgadmin.ListUsersOptions{})
		require.NoError(t, err)
		assert.Equal(t, 2, page.TotalCount, "round %d", round)
		for _, u := range []string{"alice", "robot"} {
			toks, err := services[1].ListTokens(ctx, alice, u)
			require.NoError(t, err)
			assert.Len(t, toks, map[string]int{"alice": 2, "robot": 1}[u], "round %d: tokens of %s", round, u)
		}
	}
}

// Creations racing through two Services, each on a Store of its own over
// one database and with one Config.MaxUsersPerOrg, never leave the org
// holding more users than that: the others are the limit's BAD_REQUEST.
func testSharedUserLimit(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	const limit = 6
	a, b := newStores(t)
	services := servicesWith(orgadmin.Config{MaxUsersPerOrg: limit}, a, b)
	ctx := t.Context()
	token, err := services[0].Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := services[1].Authenticate(ctx, token)
	require.NoError(t, err)

	errs := race(2*serviceRacers, func(i int) error {
		in := orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("racer%02d", i)}
		_, err := services[i%2].CreateServiceAccount(ctx, admin, in)
		return err
	})
	created := 0
	for i, err := range errs {
		if err == nil {
			created++
			continue
		}
		var e *orgadmin.Error
		require.ErrorAs(t, err, &e, "call %d", i)
		require.Equal(t, []orgadmin.Issue{{Message: "The organization holds the maximum number of users", Path: orgadmin.NewPath("username"), Code: orgadmin.IssueTooBig}},
			e.Issues, "call %d", i)
	}
	assert.Equal(t, limit-1, created, "service accounts created beside the Admin")
	page, err := services[0].ListUsers(ctx, admin, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	assert.Equal(t, limit, page.TotalCount)
}

// Token creations racing through two Services, each on a Store of its own
// over one database and with one Config.MaxTokensPerUser, fill the user's
// quota exactly: when the tokens that held it have expired, and again when
// some are revoked meanwhile. Never one over, never a refusal under it.
func testSharedTokenLimit(t *testing.T, newStores func(t testing.TB) (storage.Store, storage.Store)) {
	const limit = 6
	a, b := newStores(t)
	clock := fakeclock.New(time.Now())
	services := servicesWith(orgadmin.Config{MaxTokensPerUser: limit, Now: clock.Now}, a, b)
	ctx := t.Context()
	token, err := services[0].Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := services[1].Authenticate(ctx, token)
	require.NoError(t, err)
	_, err = services[0].CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)

	for i := range limit {
		_, err := services[i%2].CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "short", TTL: orgadmin.Some(orgadmin.MinTokenTTL)})
		require.NoError(t, err)
	}
	clock.Advance(orgadmin.MinTokenTTL + time.Second)

	live := func(when string) []orgadmin.Token {
		t.Helper()
		listed, err := services[1].ListTokens(ctx, admin, "robot")
		require.NoError(t, err, when)
		require.LessOrEqual(t, len(listed), limit, "%s: live tokens", when)
		return listed
	}
	create := func(when string) (created int) {
		t.Helper()
		errs := race(2*serviceRacers, func(i int) error {
			_, err := services[i%2].CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: fmt.Sprint("racer ", i)})
			return err
		})
		for i, err := range errs {
			if err == nil {
				created++
			} else {
				require.ErrorIs(t, err, orgadmin.ErrBadRequest, "%s: call %d", when, i)
			}
		}
		return created
	}
	require.Equal(t, limit, create("over expired tokens"), "tokens created over expired ones")
	require.Len(t, live("over expired tokens"), limit)

	tokens := live("before the revocations")
	errs := race(2*serviceRacers+limit/2, func(i int) error {
		if i < limit/2 {
			return services[1].DeleteToken(ctx, admin, "robot", tokens[i].ID)
		}
		_, err := services[i%2].CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: fmt.Sprint("racer ", i)})
		if err != nil && !errors.Is(err, orgadmin.ErrBadRequest) {
			return err
		}
		return nil
	})
	for i, err := range errs {
		require.NoError(t, err, "racing revocations: call %d", i)
	}
	n := len(live("after the revocations"))
	for ; n < limit; n++ {
		_, err := services[n%2].CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "after"})
		require.NoError(t, err, "with %d live tokens of %d", n, limit)
	}
	_, err = services[0].CreateToken(ctx, admin, "robot", orgadmin.CreateTokenInput{Name: "one over"})
	require.ErrorIs(t, err, orgadmin.ErrBadRequest)
	require.Len(t, live("at the end"), limit)
}
