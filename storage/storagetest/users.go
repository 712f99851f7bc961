package storagetest

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var userTests = []subtest{
	{"CreateGet", testUserCreateGet},
	{"TimePrecision", testUserTimePrecision},
	{"DuplicateFoldedUsername", testUserDuplicateFoldedUsername},
	{"FoldedUsernameIsTheKey", testUserFoldedUsernameIsTheKey},
	{"DuplicateID", testUserDuplicateID},
	{"SameUsernameOtherOrg", testUserSameUsernameOtherOrg},
	{"MissingOrg", testUserMissingOrg},
	{"GetMissing", testUserGetMissing},
	{"OrgIsolation", testUserOrgIsolation},
	{"SetPrivileges", testUserSetPrivileges},
	{"SetPrivilegesNilIsEmpty", testUserSetPrivilegesNilIsEmpty},
	{"SetPrivilegesConflict", testUserSetPrivilegesConflict},
	{"SetPrivilegesKeepsInstances", testUserSetPrivilegesKeepsInstances},
	{"SetPrivilegesMissing", testUserSetPrivilegesMissing},
	{"SetPrivilegesRecreatedUsername", testUserSetPrivilegesRecreatedUsername},
	{"SetPrivilegesOtherOrg", testUserSetPrivilegesOtherOrg},
	{"SetInstances", testUserSetInstances},
	{"SetInstancesMissing", testUserSetInstancesMissing},
	{"SetInstancesRecreatedUsername", testUserSetInstancesRecreatedUsername},
	{"CopiesOnRead", testUserCopiesOnRead},
	{"CopiesOnWrite", testUserCopiesOnWrite},
	{"LimitExceeded", testUserLimitExceeded},
	{"LimitFreedByDelete", testUserLimitFreedByDelete},
	{"LimitLeavesUsernameFree", testUserLimitLeavesUsernameFree},
	{"LimitTakenUsernameFirst", testUserLimitTakenUsernameFirst},
	{"LimitPerOrg", testUserLimitPerOrg},
	{"LimitZeroMeansNone", testUserLimitZeroMeansNone},
}

// CreateUser stores a user that GetUser returns, whole, by (org, folded).
func testUserCreateGet(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := newUser(org.ID, "Alice.Smith", false)
	alice.Role = "Admin"
	alice.CreatedAt = at(1500 * time.Millisecond)
	require.NoError(t, s.CreateUser(t.Context(), alice, storage.UserLimit{}, nil))
	bot := createUser(t, s, org.ID, "ci-Bot", true)

	assertUser(t, alice, getUser(t, s, org.ID, "alice.smith"))
	assertUser(t, bot, getUser(t, s, org.ID, "ci-bot"))
}

// Millisecond times survive a round trip, whatever the second or year.
func testUserTimePrecision(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	times := []time.Time{
		t0,
		time.Date(2026, 1, 2, 3, 4, 5, 1000000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999000000, time.UTC),
		time.Date(2030, 7, 1, 0, 0, 0, 0, time.UTC),
		past,
	}
	for i, when := range times {
		u := newUser(org.ID, userName("user", i), false)
		u.CreatedAt = when
		require.NoError(t, s.CreateUser(t.Context(), u, storage.UserLimit{}, nil))
		got := getUser(t, s, org.ID, u.FoldedUsername)
		assertTime(t, "User.CreatedAt", when, got.CreatedAt)
	}
}

// A second user with the same folded username in one org is
// ErrAlreadyExists, whatever its spelling, and changes nothing.
func testUserDuplicateFoldedUsername(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	for _, name := range []string{"Alice", "alice", "ALICE"} {
		dup := newUser(org.ID, name, true)
		dup.Description = "the impostor"
		err := s.CreateUser(t.Context(), dup, storage.UserLimit{}, nil)
		require.ErrorIs(t, err, storage.ErrAlreadyExists, "create %q", name)
	}
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))
}

// The key is FoldedUsername as the caller gives it, byte for byte: not
// the Username lower-cased, which differs from the fold for some names
// ("ſam" folds as "Sam" does; Cherokee folds to its capitals), nor the
// fold lower-cased again.
func testUserFoldedUsernameIsTheKey(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	sam := newUser(org.ID, "ſam", false)
	sam.FoldedUsername = "sam"
	require.NoError(t, s.CreateUser(t.Context(), sam, storage.UserLimit{}, nil))
	require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, "Sam", false), storage.UserLimit{}, nil), storage.ErrAlreadyExists)
	assertUser(t, sam, getUser(t, s, org.ID, "sam"))

	cherokee := newUser(org.ID, "ꭰꭱ", false)
	cherokee.FoldedUsername = "ᎠᎡ"
	require.NoError(t, s.CreateUser(t.Context(), cherokee, storage.UserLimit{}, nil))
	assertUser(t, cherokee, getUser(t, s, org.ID, "ᎠᎡ"))
	for _, other := range []string{"ſam", "ꭰꭱ", "ꭰᎡ"} {
		_, err := s.GetUser(t.Context(), org.ID, other)
		require.ErrorIs(t, err, storage.ErrNotFound, "GetUser(%q)", other)
	}
	page, err := s.ListUsers(t.Context(), org.ID, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	var folded []string
	for _, u := range page.Users {
		folded = append(folded, u.FoldedUsername)
	}
	assert.Equal(t, []string{"sam", "ᎠᎡ"}, folded)

	got, err := s.DeleteUser(t.Context(), org.ID, cherokee.ID, nil)
	require.NoError(t, err)
	assertUser(t, cherokee, got)
	assertUser(t, sam, getUser(t, s, org.ID, "sam"))
}

// A second user with the same ID in one org is ErrAlreadyExists and is not
// stored.
func testUserDuplicateID(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := newUser(org.ID, "bob", false)
	bob.ID = alice.ID
	require.ErrorIs(t, s.CreateUser(t.Context(), bob, storage.UserLimit{}, nil), storage.ErrAlreadyExists)

	_, err := s.GetUser(t.Context(), org.ID, "bob")
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))
}

// The folded username is unique within an org only.
func testUserSameUsernameOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	inA := createUser(t, s, a.ID, "alice", false)
	inB := createUser(t, s, b.ID, "Alice", true)

	assertUser(t, inA, getUser(t, s, a.ID, "alice"))
	assertUser(t, inB, getUser(t, s, b.ID, "alice"))
}

// CreateUser in an org that does not exist is ErrNotFound.
func testUserMissingOrg(t *testing.T, s storage.Store) {
	newOrg(t, s)
	missing := uuid.NewString()
	err := s.CreateUser(t.Context(), newUser(missing, "alice", false), storage.UserLimit{}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)

	_, err = s.GetUser(t.Context(), missing, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// GetUser of an unknown folded username is ErrNotFound, prefixes included.
func testUserGetMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	_, err := s.GetUser(t.Context(), org.ID, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)

	createUser(t, s, org.ID, "alice", false)
	for _, folded := range []string{"bob", "alic", "alice2", ""} {
		_, err := s.GetUser(t.Context(), org.ID, folded)
		require.ErrorIs(t, err, storage.ErrNotFound, "get %q", folded)
	}
}

// A user of org A cannot be read, changed or deleted through org B.
func testUserOrgIsolation(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "bob", false)

	_, err := s.GetUser(t.Context(), b.ID, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.SetInstances(t.Context(), b.ID, alice.ID, configB, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.DeleteUser(t.Context(), b.ID, alice.ID, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.GetUser(t.Context(), a.ID, "bob")
	require.ErrorIs(t, err, storage.ErrNotFound)

	assertUser(t, alice, getUser(t, s, a.ID, "alice"))
}

// SetPrivileges replaces the privileges of the user, and nothing else of
// it nor of any other user, when they are those it is told they are.
func testUserSetPrivileges(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bob := createUser(t, s, org.ID, "bob", false)

	want := alice
	want.Privileges = []string{"admin:tokens", "admin:users", "read"}
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, alice.Privileges, want.Privileges, nil))
	assertUser(t, want, getUser(t, s, org.ID, "alice"))

	fewer := want
	fewer.Privileges = []string{"read"}
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, want.Privileges, fewer.Privileges, nil))
	assertUser(t, fewer, getUser(t, s, org.ID, "alice"))

	assertUser(t, bob, getUser(t, s, org.ID, "bob"))
}

// Privileges nil and empty are the same: none. A user without privileges
// is told so by either, and either sets none.
func testUserSetPrivilegesNilIsEmpty(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	none := alice
	none.Privileges = nil

	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, alice.Privileges, []string{}, nil))
	assertUser(t, none, getUser(t, s, org.ID, "alice"))
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, nil, []string{"read"}, nil))
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, []string{"read"}, nil, nil))
	assertUser(t, none, getUser(t, s, org.ID, "alice"))
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, []string{}, []string{"write"}, nil))
	none.Privileges = []string{"write"}
	assertUser(t, none, getUser(t, s, org.ID, "alice"))

	bob := newUser(org.ID, "bob", false)
	bob.Privileges = []string{}
	require.NoError(t, s.CreateUser(t.Context(), bob, storage.UserLimit{}, nil))
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, bob.ID, nil, []string{"read"}, nil))
	bob.Privileges = []string{"read"}
	assertUser(t, bob, getUser(t, s, org.ID, "bob"))
}

// SetPrivileges from privileges other than those stored (other elements,
// fewer, more, the same in another order, none) is ErrConflict: it
// changes nothing and records no event.
func testUserSetPrivilegesConflict(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false) // read, write
	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, configB, nil))
	alice.Instances = configB
	for _, from := range [][]string{{"read", "admin"}, {"read"}, {"read", "write", "admin"}, {"write", "read"}, nil, {}} {
		e := newEvent(org.ID, "user.grant_privilege", t0)
		err := s.SetPrivileges(t.Context(), org.ID, alice.ID, from, []string{"admin:users"}, audit(e))
		require.ErrorIs(t, err, storage.ErrConflict, "from %q", from)
		require.NotErrorIs(t, err, storage.ErrNotFound, "from %q", from)
		assertUser(t, alice, getUser(t, s, org.ID, "alice"), "after a conflict from %q", from)
	}
	clean(t, s, at(time.Hour))
	assert.Empty(t, listEvents(t, s, org.ID), "no event of a conflict")
}

// SetPrivileges keeps the stored instance configuration and the rest of
// the user as they are.
func testUserSetPrivilegesKeepsInstances(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	read := createUser(t, s, org.ID, "alice", false)
	require.NoError(t, s.SetInstances(t.Context(), org.ID, read.ID, configB, nil))

	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, read.ID, read.Privileges, []string{"admin:users"}, nil))
	want := read
	want.Privileges = []string{"admin:users"}
	want.Instances = configB
	assertUser(t, want, getUser(t, s, org.ID, "alice"))
	c, err := credential(t, s, createToken(t, s, read, t0, time.Time{}).Digest)
	require.NoError(t, err)
	assertUser(t, want, c.User, "the token's user")
	p, err := s.ListUsers(t.Context(), org.ID, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, p.Users, 1)
	assertUser(t, want, p.Users[0], "listed")
}

// SetPrivileges of a user that does not exist is ErrNotFound and stores
// nothing; the ID, not the username, names the user.
func testUserSetPrivilegesMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	ghost := newUser(org.ID, "ghost", false)
	err := s.SetPrivileges(t.Context(), org.ID, ghost.ID, ghost.Privileges, []string{"admin:users"}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NotErrorIs(t, err, storage.ErrConflict)
	_, err = s.GetUser(t.Context(), org.ID, "ghost")
	require.ErrorIs(t, err, storage.ErrNotFound)

	alice := createUser(t, s, org.ID, "alice", false)
	impostor := newUser(org.ID, "alice", false) // same username, another ID
	err = s.SetPrivileges(t.Context(), org.ID, impostor.ID, alice.Privileges, []string{"admin:users"}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))

	err = s.SetPrivileges(t.Context(), uuid.NewString(), alice.ID, alice.Privileges, []string{"admin:users"}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))
}

// SetPrivileges of a deleted user whose username was created anew is
// ErrNotFound, even from the privileges the new user holds, and leaves
// the new user alone.
func testUserSetPrivilegesRecreatedUsername(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	old := createUser(t, s, org.ID, "alice", false)
	_, err := s.DeleteUser(t.Context(), org.ID, old.ID, nil)
	require.NoError(t, err)
	again := createUser(t, s, org.ID, "Alice", false)

	err = s.SetPrivileges(t.Context(), org.ID, old.ID, again.Privileges, []string{"admin:users"}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, again, getUser(t, s, org.ID, "alice"))
}

// SetPrivileges cannot reach a user through another org.
func testUserSetPrivilegesOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "alice", false)
	inB := getUser(t, s, b.ID, "alice")

	err := s.SetPrivileges(t.Context(), b.ID, alice.ID, alice.Privileges, []string{"admin:users"}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, alice, getUser(t, s, a.ID, "alice"))
	assertUser(t, inB, getUser(t, s, b.ID, "alice"))
}

// SetInstances replaces the whole instance configuration and nothing else.
func testUserSetInstances(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bob := createUser(t, s, org.ID, "bob", false)

	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, configB, nil))
	want := alice
	want.Instances = configB
	assertUser(t, want, getUser(t, s, org.ID, "alice"))

	// Replaced, not merged: zero fields overwrite set ones.
	zero := storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "standard"}}
	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, zero, nil))
	want.Instances = zero
	assertUser(t, want, getUser(t, s, org.ID, "alice"))

	assertUser(t, bob, getUser(t, s, org.ID, "bob"))
}

// SetInstances of a user that does not exist is ErrNotFound and creates
// nothing.
func testUserSetInstancesMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	ghost := newUser(org.ID, "ghost", false)
	err := s.SetInstances(t.Context(), org.ID, ghost.ID, configB, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.GetUser(t.Context(), org.ID, "ghost")
	require.ErrorIs(t, err, storage.ErrNotFound)

	err = s.SetInstances(t.Context(), uuid.NewString(), ghost.ID, configB, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// SetInstances of a deleted user whose username was created anew is
// ErrNotFound, and leaves the new user's configuration alone: a user
// created again under a name inherits nothing of the one before.
func testUserSetInstancesRecreatedUsername(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	old := createUser(t, s, org.ID, "alice", false)
	_, err := s.DeleteUser(t.Context(), org.ID, old.ID, nil)
	require.NoError(t, err)
	again := createUser(t, s, org.ID, "Alice", false)

	err = s.SetInstances(t.Context(), org.ID, old.ID, configB, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, again, getUser(t, s, org.ID, "alice"))
}

// Mutating a user returned by GetUser, ListUsers or DeleteUser changes
// nothing stored.
func testUserCopiesOnRead(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	want := alice
	want.Privileges = slices.Clone(alice.Privileges)

	got := getUser(t, s, org.ID, "alice")
	scribble(got.Privileges, "mutated")
	assertUser(t, want, getUser(t, s, org.ID, "alice"), "after mutating GetUser's result")

	page, err := s.ListUsers(t.Context(), org.ID, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Users, 1)
	scribble(page.Users[0].Privileges, "mutated")
	page.Users[0].Description = "mutated"
	assertUser(t, want, getUser(t, s, org.ID, "alice"), "after mutating ListUsers's result")

	tok := createToken(t, s, alice, t0, time.Time{})
	c, err := credential(t, s, tok.Digest)
	require.NoError(t, err)
	scribble(c.User.Privileges, "mutated")
	assertUser(t, want, getUser(t, s, org.ID, "alice"), "after mutating ReadAccess's result")
	c, err = credential(t, s, tok.Digest)
	require.NoError(t, err)
	assertUser(t, want, c.User)
}

// Mutating a user's slices after passing it to CreateUser, or the
// privileges passed to SetPrivileges, changes nothing stored.
func testUserCopiesOnWrite(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := newUser(org.ID, "alice", false)
	alice.Privileges = make([]string, 2, 8) // spare capacity a store must not share
	copy(alice.Privileges, []string{"read", "write"})
	want := alice
	want.Privileges = []string{"read", "write"}
	require.NoError(t, s.CreateUser(t.Context(), alice, storage.UserLimit{}, nil))
	scribble(alice.Privileges, "mutated")
	assertUser(t, want, getUser(t, s, org.ID, "alice"), "after mutating CreateUser's argument")

	from := []string{"read", "write"}
	to := make([]string, 1, 8)
	to[0] = "admin:users"
	want.Privileges = []string{"admin:users"}
	require.NoError(t, s.SetPrivileges(t.Context(), org.ID, alice.ID, from, to, nil))
	scribble(to, "mutated")
	scribble(from, "mutated")
	assertUser(t, want, getUser(t, s, org.ID, "alice"), "after mutating SetPrivileges's arguments")
}

var deleteUserTests = []subtest{
	{"ReturnsRecord", testDeleteUserReturnsRecord},
	{"Missing", testDeleteUserMissing},
	{"ByID", testDeleteUserByID},
	{"RecreatedNotByOldID", testDeleteUserRecreatedNotByOldID},
	{"RemovesTokens", testDeleteUserRemovesTokens},
	{"RemovesActivity", testDeleteUserRemovesActivity},
	{"RemovesEmbedSessions", testDeleteUserRemovesEmbedSessions},
	{"RecreateUsername", testDeleteUserRecreateUsername},
	{"OtherOrg", testDeleteUserOtherOrg},
}

// DeleteUser returns the record as last stored; the user is then gone.
func testDeleteUserReturnsRecord(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, configB, nil))
	want := alice
	want.Instances = configB

	got, err := s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.NoError(t, err)
	assertUser(t, want, got)

	_, err = s.GetUser(t.Context(), org.ID, "alice")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, bob, getUser(t, s, org.ID, "bob"))
}

// DeleteUser of a user that does not exist is ErrNotFound; the ID, not
// the username, names the user.
func testDeleteUserMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	_, err := s.DeleteUser(t.Context(), org.ID, newUser(org.ID, "ghost", false).ID, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)

	alice := createUser(t, s, org.ID, "alice", false)
	_, err = s.DeleteUser(t.Context(), org.ID, newUser(org.ID, "alice", false).ID, nil)
	require.ErrorIs(t, err, storage.ErrNotFound, "another id of the same username")
	_, err = s.DeleteUser(t.Context(), org.ID, alice.FoldedUsername, nil)
	require.ErrorIs(t, err, storage.ErrNotFound, "the username as an id")
	_, err = s.DeleteUser(t.Context(), uuid.NewString(), alice.ID, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))
}

// DeleteUser removes the user of the id it is given, found whatever its
// username's spelling, and no other.
func testDeleteUserByID(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bob := createUser(t, s, org.ID, "bob", true)
	bobTok := createToken(t, s, bob, t0, time.Time{})

	got, err := s.DeleteUser(t.Context(), org.ID, bob.ID, nil)
	require.NoError(t, err)
	assertUser(t, bob, got)
	_, err = s.GetUser(t.Context(), org.ID, "bob")
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireTokenGone(t, s, bobTok)
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))

	got, err = s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.NoError(t, err)
	assertUser(t, alice, got)
	requireUserCount(t, s, org.ID, 0)
}

// A user deleted and created anew under the same username is another
// user: DeleteUser of the old id is ErrNotFound, records nothing, and
// leaves the new user, its tokens and sessions alone.
func testDeleteUserRecreatedNotByOldID(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	old := createUser(t, s, org.ID, "alice", false)
	_, err := s.DeleteUser(t.Context(), org.ID, old.ID, nil)
	require.NoError(t, err)
	again := createUser(t, s, org.ID, "Alice", true)
	tok := createToken(t, s, again, t0, time.Time{})
	sess := createSession(t, s, again, "again")
	setDuckling(t, s, again, "rw", true, t0)

	_, err = s.DeleteUser(t.Context(), org.ID, old.ID, audit(newEvent(org.ID, "user.delete", t0)))
	require.ErrorIs(t, err, storage.ErrNotFound)
	assertUser(t, again, getUser(t, s, org.ID, "alice"))
	requireTokenFound(t, s, tok, again)
	got, err := s.EmbedSessionByDigest(t.Context(), sess.Digest)
	require.NoError(t, err)
	assertSession(t, sess, got)
	require.Len(t, listActivity(t, s, org.ID), 1, "the new user's Duckling activity")
	clean(t, s, at(time.Hour))
	assert.Empty(t, listEvents(t, s, org.ID), "no event of a deletion of no user")
}

// DeleteUser removes the user's tokens, and only them.
func testDeleteUserRemovesTokens(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	aliceTokens := []storage.Token{
		createToken(t, s, alice, t0, time.Time{}),
		createToken(t, s, alice, at(time.Second), at(time.Hour)),
		createToken(t, s, alice, past, past.Add(time.Hour)),
	}
	bobToken := createToken(t, s, bob, t0, time.Time{})

	_, err := s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.NoError(t, err)

	for _, tok := range aliceTokens {
		requireTokenGone(t, s, tok)
		err := s.DeleteToken(t.Context(), org.ID, alice.ID, tok.ID, storage.Revocation{At: past}, nil)
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
	requireNoTokens(t, s, org.ID, alice.ID)

	requireTokenFound(t, s, bobToken, bob)
	toks, err := s.ListTokens(t.Context(), org.ID, bob.ID, t0)
	require.NoError(t, err)
	assertTokens(t, []storage.Token{bobToken}, toks)
}

// DeleteUser removes the user's Duckling activity, and only it.
func testDeleteUserRemovesActivity(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	setDuckling(t, s, alice, "rw", true, t0)
	setDuckling(t, s, alice, "rs.0", false, t0)
	bobDuck := setDuckling(t, s, bob, "rw", true, at(time.Second))

	_, err := s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.NoError(t, err)

	acts, err := s.ListActivity(t.Context(), org.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	assertUser(t, bob, acts[0].User)
	assert.ElementsMatch(t, normDucklings([]storage.Duckling{bobDuck}), normDucklings(acts[0].Ducklings))

	// Removed, not hidden: a user made again with the same id has none.
	require.NoError(t, s.CreateUser(t.Context(), alice, storage.UserLimit{}, nil))
	acts, err = s.ListActivity(t.Context(), org.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1, "the deleted user's Ducklings came back with its id")
	assertUser(t, bob, acts[0].User)
}

// DeleteUser removes the user's embed sessions, and only them.
func testDeleteUserRemovesEmbedSessions(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	aliceSessions := []storage.EmbedSession{
		createSession(t, s, alice, "a1"),
		createSession(t, s, alice, "a2"),
	}
	bobSession := createSession(t, s, bob, "b1")

	_, err := s.DeleteUser(t.Context(), org.ID, alice.ID, nil)
	require.NoError(t, err)

	for _, es := range aliceSessions {
		_, err := s.EmbedSessionByDigest(t.Context(), es.Digest)
		require.ErrorIs(t, err, storage.ErrNotFound, "session %s", es.DiveID)
	}
	got, err := s.EmbedSessionByDigest(t.Context(), bobSession.Digest)
	require.NoError(t, err)
	assertSession(t, bobSession, got)

	// Removed, not hidden: a user made again with the same id has none.
	require.NoError(t, s.CreateUser(t.Context(), alice, storage.UserLimit{}, nil))
	for _, es := range aliceSessions {
		_, err := s.EmbedSessionByDigest(t.Context(), es.Digest)
		require.ErrorIs(t, err, storage.ErrNotFound, "session %s came back with its user's id", es.DiveID)
	}
}

// After DeleteUser the username can be created again, and the new user
// (a new ID) inherits nothing of the old one.
func testDeleteUserRecreateUsername(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	old := createUser(t, s, org.ID, "Alice", false)
	oldTokens := []storage.Token{
		createToken(t, s, old, t0, time.Time{}),
		createToken(t, s, old, t0, at(time.Hour)),
	}
	setDuckling(t, s, old, "rw", true, t0)
	oldSession := createSession(t, s, old, "old")

	_, err := s.DeleteUser(t.Context(), org.ID, old.ID, nil)
	require.NoError(t, err)

	fresh := newUser(org.ID, "alice", true)
	fresh.Privileges = []string{"read"}
	require.NoError(t, s.CreateUser(t.Context(), fresh, storage.UserLimit{}, nil))
	assertUser(t, fresh, getUser(t, s, org.ID, "alice"))

	for _, tok := range oldTokens {
		requireTokenGone(t, s, tok)
	}
	toks, err := s.ListTokens(t.Context(), org.ID, fresh.ID, past)
	require.NoError(t, err)
	assert.Len(t, toks, 0, "the new user inherited tokens %v", tokenIDs(toks))
	requireNoTokens(t, s, org.ID, old.ID)

	acts, err := s.ListActivity(t.Context(), org.ID)
	require.NoError(t, err)
	assert.Len(t, acts, 0, "the new user inherited Duckling activity")
	_, err = s.EmbedSessionByDigest(t.Context(), oldSession.Digest)
	require.ErrorIs(t, err, storage.ErrNotFound)

	// Records naming the old ID are refused: that user is gone.
	err = s.CreateToken(t.Context(), newToken(old, t0, time.Time{}), storage.TokenLimit{}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.SetDuckling(t.Context(), storage.Duckling{Org: org.ID, UserID: old.ID, ID: "rw", Active: true, At: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.CreateEmbedSession(t.Context(), newSession(old, "again"), storage.SessionLimit{}, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)

	// The new user's own records work.
	tok := createToken(t, s, fresh, t0, time.Time{})
	requireTokenFound(t, s, tok, fresh)
}

// DeleteUser in org B leaves org A's user of the same name alone.
func testDeleteUserOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	inA := createUser(t, s, a.ID, "alice", false)
	inB := createUser(t, s, b.ID, "alice", false)
	tokA := createToken(t, s, inA, t0, time.Time{})
	tokB := createToken(t, s, inB, t0, time.Time{})
	duckA := setDuckling(t, s, inA, "rw", true, t0)
	setDuckling(t, s, inB, "rw", true, t0)
	sessA := createSession(t, s, inA, "a")

	got, err := s.DeleteUser(t.Context(), b.ID, inB.ID, nil)
	require.NoError(t, err)
	assertUser(t, inB, got)
	requireTokenGone(t, s, tokB)

	assertUser(t, inA, getUser(t, s, a.ID, "alice"))
	requireTokenFound(t, s, tokA, inA)
	acts, err := s.ListActivity(t.Context(), a.ID)
	require.NoError(t, err)
	require.Len(t, acts, 1)
	assert.ElementsMatch(t, normDucklings([]storage.Duckling{duckA}), normDucklings(acts[0].Ducklings))
	gotSess, err := s.EmbedSessionByDigest(t.Context(), sessA.Digest)
	require.NoError(t, err)
	assertSession(t, sessA, gotSess)
}

// requireUserCount requires that org holds n users, by ListUsers.
func requireUserCount(t testing.TB, s storage.Store, org string, n int) {
	t.Helper()
	p, err := s.ListUsers(t.Context(), org, storage.UserQuery{Limit: n + 1})
	require.NoError(t, err)
	require.Equal(t, n, p.Total, "users of the org: %v", foldedNames(p.Users))
	require.Len(t, p.Users, n)
}

// With Max 3, a fourth user is ErrLimitExceeded, whatever its kind, and is
// not stored.
func testUserLimitExceeded(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	lim := storage.UserLimit{Max: 3}
	for i, name := range []string{"alice", "bot", "carol"} {
		require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, name, i%2 == 1), lim, nil), name)
	}
	for _, sa := range []bool{false, true} {
		dave := newUser(org.ID, "dave", sa)
		require.ErrorIs(t, s.CreateUser(t.Context(), dave, lim, nil), storage.ErrLimitExceeded)
		_, err := s.GetUser(t.Context(), org.ID, "dave")
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
	requireUserCount(t, s, org.ID, 3)
	// A higher limit makes room.
	dave := newUser(org.ID, "dave", false)
	require.NoError(t, s.CreateUser(t.Context(), dave, storage.UserLimit{Max: 4}, nil))
	assertUser(t, dave, getUser(t, s, org.ID, "dave"))
}

// Deleting a user frees its place, again and again.
func testUserLimitFreedByDelete(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	lim := storage.UserLimit{Max: 2}
	require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, "alice", false), lim, nil))
	require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, "bob", false), lim, nil))
	for i := range 5 {
		name := userName("user", i)
		require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, name, false), lim, nil), storage.ErrLimitExceeded, name)
		deleteUser(t, s, org.ID, "bob")
		u := newUser(org.ID, name, true)
		require.NoError(t, s.CreateUser(t.Context(), u, lim, nil), name)
		assertUser(t, u, getUser(t, s, org.ID, u.FoldedUsername))
		requireUserCount(t, s, org.ID, 2)
		// The new user takes bob's place; bob comes back in its.
		_, err := s.DeleteUser(t.Context(), org.ID, u.ID, nil)
		require.NoError(t, err)
		require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, "bob", false), lim, nil))
	}
	requireUserCount(t, s, org.ID, 2)
}

// A creation refused with ErrLimitExceeded leaves nothing behind: once a
// place is free, the same user (username and ID) can be created.
func testUserLimitLeavesUsernameFree(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	lim := storage.UserLimit{Max: 1}
	require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, "alice", false), lim, nil))
	carol := newUser(org.ID, "Carol", false)
	for range 3 {
		require.ErrorIs(t, s.CreateUser(t.Context(), carol, lim, nil), storage.ErrLimitExceeded)
	}
	_, err := s.GetUser(t.Context(), org.ID, "carol")
	require.ErrorIs(t, err, storage.ErrNotFound)
	_, err = s.DeleteUser(t.Context(), org.ID, carol.ID, nil)
	require.ErrorIs(t, err, storage.ErrNotFound)
	requireUserCount(t, s, org.ID, 1)

	deleteUser(t, s, org.ID, "alice")
	require.NoError(t, s.CreateUser(t.Context(), carol, lim, nil))
	assertUser(t, carol, getUser(t, s, org.ID, "carol"))
	requireUserCount(t, s, org.ID, 1)
	require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, "alice", false), lim, nil), storage.ErrLimitExceeded)
}

// At the limit, a taken username or ID is still ErrAlreadyExists.
func testUserLimitTakenUsernameFirst(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	lim := storage.UserLimit{Max: 2}
	alice := createUser(t, s, org.ID, "alice", false)
	createUser(t, s, org.ID, "bob", false)
	require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, "ALICE", true), lim, nil), storage.ErrAlreadyExists)
	sameID := newUser(org.ID, "carol", false)
	sameID.ID = alice.ID
	require.ErrorIs(t, s.CreateUser(t.Context(), sameID, lim, nil), storage.ErrAlreadyExists)
	require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, "carol", false), lim, nil), storage.ErrLimitExceeded)
	assertUser(t, alice, getUser(t, s, org.ID, "alice"))
}

// The limit counts the users of one org only.
func testUserLimitPerOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	lim := storage.UserLimit{Max: 2}
	for _, org := range []storage.Org{a, b} {
		for _, name := range []string{"alice", "bob"} {
			require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, name, false), lim, nil), "%s in %s", name, org.ID)
		}
		require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, "carol", false), lim, nil), storage.ErrLimitExceeded)
	}
	deleteUser(t, s, a.ID, "bob")
	require.ErrorIs(t, s.CreateUser(t.Context(), newUser(b.ID, "carol", false), lim, nil), storage.ErrLimitExceeded)
	require.NoError(t, s.CreateUser(t.Context(), newUser(a.ID, "carol", false), lim, nil))
}

// A zero Max means no limit; users created without one count against a
// later limit.
func testUserLimitZeroMeansNone(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	for i := range 25 {
		createUser(t, s, org.ID, userName("user", i), i%2 == 0)
	}
	requireUserCount(t, s, org.ID, 25)
	require.ErrorIs(t, s.CreateUser(t.Context(), newUser(org.ID, "late", false), storage.UserLimit{Max: 25}, nil), storage.ErrLimitExceeded)
	require.NoError(t, s.CreateUser(t.Context(), newUser(org.ID, "late", false), storage.UserLimit{Max: 26}, nil))
	requireUserCount(t, s, org.ID, 26)
}
