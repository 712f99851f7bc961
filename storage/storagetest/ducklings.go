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

var ducklingTests = []subtest{
	{"SetAndList", testDucklingSetAndList},
	{"Order", testDucklingOrder},
	{"Replace", testDucklingReplace},
	{"MissingUser", testDucklingMissingUser},
	{"UserOfOtherOrg", testDucklingUserOfOtherOrg},
	{"OrgIsolation", testDucklingOrgIsolation},
	{"Empty", testDucklingEmpty},
	{"ListShowsCurrentUser", testDucklingListShowsCurrentUser},
	{"Copies", testDucklingCopies},
}

// wantActivity is one user's expected ListActivity entry.
type wantActivity struct {
	user      storage.User
	ducklings []storage.Duckling
}

// assertActivity asserts that got lists want's users in order, each with
// its ducklings in any order.
func assertActivity(t testing.TB, want []wantActivity, got []storage.Activity) bool {
	t.Helper()
	wantNames := make([]string, len(want))
	for i, w := range want {
		wantNames[i] = w.user.FoldedUsername
	}
	gotNames := make([]string, len(got))
	for i, a := range got {
		gotNames[i] = a.User.FoldedUsername
	}
	if !assert.Equal(t, wantNames, gotNames, "users of ListActivity") {
		return false
	}
	ok := true
	for i, w := range want {
		ok = assertUser(t, w.user, got[i].User) && ok
		ok = assert.ElementsMatch(t, normDucklings(w.ducklings), normDucklings(got[i].Ducklings),
			"ducklings of %s", w.user.FoldedUsername) && ok
	}
	return ok
}

// listActivity requires ListActivity of org to succeed.
func listActivity(t testing.TB, s storage.Store, org string) []storage.Activity {
	t.Helper()
	acts, err := s.ListActivity(t.Context(), org)
	require.NoError(t, err)
	return acts
}

// ListActivity returns the users with Duckling records, with their records;
// users without records are absent.
func testDucklingSetAndList(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "Alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	createUser(t, s, org.ID, "carol", false)
	dave := createUser(t, s, org.ID, "dave", true)

	d1 := setDuckling(t, s, dave, "rs.0", true, at(3*time.Millisecond))
	a1 := setDuckling(t, s, alice, "rw", true, t0)
	b1 := setDuckling(t, s, bob, "rw", false, past)
	a2 := setDuckling(t, s, alice, "rs.0", false, at(time.Second))
	a3 := setDuckling(t, s, alice, "rs.1", true, at(2*time.Millisecond))

	assertActivity(t, []wantActivity{
		{alice, []storage.Duckling{a1, a2, a3}},
		{bob, []storage.Duckling{b1}},
		{dave, []storage.Duckling{d1}},
	}, listActivity(t, s, org.ID))
}

// ListActivity orders users byte-wise by FoldedUsername.
func testDucklingOrder(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	byName := map[string]storage.User{}
	for _, name := range []string{"b", "A_c", "a.c", "Z", "~", "a"} {
		u := createUser(t, s, org.ID, name, false)
		setDuckling(t, s, u, "rw", true, t0)
		byName[u.FoldedUsername] = u
	}
	var want []wantActivity
	for _, name := range []string{"a", "a.c", "a_c", "b", "z", "~"} {
		u := byName[name]
		want = append(want, wantActivity{u, []storage.Duckling{{Org: org.ID, UserID: u.ID, ID: "rw", Active: true, At: t0}}})
	}
	assertActivity(t, want, listActivity(t, s, org.ID))
}

// A second SetDuckling for one (Org, UserID, ID) replaces the first, and
// only it.
func testDucklingReplace(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	bob := createUser(t, s, org.ID, "bob", false)
	setDuckling(t, s, alice, "rw", true, t0)
	rs := setDuckling(t, s, alice, "rs.0", true, t0)
	bobRW := setDuckling(t, s, bob, "rw", true, t0)

	rw := setDuckling(t, s, alice, "rw", false, at(time.Minute+time.Millisecond))
	assertActivity(t, []wantActivity{
		{alice, []storage.Duckling{rw, rs}},
		{bob, []storage.Duckling{bobRW}},
	}, listActivity(t, s, org.ID))

	// An older report still replaces: the store does not compare times.
	rw = setDuckling(t, s, alice, "rw", true, past)
	assertActivity(t, []wantActivity{
		{alice, []storage.Duckling{rw, rs}},
		{bob, []storage.Duckling{bobRW}},
	}, listActivity(t, s, org.ID))
}

// SetDuckling for a user that does not exist is ErrNotFound.
func testDucklingMissingUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	createUser(t, s, org.ID, "alice", false)
	err := s.SetDuckling(t.Context(), storage.Duckling{Org: org.ID, UserID: uuid.NewString(), ID: "rw", Active: true, At: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)
	err = s.SetDuckling(t.Context(), storage.Duckling{Org: uuid.NewString(), UserID: uuid.NewString(), ID: "rw", Active: true, At: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)
	assert.Len(t, listActivity(t, s, org.ID), 0)
}

// A Duckling names its user by (Org, UserID): a user of another org is not
// found.
func testDucklingUserOfOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	createUser(t, s, b.ID, "alice", false)
	err := s.SetDuckling(t.Context(), storage.Duckling{Org: b.ID, UserID: alice.ID, ID: "rw", Active: true, At: t0})
	require.ErrorIs(t, err, storage.ErrNotFound)
	assert.Len(t, listActivity(t, s, a.ID), 0)
	assert.Len(t, listActivity(t, s, b.ID), 0)
}

// ListActivity shows the org's users only.
func testDucklingOrgIsolation(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	alice := createUser(t, s, a.ID, "alice", false)
	bob := createUser(t, s, b.ID, "bob", false)
	aliceInB := createUser(t, s, b.ID, "alice", false)
	da := setDuckling(t, s, alice, "rw", true, t0)
	db := setDuckling(t, s, bob, "rw", false, t0)
	dab := setDuckling(t, s, aliceInB, "rs.0", true, t0)

	assertActivity(t, []wantActivity{{alice, []storage.Duckling{da}}}, listActivity(t, s, a.ID))
	assertActivity(t, []wantActivity{
		{aliceInB, []storage.Duckling{dab}},
		{bob, []storage.Duckling{db}},
	}, listActivity(t, s, b.ID))
}

// An org without Duckling records lists none, without error.
func testDucklingEmpty(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	assert.Len(t, listActivity(t, s, org.ID), 0)
	createUser(t, s, org.ID, "alice", false)
	assert.Len(t, listActivity(t, s, org.ID), 0)
}

// The user ListActivity returns is the user as stored now.
func testDucklingListShowsCurrentUser(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	d := setDuckling(t, s, alice, "rw", true, t0)

	setPrivileges(t, s, &alice, "admin:users")
	require.NoError(t, s.SetInstances(t.Context(), org.ID, alice.ID, configB, nil))
	alice.Instances = configB
	assertActivity(t, []wantActivity{{alice, []storage.Duckling{d}}}, listActivity(t, s, org.ID))
}

// Mutating what ListActivity returns changes nothing stored.
func testDucklingCopies(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	alice := createUser(t, s, org.ID, "alice", false)
	want := alice
	want.Privileges = slices.Clone(alice.Privileges)
	d1 := setDuckling(t, s, alice, "rw", true, t0)
	d2 := setDuckling(t, s, alice, "rs.0", false, t0)

	acts := listActivity(t, s, org.ID)
	require.Len(t, acts, 1)
	scribble(acts[0].Ducklings, storage.Duckling{Org: org.ID, UserID: alice.ID, ID: "mutated"})
	scribble(acts[0].User.Privileges, "mutated")
	scribble(acts, storage.Activity{})

	assertActivity(t, []wantActivity{{want, []storage.Duckling{d1, d2}}}, listActivity(t, s, org.ID))
	assertUser(t, want, getUser(t, s, org.ID, "alice"))
}
