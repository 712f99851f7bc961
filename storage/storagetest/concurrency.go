package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var concurrencyTests = []subtest{
	{"CreateUserSameUsername", testConcurrentCreateUserSameUsername},
	{"CreateUserLimit", testConcurrentCreateUserLimit},
	{"CreateTokenSameDigest", testConcurrentCreateTokenSameDigest},
	{"CreateTokenLimit", testConcurrentCreateTokenLimit},
	{"CreateTokenRacingDeleteUser", testConcurrentCreateTokenRacingDeleteUser},
	{"DeleteTokenSameToken", testConcurrentDeleteTokenSameToken},
	{"CreateEmbedSessionLimit", testConcurrentCreateEmbedSessionLimit},
	{"SetDucklingRacingDeleteUser", testConcurrentSetDucklingRacingDeleteUser},
	{"CreateEmbedSessionRacingDeleteUser", testConcurrentCreateEmbedSessionRacingDeleteUser},
	{"SetInstancesAtomic", testConcurrentSetInstancesAtomic},
	{"SetInstancesEventsInTheirOrder", testConcurrentSetInstancesEventOrder},
	{"SetPrivilegesAtomic", testConcurrentSetPrivilegesAtomic},
	{"SetPrivilegesSameRead", testConcurrentSetPrivilegesSameRead},
	{"MarkSeededSameOrg", testConcurrentMarkSeededSameOrg},
	{"CreateDiveSameID", testConcurrentCreateDiveSameID},
}

// Of concurrent CreateDive calls for one Dive, as servers started
// together with one fixture make them, exactly one succeeds: its Dive is
// stored and its event is the one recorded.
func testConcurrentCreateDiveSameID(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := newOrg(t, s)
	d := newDive(o.ID, "")
	dives, events := make([]storage.Dive, racers), make([]storage.Event, racers)
	for i := range racers {
		dives[i] = d
		dives[i].Title = fmt.Sprintf("racer %d", i)
		events[i] = newEvent(o.ID, "dive.register", t0)
		events[i].TargetKind, events[i].TargetID = "dive", d.ID
	}
	errs := race(racers, func(i int) error { return s.CreateDive(ctx, dives[i], audit(events[i])) })
	winner := requireOneWinner(t, errs, storage.ErrAlreadyExists)
	assert.Equal(t, normDive(dives[winner]), normDive(getDive(t, s, o.ID, d.ID)))
	clean(t, s, at(time.Hour))
	assert.Equal(t, []string{events[winner].ID}, ids(listEvents(t, s, o.ID)), "the winner's event alone")
}

// Concurrent MarkSeeded calls of the same keys for one org that has no
// marks yet, as servers started together with one fixture make them, all
// succeed, and the keys are kept.
func testConcurrentMarkSeededSameOrg(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := newOrg(t, s)
	keys := []string{"user:alice", "token:ab12"}
	for i, err := range race(racers, func(int) error { return s.MarkSeeded(ctx, o.ID, keys) }) {
		require.NoError(t, err, "call %d", i)
	}
	marks, err := s.SeedMarks(ctx, o.ID)
	require.NoError(t, err)
	assert.ElementsMatch(t, keys, marks)
}

// racers is how many goroutines race in each concurrency test.
const racers = 32

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

// Of 32 concurrent CreateUser calls for one folded username, exactly one
// succeeds and the others are ErrAlreadyExists.
func testConcurrentCreateUserSameUsername(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	for _, name := range []string{"Racer", "other-racer", "bot"} {
		users := make([]storage.User, racers)
		for i := range users {
			spelling := name
			if i%2 == 1 {
				spelling = strings.ToUpper(name)
			}
			users[i] = newUser(org.ID, spelling, i%3 == 0)
		}
		errs := race(racers, func(i int) error { return s.CreateUser(t.Context(), users[i], storage.UserLimit{}, nil) })
		winner := requireOneWinner(t, errs, storage.ErrAlreadyExists)
		assertUser(t, users[winner], getUser(t, s, org.ID, strings.ToLower(name)))
	}
	p, err := s.ListUsers(t.Context(), org.ID, storage.UserQuery{Limit: 100})
	require.NoError(t, err)
	assert.Equal(t, []string{"bot", "other-racer", "racer"}, foldedNames(p.Users))
	assert.Equal(t, 3, p.Total)
}

// Concurrent CreateUser calls racing for the last places of an org never
// leave it holding more than lim.Max users; deletes free places for the
// next race.
func testConcurrentCreateUserLimit(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	lim := storage.UserLimit{Max: 8}
	for i := range 5 {
		require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, userName("early", i), false), lim, nil))
	}
	free := lim.Max - 5
	for round := range 3 {
		users := make([]storage.User, racers)
		for i := range users {
			users[i] = newUser(org.ID, userName(fmt.Sprintf("racer%d", round), i), i%2 == 0)
		}
		errs := race(racers, func(i int) error { return s.CreateUser(t.Context(), users[i], lim, nil) })
		var won []storage.User
		for i, err := range errs {
			if err == nil {
				won = append(won, users[i])
				continue
			}
			require.ErrorIs(t, err, storage.ErrLimitExceeded, "round %d: call %d", round, i)
			_, err := s.GetUser(t.Context(), org.ID, users[i].FoldedUsername)
			require.ErrorIs(t, err, storage.ErrNotFound, "round %d: refused user %d", round, i)
		}
		require.Equal(t, free, len(won), "round %d: users created", round)
		for _, u := range won {
			assertUser(t, u, getUser(t, s, org.ID, u.FoldedUsername))
		}
		requireUserCount(t, s, org.ID, lim.Max)
		// Free a place more each round.
		for _, u := range won {
			_, err := s.DeleteUser(t.Context(), org.ID, u.ID, nil)
			require.NoError(t, err)
		}
		deleteUser(t, s, org.ID, userName("early", round))
		free++
	}
}

// Of concurrent CreateToken calls with one Digest, exactly one succeeds.
func testConcurrentCreateTokenSameDigest(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	toks := make([]storage.Token, racers)
	for i := range toks {
		u := alice
		if i%2 == 1 {
			u = bob
		}
		toks[i] = newToken(u, t0, time.Time{})
		toks[i].Digest = digest("contested")
	}
	errs := race(racers, func(i int) error { return s.CreateToken(t.Context(), toks[i], storage.TokenLimit{}, nil) })
	winner := requireOneWinner(t, errs, storage.ErrAlreadyExists)
	owner := alice
	if winner%2 == 1 {
		owner = bob
	}
	requireTokenFound(t, s, toks[winner], owner)
}

// Of racers concurrent DeleteToken calls of one token, each with its
// event, exactly one succeeds and the others are ErrNotFound: the trail
// holds the winner's event alone, and the token is gone.
func testConcurrentDeleteTokenSameToken(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	tok := newToken(alice, t0, time.Time{})
	require.NoError(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{}, nil))
	events := make([]storage.Event, racers)
	for i := range events {
		events[i] = newEvent(org.ID, "token.delete", t0)
	}
	errs := race(racers, func(i int) error {
		return s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, storage.Revocation{At: t0}, audit(events[i]))
	})
	winner := requireOneWinner(t, errs, storage.ErrNotFound)
	clean(t, s, t0.Add(time.Hour))
	listed := listEvents(t, s, org.ID)
	require.Len(t, listed, 1)
	assert.Equal(t, events[winner].ID, listed[0].ID)
	tokens, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assert.Empty(t, tokens)
}

// Concurrent CreateToken calls never leave a user holding more than
// lim.Max live tokens.
func testConcurrentCreateTokenLimit(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	lim := storage.TokenLimit{Max: 3, LiveAt: t0}
	toks := make([]storage.Token, racers)
	for i := range toks {
		toks[i] = newToken(alice, t0, time.Time{})
	}
	errs := race(racers, func(i int) error { return s.CreateToken(t.Context(), toks[i], lim, nil) })
	created := 0
	for i, err := range errs {
		if err == nil {
			created++
			continue
		}
		require.ErrorIs(t, err, storage.ErrLimitExceeded, "call %d", i)
	}
	assert.Equal(t, lim.Max, created, "tokens created")
	listed, err := s.ListTokens(t.Context(), org.ID, alice.ID, t0)
	require.NoError(t, err)
	assert.Len(t, listed, lim.Max)
}

// Concurrent CreateEmbedSession calls never leave a user holding more
// than lim.Max live sessions: of racers calls for a user that holds one
// live session, exactly lim.Max-1 succeed, and the others are
// ErrLimitExceeded and store nothing. (No session of the user expires
// meanwhile: a deletion of one would order the calls on its row lock in
// some stores, and hide a count that is not atomic with the insert.)
func testConcurrentCreateEmbedSessionLimit(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	bot := createUser(t, s, org.ID, "bot", true)
	lim := storage.SessionLimit{Max: 4, LiveAt: at(time.Minute)}
	held := createSession(t, s, bot, "held")
	sessions := make([]storage.EmbedSession, racers)
	for i := range sessions {
		sessions[i] = sessionAt(bot, userName("racer", i), lim.LiveAt, at(time.Hour))
	}
	errs := race(racers, func(i int) error { return s.CreateEmbedSession(t.Context(), sessions[i], lim, nil) })
	created := 0
	for i, err := range errs {
		if err == nil {
			created++
			assertSession(t, sessions[i], getSession(t, s, sessions[i].Digest))
			continue
		}
		require.ErrorIs(t, err, storage.ErrLimitExceeded, "call %d", i)
		requireNoSession(t, s, sessions[i].Digest, "refused session %d", i)
	}
	assert.Equal(t, lim.Max-1, created, "sessions created")
	assertSession(t, held, getSession(t, s, held.Digest))
}

// raceDeleteUser creates the user name of org, then runs DeleteUser for it
// concurrently with racers calls of f; it returns the deleted user and the
// errors of f by index.
func raceDeleteUser(t testing.TB, s storage.Store, org, name string, f func(u storage.User, i int) error) (storage.User, []error) {
	t.Helper()
	u := createUser(t, s, org, name, false)
	errs := race(racers+1, func(i int) error {
		if i == racers {
			_, err := s.DeleteUser(t.Context(), org, u.ID, nil)
			return err
		}
		return f(u, i)
	})
	require.NoError(t, errs[racers], "DeleteUser")
	return u, errs[:racers]
}

// A token created concurrently with DeleteUser either fails with
// ErrNotFound or is gone once DeleteUser has returned: a token never
// outlives its user, even when the username is created again.
func testConcurrentCreateTokenRacingDeleteUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	for round := range 20 {
		var toks [racers]storage.Token
		u, errs := raceDeleteUser(t, s, org.ID, "doomed", func(u storage.User, i int) error {
			toks[i] = newToken(u, t0, time.Time{})
			return s.CreateToken(t.Context(), toks[i], storage.TokenLimit{Max: racers, LiveAt: t0}, nil)
		})
		for i, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, storage.ErrNotFound, "round %d: CreateToken %d", round, i)
			}
			_, err := credential(t, s, toks[i].Digest)
			require.ErrorIs(t, err, storage.ErrNotFound, "round %d: token %d outlived its user", round, i)
		}
		requireNoTokens(t, s, org.ID, u.ID)
	}
	// The last incarnation is gone too; a new one starts clean.
	fresh := createUser(t, s, org.ID, "doomed", false)
	toks, err := s.ListTokens(t.Context(), org.ID, fresh.ID, past)
	require.NoError(t, err)
	assert.Len(t, toks, 0)
}

// Duckling activity recorded concurrently with DeleteUser is not listed
// once DeleteUser has returned.
func testConcurrentSetDucklingRacingDeleteUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	for round := range 20 {
		u, errs := raceDeleteUser(t, s, org.ID, "doomed", func(u storage.User, i int) error {
			id := "rw"
			if i%2 == 1 {
				id = fmt.Sprintf("rs.%d", i)
			}
			return s.SetDuckling(t.Context(), storage.Duckling{Org: u.Org, UserID: u.ID, ID: id, Active: true, At: t0})
		})
		for i, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, storage.ErrNotFound, "round %d: SetDuckling %d", round, i)
			}
		}
		for _, a := range listActivity(t, s, org.ID) {
			require.NotEqual(t, u.ID, a.User.ID, "round %d: activity outlived its user", round)
			for _, d := range a.Ducklings {
				require.NotEqual(t, u.ID, d.UserID, "round %d: duckling outlived its user", round)
			}
		}
	}
	fresh := createUser(t, s, org.ID, "doomed", false)
	assert.Len(t, listActivity(t, s, org.ID), 0, "user %s", fresh.ID)
}

// An embed session created concurrently with DeleteUser is not found once
// DeleteUser has returned.
func testConcurrentCreateEmbedSessionRacingDeleteUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	for round := range 20 {
		var sessions [racers]storage.EmbedSession
		_, errs := raceDeleteUser(t, s, org.ID, "doomed", func(u storage.User, i int) error {
			sessions[i] = newSession(u, userName(u.ID, i))
			return s.CreateEmbedSession(t.Context(), sessions[i], storage.SessionLimit{}, nil)
		})
		for i, err := range errs {
			if err != nil {
				require.ErrorIs(t, err, storage.ErrNotFound, "round %d: CreateEmbedSession %d", round, i)
			}
			_, err := s.EmbedSessionByDigest(t.Context(), sessions[i].Digest)
			require.ErrorIs(t, err, storage.ErrNotFound, "round %d: session %d outlived its user", round, i)
		}
	}
}

// readersAndWriters runs writers write(i, n) calls while readers call read
// in a loop; read reports what it saw as a problem string, or "".
func readersAndWriters(t testing.TB, writers, writes, readers int, write func(w, n int) error, read func() (string, error)) {
	t.Helper()
	var (
		done     atomic.Bool
		mu       sync.Mutex
		problems []string
		reads    atomic.Int64
		wg       sync.WaitGroup
		writeWG  sync.WaitGroup
	)
	report := func(p string) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, p)
		}
	}
	start := make(chan struct{})
	for w := range writers {
		writeWG.Add(1)
		go func() {
			defer writeWG.Done()
			<-start
			for n := range writes {
				if err := write(w, n); err != nil {
					report("write: " + err.Error())
					return
				}
			}
		}()
	}
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for first := true; first || !done.Load(); first = false {
				p, err := read()
				reads.Add(1)
				if err != nil {
					report("read: " + err.Error())
					return
				}
				if p != "" {
					report(p)
				}
			}
		}()
	}
	close(start)
	writeWG.Wait()
	done.Store(true)
	wg.Wait()
	require.Empty(t, problems, "after %d reads", reads.Load())
}

// A reader concurrent with SetInstances sees the old or the new instance
// configuration, never a mix, through every method that returns the user.
func testConcurrentSetInstancesAtomic(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false) // configA
	tok := createToken(t, s, alice, t0, time.Time{})
	setDuckling(t, s, alice, "rw", true, t0)

	check := func(via string, c storage.InstanceConfig) string {
		if c != configA && c != configB {
			return via + ": mixed configuration " + describeConfig(c)
		}
		return ""
	}
	var n atomic.Int64
	readersAndWriters(t, 4, 150, 4,
		func(w, i int) error {
			c := configA
			if (w+i)%2 == 1 {
				c = configB
			}
			return s.SetInstances(t.Context(), org.ID, alice.ID, c, nil)
		},
		func() (string, error) {
			switch n.Add(1) % 4 {
			case 0:
				u, err := s.GetUser(t.Context(), org.ID, "alice")
				return check("GetUser", u.Instances), err
			case 1:
				p, err := s.ListUsers(t.Context(), org.ID, storage.UserQuery{Limit: 10})
				if err != nil || len(p.Users) != 1 {
					return "ListUsers: not one user", err
				}
				return check("ListUsers", p.Users[0].Instances), nil
			case 2:
				c, err := credential(t, s, tok.Digest)
				return check("ReadAccess", c.User.Instances), err
			default:
				acts, err := s.ListActivity(t.Context(), org.ID)
				if err != nil || len(acts) != 1 {
					return "ListActivity: not one user", err
				}
				return check("ListActivity", acts[0].User.Instances), nil
			}
		})
}

// A reader concurrent with SetPrivileges sees the old or the new
// privileges whole, never a mix, nor a change to the rest of the user.
// The writers flip the privileges between two lists, each from the list
// it last read; those that lose to another are ErrConflict.
func testConcurrentSetPrivilegesAtomic(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	v1 := createUser(t, s, org.ID, "alice", false)
	v2 := v1
	v2.Privileges = []string{"admin:tokens", "admin:users", "read", "write", "a privilege of a much longer name"}
	versions := []storage.User{v1, v2}
	tok := createToken(t, s, v1, t0, time.Time{})

	check := func(via string, u storage.User) string {
		if assert.ObjectsAreEqual(normUser(v1), normUser(u)) || assert.ObjectsAreEqual(normUser(v2), normUser(u)) {
			return ""
		}
		return fmt.Sprintf("%s: mixed record %+v", via, u)
	}
	var n atomic.Int64
	readersAndWriters(t, 4, 150, 4,
		func(w, i int) error {
			u, err := s.GetUser(t.Context(), org.ID, "alice")
			if err != nil {
				return err
			}
			to := versions[0].Privileges
			if slices.Equal(u.Privileges, to) {
				to = versions[1].Privileges
			}
			err = s.SetPrivileges(t.Context(), org.ID, v1.ID, u.Privileges, to, nil)
			if errors.Is(err, storage.ErrConflict) {
				return nil
			}
			return err
		},
		func() (string, error) {
			switch n.Add(1) % 3 {
			case 0:
				u, err := s.GetUser(t.Context(), org.ID, "alice")
				return check("GetUser", u), err
			case 1:
				p, err := s.ListUsers(t.Context(), org.ID, storage.UserQuery{Limit: 10})
				if err != nil || len(p.Users) != 1 {
					return "ListUsers: not one user", err
				}
				return check("ListUsers", p.Users[0]), nil
			default:
				c, err := credential(t, s, tok.Digest)
				return check("ReadAccess", c.User), err
			}
		})
}

// Of concurrent SetPrivileges calls from one read, each adding another
// privilege, exactly one succeeds and the others are ErrConflict: the
// privileges stored are the winner's, none lost to a write read before.
func testConcurrentSetPrivilegesSameRead(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	to := func(i int) []string { return append(slices.Clip(alice.Privileges), fmt.Sprint("privilege.", i)) }
	errs := race(racers, func(i int) error {
		return s.SetPrivileges(t.Context(), org.ID, alice.ID, alice.Privileges, to(i), nil)
	})
	winner := requireOneWinner(t, errs, storage.ErrConflict)
	want := alice
	want.Privileges = to(winner)
	assertUser(t, want, getUser(t, s, org.ID, "alice"))
}

func describeConfig(c storage.InstanceConfig) string { return fmt.Sprintf("%+v", c) }

// Changes of one user's configuration made at once leave their events in
// the order of the changes: the newest event is the last change's, which
// the user holds (a store that writes the change and its event in two
// steps, each under its own lock, can order them apart).
func testConcurrentSetInstancesEventOrder(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	const writers = 6
	for round := range 10 {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := configA
				c.ReadWrite.CooldownSeconds = 60 + w // one configuration a writer
				e := newEvent(org.ID, "instances.set", t0)
				e.After = []byte(fmt.Sprintf(`{"writer":%d}`, w))
				errs <- s.SetInstances(t.Context(), org.ID, alice.ID, c, audit(e))
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		held := getUser(t, s, org.ID, "alice").Instances.ReadWrite.CooldownSeconds - 60
		page, err := s.ListEvents(t.Context(), org.ID, storage.EventQuery{Limit: 1})
		require.NoError(t, err)
		require.Len(t, page.Events, 1)
		require.JSONEq(t, fmt.Sprintf(`{"writer":%d}`, held), string(page.Events[0].After),
			"round %d: the newest event is not the change the user holds", round)
	}
}
