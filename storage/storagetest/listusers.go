package storagetest

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var listUsersTests = []subtest{
	{"Order", testListUsersOrder},
	{"ByteWiseOrder", testListUsersByteWiseOrder},
	{"Limit", testListUsersLimit},
	{"Offset", testListUsersOffset},
	{"After", testListUsersAfter},
	{"ServiceAccountFilter", testListUsersServiceAccountFilter},
	{"EmptyOrg", testListUsersEmptyOrg},
	{"OrgIsolation", testListUsersOrgIsolation},
	{"ReflectsChanges", testListUsersReflectsChanges},
	{"WalkAfter", testListUsersWalkAfter},
	{"WalkOffset", testListUsersWalkOffset},
	{"Into", testListUsersInto},
}

// listFixture is the population of the small listing tests, in creation
// order. Sorted by folded username: alice, bob, carol.sa, dave, erin-bot,
// frank, grace, heidi-bot; the service accounts are carol.sa, erin-bot and
// heidi-bot.
var listFixture = []struct {
	name string
	sa   bool
}{
	{"heidi-bot", true},
	{"alice", false},
	{"Frank", false},
	{"carol.sa", true},
	{"grace", false},
	{"Bob", false},
	{"Erin-Bot", true},
	{"dave", false},
}

// createListFixture creates listFixture in a new org, and a few users in
// another org that no listing of the first may show. It returns the first
// org's ID and its users by folded username.
func createListFixture(t testing.TB, s storage.Store) (string, map[string]storage.User) {
	t.Helper()
	org, other := newOrg(t, s), newOrg(t, s)
	users := make(map[string]storage.User)
	for i, f := range listFixture {
		if i%3 == 0 {
			createUser(t, s, other.ID, "a"+f.name, f.sa)
		}
		u := createUser(t, s, org.ID, f.name, f.sa)
		users[u.FoldedUsername] = u
	}
	createUser(t, s, other.ID, "bobby", false)
	createUser(t, s, other.ID, "zed-bot", true)
	return org.ID, users
}

// pageCase is one ListUsers call and the page it must return.
type pageCase struct {
	q     storage.UserQuery
	users []string // folded usernames, in order
	more  bool
	total int
}

// checkPages runs each case against org.
func checkPages(t testing.TB, s storage.Store, org string, cases []pageCase) {
	t.Helper()
	for _, c := range cases {
		p, err := s.ListUsers(t.Context(), org, c.q)
		if !assert.NoError(t, err, "query %s", describe(c.q)) {
			continue
		}
		want := c.users
		if want == nil {
			want = []string{}
		}
		assert.Equal(t, want, foldedNames(p.Users), "query %s: users", describe(c.q))
		assert.Equal(t, c.more, p.More, "query %s: More", describe(c.q))
		assert.Equal(t, c.total, p.Total, "query %s: Total", describe(c.q))
	}
}

// describe renders q for failure messages.
func describe(q storage.UserQuery) string {
	sa := "nil"
	if q.ServiceAccount != nil {
		sa = fmt.Sprint(*q.ServiceAccount)
	}
	return fmt.Sprintf("{After:%q Offset:%d Limit:%d ServiceAccount:%s}", q.After, q.Offset, q.Limit, sa)
}

// ListUsers orders by FoldedUsername and returns whole records.
func testListUsersOrder(t *testing.T, s storage.Store) {
	org, users := createListFixture(t, s)
	p, err := s.ListUsers(t.Context(), org, storage.UserQuery{Limit: 100})
	require.NoError(t, err)
	want := []string{"alice", "bob", "carol.sa", "dave", "erin-bot", "frank", "grace", "heidi-bot"}
	require.Equal(t, want, foldedNames(p.Users))
	assert.False(t, p.More)
	assert.Equal(t, 8, p.Total)
	for _, u := range p.Users {
		assertUser(t, users[u.FoldedUsername], u)
	}
}

// The order is byte-wise on the folded username: no locale, no natural
// number order, punctuation and non-ASCII where their bytes put them.
func testListUsersByteWiseOrder(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	names := []string{"zoe", "Émile", "a_b", "a.b", "a0", "aB", "A", "~x", "al", "alice", "Z9", "B", "user10", "user9", "user-1"}
	folded := make([]string, len(names))
	for i, name := range names {
		folded[i] = createUser(t, s, org.ID, name, false).FoldedUsername
	}
	// Folds that are not the username lower-cased, nor lower-case
	// themselves, and one whose underscore decides its place: a store
	// that sorts or compares the cursor by another key than the fold as
	// given, byte-wise, puts one of them elsewhere.
	for _, u := range [][2]string{{"ſam", "sam"}, {"ꭰꭱ", "ᎠᎡ"}, {"ⴀ", "ⴀ"}, {"a_z", "a_z"}} {
		nu := newUser(org.ID, u[0], false)
		nu.FoldedUsername = u[1]
		require.NoError(t, s.CreateUser(t.Context(), nu, storage.UserLimit{}, nil), "create user %q", u[0])
		folded = append(folded, u[1])
	}
	slices.Sort(folded) // byte-wise
	require.Equal(t, "a", folded[0])
	require.Equal(t, "ⴀ", folded[len(folded)-1])

	checkPages(t, s, org.ID, []pageCase{
		{q: storage.UserQuery{Limit: 100}, users: folded, total: len(folded)},
		{q: storage.UserQuery{After: "a", Limit: 3}, users: []string{"a.b", "a0", "a_b"}, more: true, total: len(folded)},
		{q: storage.UserQuery{After: "a_b", Limit: 2}, users: []string{"a_z", "ab"}, more: true, total: len(folded)},
		{q: storage.UserQuery{After: "alice", Limit: 2}, users: []string{"b", "sam"}, more: true, total: len(folded)},
		{q: storage.UserQuery{After: "sam", Limit: 1}, users: []string{"user-1"}, more: true, total: len(folded)},
		{q: storage.UserQuery{After: "user10", Limit: 100}, users: []string{"user9", "z9", "zoe", "~x", "émile", "ᎠᎡ", "ⴀ"}, total: len(folded)},
		{q: storage.UserQuery{After: "~x", Limit: 100}, users: []string{"émile", "ᎠᎡ", "ⴀ"}, total: len(folded)},
	})
}

// Limit bounds the page; More is true exactly when matching users follow.
func testListUsersLimit(t *testing.T, s storage.Store) {
	org, _ := createListFixture(t, s)
	all := []string{"alice", "bob", "carol.sa", "dave", "erin-bot", "frank", "grace", "heidi-bot"}
	checkPages(t, s, org, []pageCase{
		{q: storage.UserQuery{Limit: 1}, users: all[:1], more: true, total: 8},
		{q: storage.UserQuery{Limit: 3}, users: all[:3], more: true, total: 8},
		{q: storage.UserQuery{Limit: 7}, users: all[:7], more: true, total: 8},
		{q: storage.UserQuery{Limit: 8}, users: all, more: false, total: 8},
		{q: storage.UserQuery{Limit: 9}, users: all, more: false, total: 8},
		{q: storage.UserQuery{Limit: 1000}, users: all, more: false, total: 8},
	})
}

// Offset skips matching users from the start.
func testListUsersOffset(t *testing.T, s storage.Store) {
	org, _ := createListFixture(t, s)
	checkPages(t, s, org, []pageCase{
		{q: storage.UserQuery{Offset: 0, Limit: 2}, users: []string{"alice", "bob"}, more: true, total: 8},
		{q: storage.UserQuery{Offset: 2, Limit: 3}, users: []string{"carol.sa", "dave", "erin-bot"}, more: true, total: 8},
		{q: storage.UserQuery{Offset: 5, Limit: 2}, users: []string{"frank", "grace"}, more: true, total: 8},
		{q: storage.UserQuery{Offset: 5, Limit: 3}, users: []string{"frank", "grace", "heidi-bot"}, more: false, total: 8},
		{q: storage.UserQuery{Offset: 7, Limit: 3}, users: []string{"heidi-bot"}, more: false, total: 8},
		{q: storage.UserQuery{Offset: 8, Limit: 3}, users: nil, more: false, total: 8},
		{q: storage.UserQuery{Offset: 100, Limit: 3}, users: nil, more: false, total: 8},
		// An offset no store could reach is an empty page, not a failure.
		{q: storage.UserQuery{Offset: math.MaxInt32, Limit: 1000}, users: nil, more: false, total: 8},
		{q: storage.UserQuery{Offset: math.MaxInt - 5, Limit: 1000}, users: nil, more: false, total: 8},
		{q: storage.UserQuery{Offset: math.MaxInt, Limit: 1000}, users: nil, more: false, total: 8},
	})
}

// After starts the page at the first user sorting after it, whether or not
// a user has that name, and makes Offset ignored.
func testListUsersAfter(t *testing.T, s storage.Store) {
	org, _ := createListFixture(t, s)
	all := []string{"alice", "bob", "carol.sa", "dave", "erin-bot", "frank", "grace", "heidi-bot"}
	checkPages(t, s, org, []pageCase{
		{q: storage.UserQuery{After: "a", Limit: 100}, users: all, more: false, total: 8},
		{q: storage.UserQuery{After: "alice", Limit: 100}, users: all[1:], more: false, total: 8},
		{q: storage.UserQuery{After: "b", Limit: 2}, users: []string{"bob", "carol.sa"}, more: true, total: 8},
		{q: storage.UserQuery{After: "bob", Limit: 2}, users: []string{"carol.sa", "dave"}, more: true, total: 8},
		{q: storage.UserQuery{After: "carol", Limit: 1}, users: []string{"carol.sa"}, more: true, total: 8},
		{q: storage.UserQuery{After: "grace", Limit: 1}, users: []string{"heidi-bot"}, more: false, total: 8},
		{q: storage.UserQuery{After: "heidi-bot", Limit: 5}, users: nil, more: false, total: 8},
		{q: storage.UserQuery{After: "zzz", Limit: 5}, users: nil, more: false, total: 8},
		// Offset is ignored when After is set.
		{q: storage.UserQuery{After: "bob", Offset: 3, Limit: 2}, users: []string{"carol.sa", "dave"}, more: true, total: 8},
		{q: storage.UserQuery{After: "grace", Offset: 5, Limit: 5}, users: []string{"heidi-bot"}, more: false, total: 8},
	})
}

// ServiceAccount keeps only matching users; Total counts every matching
// user whatever the cursor; More looks only at matching users.
func testListUsersServiceAccountFilter(t *testing.T, s storage.Store) {
	org, users := createListFixture(t, s)
	sa, human := ptr(true), ptr(false)
	checkPages(t, s, org, []pageCase{
		{q: storage.UserQuery{ServiceAccount: sa, Limit: 10}, users: []string{"carol.sa", "erin-bot", "heidi-bot"}, total: 3},
		{q: storage.UserQuery{ServiceAccount: human, Limit: 10}, users: []string{"alice", "bob", "dave", "frank", "grace"}, total: 5},
		{q: storage.UserQuery{ServiceAccount: sa, Limit: 2}, users: []string{"carol.sa", "erin-bot"}, more: true, total: 3},
		{q: storage.UserQuery{ServiceAccount: sa, Limit: 3}, users: []string{"carol.sa", "erin-bot", "heidi-bot"}, more: false, total: 3},
		// With After.
		{q: storage.UserQuery{ServiceAccount: sa, After: "dave", Limit: 1}, users: []string{"erin-bot"}, more: true, total: 3},
		{q: storage.UserQuery{ServiceAccount: sa, After: "erin-bot", Limit: 1}, users: []string{"heidi-bot"}, more: false, total: 3},
		{q: storage.UserQuery{ServiceAccount: sa, After: "heidi-bot", Limit: 1}, users: nil, more: false, total: 3},
		{q: storage.UserQuery{ServiceAccount: human, After: "dave", Limit: 1}, users: []string{"frank"}, more: true, total: 5},
		// heidi-bot follows grace, but does not match: More is false.
		{q: storage.UserQuery{ServiceAccount: human, After: "dave", Limit: 2}, users: []string{"frank", "grace"}, more: false, total: 5},
		{q: storage.UserQuery{ServiceAccount: human, After: "grace", Limit: 2}, users: nil, more: false, total: 5},
		// With Offset, counted among matching users only.
		{q: storage.UserQuery{ServiceAccount: sa, Offset: 1, Limit: 1}, users: []string{"erin-bot"}, more: true, total: 3},
		{q: storage.UserQuery{ServiceAccount: sa, Offset: 2, Limit: 1}, users: []string{"heidi-bot"}, more: false, total: 3},
		{q: storage.UserQuery{ServiceAccount: sa, Offset: 3, Limit: 1}, users: nil, more: false, total: 3},
		{q: storage.UserQuery{ServiceAccount: human, Offset: 3, Limit: 5}, users: []string{"frank", "grace"}, more: false, total: 5},
		{q: storage.UserQuery{ServiceAccount: human, Offset: 4, Limit: 1}, users: []string{"grace"}, more: false, total: 5},
		{q: storage.UserQuery{ServiceAccount: human, Offset: 2, Limit: 1}, users: []string{"dave"}, more: true, total: 5},
		// After and Offset together: Offset ignored.
		{q: storage.UserQuery{ServiceAccount: sa, After: "bob", Offset: 2, Limit: 5}, users: []string{"carol.sa", "erin-bot", "heidi-bot"}, more: false, total: 3},
		{q: storage.UserQuery{ServiceAccount: human, After: "carol.sa", Offset: 1, Limit: 1}, users: []string{"dave"}, more: true, total: 5},
	})

	p, err := s.ListUsers(t.Context(), org, storage.UserQuery{ServiceAccount: sa, Limit: 10})
	require.NoError(t, err)
	for _, u := range p.Users {
		assert.True(t, u.IsServiceAccount, u.FoldedUsername)
		assertUser(t, users[u.FoldedUsername], u)
	}
}

// An org without users lists an empty page with Total 0.
func testListUsersEmptyOrg(t *testing.T, s storage.Store) {
	empty := newOrg(t, s)
	full := newOrg(t, s)
	createUser(t, s, full.ID, "alice", false)
	createUser(t, s, full.ID, "bot", true)
	checkPages(t, s, empty.ID, []pageCase{
		{q: storage.UserQuery{Limit: 10}},
		{q: storage.UserQuery{Limit: 10, Offset: 3}},
		{q: storage.UserQuery{Limit: 10, After: "a"}},
		{q: storage.UserQuery{Limit: 10, ServiceAccount: ptr(true)}},
		{q: storage.UserQuery{Limit: 10, ServiceAccount: ptr(false)}},
	})
}

// A listing shows only the org's users, and Total counts only them.
func testListUsersOrgIsolation(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	createUser(t, s, a.ID, "alice", false)
	createUser(t, s, a.ID, "carol", false)
	createUser(t, s, b.ID, "bob", false)
	createUser(t, s, b.ID, "bot", true)
	checkPages(t, s, a.ID, []pageCase{
		{q: storage.UserQuery{Limit: 10}, users: []string{"alice", "carol"}, total: 2},
		{q: storage.UserQuery{Limit: 1}, users: []string{"alice"}, more: true, total: 2},
		{q: storage.UserQuery{After: "alice", Limit: 1}, users: []string{"carol"}, total: 2},
		{q: storage.UserQuery{Limit: 10, ServiceAccount: ptr(true)}, total: 0},
	})
	checkPages(t, s, b.ID, []pageCase{
		{q: storage.UserQuery{Limit: 10}, users: []string{"bob", "bot"}, total: 2},
		{q: storage.UserQuery{After: "alice", Limit: 1}, users: []string{"bob"}, more: true, total: 2},
		{q: storage.UserQuery{Limit: 10, ServiceAccount: ptr(true)}, users: []string{"bot"}, total: 1},
	})
}

// Listings, filters and totals follow DeleteUser, and the users listed
// SetPrivileges and SetInstances.
func testListUsersReflectsChanges(t *testing.T, s storage.Store) {
	org, users := createListFixture(t, s)
	sa, human := ptr(true), ptr(false)

	dave := users["dave"]
	setPrivileges(t, s, &dave, "admin:users")
	heidi := users["heidi-bot"]
	setPrivileges(t, s, &heidi)
	deleteUser(t, s, org, "bob")
	require.NoError(t, s.SetInstances(t.Context(), org, users["alice"].ID, configB, nil))

	checkPages(t, s, org, []pageCase{
		{q: storage.UserQuery{Limit: 10}, users: []string{"alice", "carol.sa", "dave", "erin-bot", "frank", "grace", "heidi-bot"}, total: 7},
		{q: storage.UserQuery{ServiceAccount: sa, Limit: 10}, users: []string{"carol.sa", "erin-bot", "heidi-bot"}, total: 3},
		{q: storage.UserQuery{ServiceAccount: human, Limit: 10}, users: []string{"alice", "dave", "frank", "grace"}, total: 4},
		{q: storage.UserQuery{ServiceAccount: sa, After: "carol.sa", Limit: 1}, users: []string{"erin-bot"}, more: true, total: 3},
		{q: storage.UserQuery{ServiceAccount: human, Offset: 3, Limit: 1}, users: []string{"grace"}, total: 4},
		{q: storage.UserQuery{After: "alice", Limit: 1}, users: []string{"carol.sa"}, more: true, total: 7},
	})

	alice := users["alice"]
	alice.Instances = configB
	want := map[string]storage.User{"alice": alice, "dave": dave, "heidi-bot": heidi}
	p, err := s.ListUsers(t.Context(), org, storage.UserQuery{Limit: 10})
	require.NoError(t, err)
	for _, u := range p.Users {
		if w, ok := want[u.FoldedUsername]; ok {
			assertUser(t, w, u)
		}
	}
}

// walkCount is the population of the walking tests.
const walkCount = 250

// createWalkFixture creates walkCount users in a new org, in an order
// unrelated to their names, every third a service account. It returns the
// org's ID and the users by folded username.
func createWalkFixture(t testing.TB, s storage.Store) (string, map[string]storage.User) {
	t.Helper()
	org, other := newOrg(t, s), newOrg(t, s)
	users := make(map[string]storage.User, walkCount)
	for i := range walkCount {
		k := i * 97 % walkCount // 97 is prime to 250: a permutation
		u := createUser(t, s, org.ID, userName("User", k), k%3 == 0)
		users[u.FoldedUsername] = u
		if i%50 == 0 {
			createUser(t, s, other.ID, userName("User", k), false)
		}
	}
	return org.ID, users
}

// wantWalk returns the folded usernames of users that match filter, sorted.
func wantWalk(users map[string]storage.User, filter *bool) []string {
	var names []string
	for name, u := range users {
		if filter == nil || u.IsServiceAccount == *filter {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// walk lists org page by page, advancing with After (or with Offset when
// byOffset), and requires that it sees want, each exactly once, in order.
func walk(t testing.TB, s storage.Store, org string, q storage.UserQuery, byOffset bool, want []string, users map[string]storage.User) {
	t.Helper()
	var seen []string
	for pages := 0; ; pages++ {
		require.LessOrEqual(t, pages, len(want)+1, "the walk does not end")
		p, err := s.ListUsers(t.Context(), org, q)
		require.NoError(t, err, "query %s", describe(q))
		require.LessOrEqual(t, len(p.Users), q.Limit, "query %s", describe(q))
		require.Equal(t, len(want), p.Total, "query %s: Total", describe(q))
		for _, u := range p.Users {
			assertUser(t, users[u.FoldedUsername], u)
			seen = append(seen, u.FoldedUsername)
		}
		if !p.More {
			break
		}
		require.NotEmpty(t, p.Users, "query %s: More with an empty page", describe(q))
		if byOffset {
			q.Offset += len(p.Users)
		} else {
			q.After = p.Users[len(p.Users)-1].FoldedUsername
			q.Offset = 1 << 20 // ignored when After is set
		}
	}
	require.Equal(t, want, seen)
}

// Walking a large listing with the After cursor sees every matching user
// exactly once, in order, with or without a filter.
func testListUsersWalkAfter(t *testing.T, s storage.Store) {
	org, users := createWalkFixture(t, s)
	for _, c := range []struct {
		filter *bool
		limit  int
	}{{nil, 7}, {nil, walkCount}, {ptr(true), 9}, {ptr(false), 10}, {ptr(true), 1}} {
		walk(t, s, org, storage.UserQuery{Limit: c.limit, ServiceAccount: c.filter}, false, wantWalk(users, c.filter), users)
	}
}

// Walking a large listing with Offset sees every matching user exactly
// once, in order, with or without a filter.
func testListUsersWalkOffset(t *testing.T, s storage.Store) {
	org, users := createWalkFixture(t, s)
	for _, c := range []struct {
		filter *bool
		limit  int
	}{{nil, 16}, {ptr(true), 5}, {ptr(false), 25}} {
		walk(t, s, org, storage.UserQuery{Limit: c.limit, ServiceAccount: c.filter}, true, wantWalk(users, c.filter), users)
	}
}

// The page is appended to UserQuery.Into, as append gives it: after what
// Into holds, in Into's array when it has room, whatever that array held
// beyond Into's length.
func testListUsersInto(t *testing.T, s storage.Store) {
	org, users := createListFixture(t, s)
	kept := storage.User{ID: "kept", Username: "kept", FoldedUsername: "zzz-kept"}
	array := make([]storage.User, 16) // what Into's array holds beyond it
	for i := range array {
		array[i] = users["alice"]
	}
	into := array[:1]
	into[0] = kept
	p, err := s.ListUsers(t.Context(), org, storage.UserQuery{Limit: 3, After: "bob", Into: into})
	require.NoError(t, err)
	require.Len(t, p.Users, 4)
	assert.Same(t, &into[0], &p.Users[0], "the page is not in Into's array")
	assert.Equal(t, kept, p.Users[0])
	for i, name := range []string{"carol.sa", "dave", "erin-bot"} {
		assertUser(t, users[name], p.Users[i+1])
	}
	assert.True(t, p.More)
	assert.Equal(t, len(listFixture), p.Total)

	// An array without room for the page: the page, after Into's records.
	p, err = s.ListUsers(t.Context(), org, storage.UserQuery{Limit: 10, ServiceAccount: ptr(true), Into: into[:1:1]})
	require.NoError(t, err)
	require.Len(t, p.Users, 4)
	assert.Equal(t, kept, p.Users[0])
	for i, name := range []string{"carol.sa", "erin-bot", "heidi-bot"} {
		assertUser(t, users[name], p.Users[i+1])
	}
	assert.False(t, p.More)
}
