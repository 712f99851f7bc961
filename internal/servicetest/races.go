package servicetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

// KnownDefect names a race of RunRaces whose check a store is known to
// fail, and why; RunRaces reports the race skipped, with that reason.
type KnownDefect struct {
	Race, Why string
}

// RunRaces runs concurrent operations through a Service on stores that
// newStore makes, a fresh one for each race, as the API would: what they
// check is what a client sees, whatever the store does inside. A race
// that known names is skipped, with its reason.
func RunRaces(t *testing.T, newStore func(testing.TB) storage.Store, known ...KnownDefect) {
	for _, r := range []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"CreateServiceAccountSameUsername", testServiceCreateSameUsername},
		{"SetInstanceConfigSameUser", testServiceSetInstanceConfigSameUser},
		{"SetInstanceConfigRacingGrantPrivilege", testServiceSetInstanceConfigRacingGrantPrivilege},
		{"GrantPrivilegesSameUser", testServiceGrantPrivilegesSameUser},
		{"SetInstanceConfigRacingRecreateUser", testServiceSetInstanceConfigRacingRecreate},
		{"DeleteUserRacingRecreateUser", testServiceDeleteUserRacingRecreate},
		{"CreateTokenRacingDeleteUser", testServiceCreateTokenRacingDeleteUser},
		{"PagingRacingCreateDeleteUser", testServicePagingRacingChurn},
		{"CreateEmbedSessionRacingDeleteUser", testServiceCreateEmbedSessionRacingDeleteUser},
	} {
		t.Run(r.name, func(t *testing.T) {
			for _, k := range known {
				if k.Race == r.name {
					t.Skip("known defect: " + k.Why)
				}
			}
			r.fn(t, newStore(t))
		})
	}
}

// race runs f(0) … f(n-1) in n goroutines released together, and returns
// their errors by index.
func race(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// Fewer racers and rounds than the store-level races: every call here is
// several store calls, and the suite runs on slow servers too.
const (
	serviceRacers = 16
	serviceRounds = 3
)

// serviceOn returns a Service on s with the org "acme" bootstrapped, and
// its Admin.
func serviceOn(t testing.TB, s storage.Store) (*orgadmin.Service, orgadmin.Caller) {
	t.Helper()
	svc := orgadmin.New(s, orgadmin.Config{})
	token, err := svc.Bootstrap(t.Context(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := svc.Authenticate(t.Context(), token)
	require.NoError(t, err)
	return svc, admin
}

// Of concurrent creations of one username, in several spellings, exactly
// one succeeds; the others are a BAD_REQUEST saying the username is
// taken, and the winner's spelling is the one stored.
func testServiceCreateSameUsername(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	spellings := []string{"Robot", "robot", "ROBOT", "rObOt"}
	errs := race(serviceRacers, func(i int) error {
		_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{
			Username: spellings[i%len(spellings)], Description: fmt.Sprint(i),
		})
		return err
	})
	winner := requireOneWinner(t, errs, orgadmin.ErrBadRequest)
	for i, err := range errs {
		if i != winner {
			assert.Equal(t, []orgadmin.Issue{{Message: "Username is already taken", Path: orgadmin.NewPath("username"), Code: orgadmin.IssueAlreadyExists}},
				issuesOf(t, err), "call %d", i)
		}
	}
	page, err := svc.ListUsers(t.Context(), admin, orgadmin.ListUsersOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, page.TotalCount)
	var names []string
	for _, u := range page.Users {
		names = append(names, u.Username+"/"+u.Description)
	}
	assert.Equal(t, []string{"admin/", spellings[winner%len(spellings)] + "/" + fmt.Sprint(winner)}, names)
}

// raceConfig is the i-th of a family of instance configurations in which
// every field but the sizes carries i, so that a mix of two is caught.
func raceConfig(i int) orgadmin.InstanceConfig {
	sizes := []orgadmin.Size{orgadmin.SizeStandard, orgadmin.SizeJumbo, orgadmin.SizeMega, orgadmin.SizeGiga}
	return orgadmin.InstanceConfig{
		ReadWrite:   orgadmin.InstanceSide{Size: sizes[i%len(sizes)], Cooldown: orgadmin.Some(time.Duration(100+i) * time.Second)},
		ReadScaling: orgadmin.InstanceSide{Size: sizes[(i+1)%len(sizes)], FlockSize: i, Cooldown: orgadmin.Some(time.Duration(200+i) * time.Second)},
	}
}

// describeInstances renders c for comparisons and messages.
func describeInstances(c orgadmin.InstanceConfig) string {
	side := func(s orgadmin.InstanceSide) string {
		out := string(s.Size) + fmt.Sprintf(" flock %d", s.FlockSize)
		if cd, ok := s.Cooldown.Get(); ok {
			out += fmt.Sprintf(" cooldown %v", cd)
		}
		return out
	}
	return "rw: " + side(c.ReadWrite) + "; rs: " + side(c.ReadScaling)
}

// Concurrent PUTs of one user's configuration, each with another body: each
// answers its own body, and the configuration stored afterwards is exactly
// one of them, read alike through every path.
func testServiceSetInstanceConfigSameUser(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	tok, err := svc.CreateToken(t.Context(), admin, "robot", orgadmin.CreateTokenInput{Name: "ci"})
	require.NoError(t, err)

	sent := make(map[string]bool)
	for round := range serviceRounds {
		got := make([]orgadmin.InstanceConfig, serviceRacers)
		errs := race(serviceRacers, func(i int) error {
			var err error
			got[i], err = svc.SetInstanceConfig(t.Context(), admin, "robot", orgadmin.SetInstanceConfigInput{Config: raceConfig(round*serviceRacers + i)})
			return err
		})
		for i, err := range errs {
			require.NoError(t, err, "round %d: PUT %d", round, i)
			want := describeInstances(raceConfig(round*serviceRacers + i))
			require.Equal(t, want, describeInstances(got[i]), "round %d: the answer of PUT %d", round, i)
			sent[want] = true
		}

		stored, err := svc.GetInstanceConfig(t.Context(), admin, "robot")
		require.NoError(t, err)
		require.True(t, sent[describeInstances(stored)], "round %d: stored %s, which no PUT sent", round, describeInstances(stored))
		robot, err := svc.Authenticate(t.Context(), tok.Value)
		require.NoError(t, err)
		viaToken, err := svc.GetInstanceConfig(t.Context(), robot, "robot")
		require.NoError(t, err)
		require.Equal(t, describeInstances(stored), describeInstances(viaToken), "round %d: read as the user itself", round)
	}
}

// PUTs of a user's configuration, one after the other, racing grants of
// privileges to the same user: a grant leaves the configuration alone, so
// a read of it between two PUTs finds what the earlier one wrote, never a
// configuration that a grant read before that PUT and wrote back after it.
func testServiceSetInstanceConfigRacingGrantPrivilege(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	const grantsEach = (orgadmin.MaxPrivileges - 1) / (serviceRacers - 1)
	for round := range serviceRounds {
		name := fmt.Sprint("robot", round) // a fresh user: privileges are bounded
		_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: name})
		require.NoError(t, err)
		var granters atomic.Int32
		granters.Store(serviceRacers - 1)
		errs := race(serviceRacers, func(i int) error {
			if i > 0 {
				defer granters.Add(-1)
				for n := range grantsEach {
					if err := svc.GrantPrivilege(t.Context(), "acme", name, fmt.Sprint("privilege.", i, ".", n)); err != nil {
						return err
					}
				}
				return nil
			}
			var last orgadmin.InstanceConfig
			for n := 0; n == 0 || granters.Load() > 0; n++ {
				if n > 0 {
					got, err := svc.GetInstanceConfig(t.Context(), admin, name)
					if err != nil {
						return err
					}
					if describeInstances(got) != describeInstances(last) {
						return fmt.Errorf("after PUT %d of %s, read %s", n-1, describeInstances(last), describeInstances(got))
					}
				}
				last = raceConfig(n % 64)
				if _, err := svc.SetInstanceConfig(t.Context(), admin, name, orgadmin.SetInstanceConfigInput{Config: last}); err != nil {
					return err
				}
			}
			got, err := svc.GetInstanceConfig(t.Context(), admin, name)
			if err == nil && describeInstances(got) != describeInstances(last) {
				err = fmt.Errorf("after the last PUT, of %s, read %s", describeInstances(last), describeInstances(got))
			}
			return err
		})
		for i, err := range errs {
			require.NoError(t, err, "round %d: racer %d", round, i)
		}
	}
}

// Grants of different privileges to one user at the same instant all
// land: each answers nil, the user holds every privilege granted, and
// the audit trail holds one user.grant_privilege event for each, whose
// befores and afters chain up from none to what the user holds, each
// adding one privilege.
func testServiceGrantPrivilegesSameUser(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	for round := range serviceRounds {
		name := fmt.Sprint("robot", round)
		_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: name})
		require.NoError(t, err)
		granted := make([]string, serviceRacers)
		errs := race(serviceRacers, func(i int) error {
			granted[i] = fmt.Sprint("privilege.", i)
			return svc.GrantPrivilege(t.Context(), "acme", name, granted[i])
		})
		for i, err := range errs {
			require.NoError(t, err, "round %d: grant %d", round, i)
		}

		robot, err := svc.GetUser(t.Context(), "acme", name)
		require.NoError(t, err)
		require.ElementsMatch(t, granted, robot.Privileges, "round %d: the privileges stored", round)
		page, err := svc.AuditEvents(t.Context(), admin, orgadmin.AuditQuery{
			Action: orgadmin.ActionUserGrant, TargetID: robot.ID, Limit: orgadmin.Some(2 * serviceRacers)})
		require.NoError(t, err)
		require.Len(t, page.Events, serviceRacers, "round %d: one event per grant", round)
		held := []string{}
		for i := len(page.Events) - 1; i >= 0; i-- { // oldest first
			e := page.Events[i]
			before, after := auditPrivileges(t, e.Before), auditPrivileges(t, e.After)
			require.Equal(t, held, before, "round %d: the before of event %s follows the after of the one before it", round, e.ID)
			require.Len(t, after, len(before)+1, "round %d: event %s adds one privilege", round, e.ID)
			require.Equal(t, before, after[:len(before)], "round %d: event %s keeps the privileges before it", round, e.ID)
			held = after
		}
		require.Equal(t, robot.Privileges, held, "round %d: the last event's after is what the user holds", round)
	}
}

// auditPrivileges reads the privileges of a user.grant_privilege
// event's before or after.
func auditPrivileges(tb testing.TB, doc json.RawMessage) []string {
	tb.Helper()
	var p struct {
		Privileges []string `json:"privileges"`
	}
	require.NoError(tb, json.Unmarshal(doc, &p))
	require.NotNil(tb, p.Privileges, "privileges in %s", doc)
	return p.Privileges
}

// Walks of the users by page token, and of the audit trail, while other
// users are created and deleted between those listed: a walk lists every
// user that existed throughout it exactly once, in order, none twice, with
// a total_count between the fewest and the most users there were; the
// audit walk lists every event recorded before it began, none twice.
func testServicePagingRacingChurn(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	const kept, churners, churns = 24, 4, 8
	for i := range kept {
		_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("u%02d_kept", i)})
		require.NoError(t, err)
	}
	auditWalk := func() ([]string, error) {
		var ids []string
		for ev, err := range svc.AllAuditEvents(t.Context(), admin, orgadmin.AuditQuery{Limit: orgadmin.Some(5)}) {
			if err != nil {
				return nil, err
			}
			ids = append(ids, ev.ID)
		}
		return ids, nil
	}
	before, err := auditWalk()
	require.NoError(t, err)

	for round := range serviceRounds {
		var done atomic.Int32
		errs := race(churners+2, func(i int) error {
			switch {
			case i < churners:
				defer done.Add(1)
				for n := range churns {
					// Names sort among the kept ones: u05_churn… between u05_kept's neighbours.
					name := fmt.Sprintf("u%02d_churn%d_%d", (i*churns+n)%kept, round, i)
					if _, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: name}); err != nil {
						return err
					}
					if n%2 == 1 {
						if _, err := svc.DeleteUser(t.Context(), admin, name); err != nil {
							return err
						}
					}
				}
				return nil
			case i == churners:
				for walked := false; !walked || done.Load() < churners; walked = true {
					seen := make(map[string]bool)
					var last string
					opts := orgadmin.ListUsersOptions{Limit: orgadmin.Some(3)}
					for {
						page, err := svc.ListUsers(t.Context(), admin, opts)
						if err != nil {
							return err
						}
						if page.TotalCount < kept+1 || page.TotalCount > kept+1+churners*churns*(serviceRounds) {
							return fmt.Errorf("total_count %d", page.TotalCount)
						}
						for _, u := range page.Users {
							key := strings.ToLower(u.Username)
							if seen[key] || key <= last {
								return fmt.Errorf("listed %s after %s (seen before: %v)", key, last, seen[key])
							}
							seen[key], last = true, key
						}
						if page.NextPageToken == "" {
							break
						}
						opts.PageToken = page.NextPageToken
					}
					for k := range kept {
						if name := fmt.Sprintf("u%02d_kept", k); !seen[name] {
							return fmt.Errorf("%s skipped", name)
						}
					}
				}
				return nil
			default:
				for walked := false; !walked || done.Load() < churners; walked = true {
					ids, err := auditWalk()
					if err != nil {
						return err
					}
					seen := make(map[string]bool)
					for _, id := range ids {
						if seen[id] {
							return fmt.Errorf("audit event %s listed twice", id)
						}
						seen[id] = true
					}
					for _, id := range before {
						if !seen[id] {
							return fmt.Errorf("audit event %s skipped", id)
						}
					}
				}
				return nil
			}
		})
		for i, err := range errs {
			require.NoError(t, err, "round %d: racer %d", round, i)
		}
		before, err = auditWalk()
		require.NoError(t, err)
	}
}

// PUTs of a user's configuration racing the deletion of that user and
// the creation of a new one of the same name: a PUT that found the old
// user never changes the new one. The configuration of the new user is
// the default, or that of the newest instances.set event naming the new
// user's id: never a change to one user recorded as a change to another.
func testServiceSetInstanceConfigRacingRecreate(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	fresh, err := svc.GetInstanceConfig(t.Context(), admin, "robot")
	require.NoError(t, err)

	for round := range serviceRounds {
		var recreated atomic.Bool
		errs := race(serviceRacers, func(i int) error {
			if i == 0 {
				defer recreated.Store(true)
				if _, err := svc.DeleteUser(t.Context(), admin, "robot"); err != nil {
					return err
				}
				_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
				return err
			}
			for n := 0; !recreated.Load(); n++ {
				_, err := svc.SetInstanceConfig(t.Context(), admin, "robot", orgadmin.SetInstanceConfigInput{Config: raceConfig((i + n*serviceRacers) % 64)})
				if err != nil && !errors.Is(err, orgadmin.ErrNotFound) {
					return err
				}
			}
			return nil
		})
		for i, err := range errs {
			require.NoError(t, err, "round %d: racer %d", round, i)
		}

		robot, err := svc.GetUser(t.Context(), "acme", "robot")
		require.NoError(t, err)
		stored, err := svc.GetInstanceConfig(t.Context(), admin, "robot")
		require.NoError(t, err)
		page, err := svc.AuditEvents(t.Context(), admin, orgadmin.AuditQuery{Action: orgadmin.ActionInstancesSet, TargetID: robot.ID, Limit: orgadmin.Some(1)})
		require.NoError(t, err)
		want := describeInstances(fresh)
		if len(page.Events) > 0 {
			want = describeAuditConfig(t, page.Events[0].After)
		}
		require.Equal(t, want, describeInstances(stored), "round %d: the configuration of the user created again", round)
	}
}

// Deletions of a user racing its deletion and the creation of a new user
// of the same name: a deletion that read the old user never deletes the
// new one. In the audit trail no user is deleted twice, and every user
// created and gone has the one user.delete event naming its id; every
// user.delete event names a user that was created and is gone.
func testServiceDeleteUserRacingRecreate(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	const creations = 40
	for round := range serviceRounds {
		name := fmt.Sprint("robot", round)
		var created atomic.Bool
		errs := race(serviceRacers, func(i int) error {
			if i == 0 {
				defer created.Store(true)
				for n := 0; n < creations; {
					_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: name})
					switch {
					case err == nil:
						n++
					case orgadmin.ErrorCode(err) != orgadmin.CodeBadRequest: // "taken" (not deleted yet) is retried
						return err
					}
				}
				return nil
			}
			for !created.Load() {
				if _, err := svc.DeleteUser(t.Context(), admin, name); err != nil && !errors.Is(err, orgadmin.ErrNotFound) {
					return err
				}
			}
			return nil
		})
		for i, err := range errs {
			require.NoError(t, err, "round %d: racer %d", round, i)
		}

		ids := func(action string) map[string]int {
			page, err := svc.AuditEvents(t.Context(), admin, orgadmin.AuditQuery{Action: action, TargetUsername: name, Limit: orgadmin.Some(1000)})
			require.NoError(t, err)
			require.Empty(t, page.NextPageToken)
			n := make(map[string]int)
			for _, e := range page.Events {
				n[e.TargetID]++
			}
			return n
		}
		createdIDs, deletedIDs := ids(orgadmin.ActionUserCreate), ids(orgadmin.ActionUserDelete)
		require.Len(t, createdIDs, creations, "round %d: users created", round)
		live := ""
		if u, err := svc.GetUser(t.Context(), "acme", name); err == nil {
			live = u.ID
		} else {
			require.ErrorIs(t, err, orgadmin.ErrNotFound)
		}
		for id, n := range deletedIDs {
			require.Equal(t, 1, n, "round %d: user %s deleted %d times", round, id, n)
			require.Contains(t, createdIDs, id, "round %d: a user.delete event of user %s, never created", round, id)
			require.NotEqual(t, live, id, "round %d: a user.delete event of user %s, which lives", round, id)
		}
		for id := range createdIDs {
			if id != live {
				require.Contains(t, deletedIDs, id, "round %d: user %s is gone without a user.delete event naming it", round, id)
			}
		}
	}
}

// describeAuditConfig renders the configuration of an event's before or
// after as describeInstances renders one read back.
func describeAuditConfig(tb testing.TB, doc json.RawMessage) string {
	tb.Helper()
	type side struct {
		Size      orgadmin.Size `json:"instance_size"`
		FlockSize int           `json:"flock_size"`
		Cooldown  *int64        `json:"cooldown_seconds"`
	}
	var c struct {
		ReadWrite   side `json:"read_write"`
		ReadScaling side `json:"read_scaling"`
	}
	require.NoError(tb, json.Unmarshal(doc, &c))
	back := func(s side) orgadmin.InstanceSide {
		out := orgadmin.InstanceSide{Size: s.Size, FlockSize: s.FlockSize}
		if s.Cooldown != nil {
			out.Cooldown = orgadmin.Some(time.Duration(*s.Cooldown) * time.Second)
		}
		return out
	}
	return describeInstances(orgadmin.InstanceConfig{ReadWrite: back(c.ReadWrite), ReadScaling: back(c.ReadScaling)})
}

// raceCreations runs serviceRacers goroutines that each call create in a
// loop until it fails, and one that deletes the user named "doomed" once
// serviceRacers calls have succeeded, so that creations run before, during
// and after the delete. It returns the error that ended each loop and that
// of the delete. A creation that starts after the delete has returned and
// succeeds ends its loop with an error saying so.
func raceCreations(t testing.TB, svc *orgadmin.Service, admin orgadmin.Caller, create func(racer int) error) ([]error, error) {
	t.Helper()
	var (
		succeeded atomic.Int32
		ready     = make(chan struct{})
		deleted   = make(chan struct{})
	)
	errs := race(serviceRacers+1, func(i int) error {
		if i == serviceRacers {
			defer close(deleted)
			<-ready
			_, err := svc.DeleteUser(t.Context(), admin, "doomed")
			return err
		}
		for {
			var after bool
			select {
			case <-deleted:
				after = true
			default:
			}
			if err := create(i); err != nil {
				return err
			}
			if after {
				return errors.New("a creation that started after the delete returned succeeded")
			}
			// Enough creations before the delete; the rest wait for it.
			switch n := succeeded.Add(1); {
			case n == serviceRacers:
				close(ready)
			case n > 2*serviceRacers:
				<-deleted
			}
		}
	})
	return errs[:serviceRacers], errs[serviceRacers]
}

// Tokens created before, while and after their user is deleted: each
// creation succeeds or fails with NOT_FOUND; once the delete has returned,
// no token that succeeded authenticates, and none is listed for the user
// created again under the same name.
func testServiceCreateTokenRacingDeleteUser(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	for round := range serviceRounds {
		_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "doomed"})
		require.NoError(t, err, "round %d", round)
		var (
			mu     sync.Mutex
			tokens []orgadmin.Token
		)
		errs, err := raceCreations(t, svc, admin, func(i int) error {
			tok, err := svc.CreateToken(t.Context(), admin, "doomed", orgadmin.CreateTokenInput{Name: fmt.Sprint("racer ", i)})
			if err == nil {
				mu.Lock()
				tokens = append(tokens, tok)
				mu.Unlock()
			}
			return err
		})
		require.NoError(t, err, "round %d: DeleteUser", round)
		for i, err := range errs {
			require.ErrorIs(t, err, orgadmin.ErrNotFound, "round %d: racer %d", round, i)
		}
		requireTokensDead(t, svc, tokens, fmt.Sprintf("round %d, after the delete", round))

		_, err = svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "doomed"})
		require.NoError(t, err, "round %d: the name is free again", round)
		listed, err := svc.ListTokens(t.Context(), admin, "doomed")
		require.NoError(t, err)
		require.Empty(t, listed, "round %d: tokens of the user created again", round)
		requireTokensDead(t, svc, tokens, fmt.Sprintf("round %d, after the name is created again", round))
		_, err = svc.DeleteUser(t.Context(), admin, "doomed")
		require.NoError(t, err)
	}
}

// requireTokensDead requires that none of tokens authenticates; when says
// at which point of the test.
func requireTokensDead(t testing.TB, svc *orgadmin.Service, tokens []orgadmin.Token, when string) {
	t.Helper()
	for _, tok := range tokens {
		c, err := svc.Authenticate(t.Context(), tok.Value)
		require.ErrorIs(t, err, orgadmin.ErrUnauthorized, "%s: token %s (%s) authenticates as %s/%s",
			when, tok.ID, tok.Name, c.Username, c.UserID)
	}
}

// Embed sessions minted before, while and after their service account is
// deleted: each creation succeeds or fails with NOT_FOUND; once the delete
// has returned, no session that succeeded resolves, even when the name is
// created again.
func testServiceCreateEmbedSessionRacingDeleteUser(t *testing.T, s storage.Store) {
	svc, admin := serviceOn(t, s)
	dive := uuid.NewString()
	require.NoError(t, svc.RegisterDive(t.Context(), "acme", orgadmin.Dive{ID: dive, Title: "Sales", Version: 2}))
	for round := range serviceRounds {
		_, err := svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "doomed"})
		require.NoError(t, err, "round %d", round)
		var (
			mu       sync.Mutex
			sessions []string
		)
		errs, err := raceCreations(t, svc, admin, func(i int) error {
			v, err := svc.CreateEmbedSession(t.Context(), admin, dive, orgadmin.CreateEmbedSessionInput{Username: "doomed", SessionName: orgadmin.Some(fmt.Sprint(i))})
			if err == nil {
				mu.Lock()
				sessions = append(sessions, v)
				mu.Unlock()
			}
			return err
		})
		require.NoError(t, err, "round %d: DeleteUser", round)
		for i, err := range errs {
			require.ErrorIs(t, err, orgadmin.ErrNotFound, "round %d: racer %d", round, i)
		}
		requireSessionsDead(t, svc, sessions, round)
		_, err = svc.CreateServiceAccount(t.Context(), admin, orgadmin.CreateServiceAccountInput{Username: "doomed"})
		require.NoError(t, err, "round %d: the name is free again", round)
		requireSessionsDead(t, svc, sessions, round)
		_, err = svc.DeleteUser(t.Context(), admin, "doomed")
		require.NoError(t, err)
	}
}

// requireSessionsDead requires that none of the session values resolves.
func requireSessionsDead(t testing.TB, svc *orgadmin.Service, sessions []string, round int) {
	t.Helper()
	for _, v := range sessions {
		es, err := svc.ResolveEmbedSession(t.Context(), v)
		if !errors.Is(err, orgadmin.ErrNotFound) {
			require.Failf(t, "a session outlived its user", "round %d: session of %q resolves (%v)", round, es.Username, err)
		}
	}
}

// requireOneWinner requires that exactly one of errs is nil and every other
// is want; it returns the winner's index.
func requireOneWinner(t testing.TB, errs []error, want error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			require.Equal(t, -1, winner, "calls %d and %d both succeeded", winner, i)
			winner = i
		case !errors.Is(err, want):
			require.ErrorIs(t, err, want, "call %d", i)
		}
	}
	require.NotEqual(t, -1, winner, "no call succeeded")
	return winner
}

// issuesOf returns the issues of err, an *orgadmin.Error, or fails.
func issuesOf(tb testing.TB, err error) []orgadmin.Issue {
	tb.Helper()
	var e *orgadmin.Error
	require.ErrorAs(tb, err, &e)
	return e.Issues
}
