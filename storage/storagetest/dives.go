package storagetest

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var diveTests = []subtest{
	{"PutGet", testDivePutGet},
	{"Replace", testDiveReplace},
	{"Create", testDiveCreate},
	{"Missing", testDiveMissing},
	{"OtherOrg", testDiveOtherOrg},
	{"Copies", testDiveCopies},
	{"EmbedTarget", testEmbedTarget},
	{"EmbedTargetMissing", testEmbedTargetMissing},
	{"EmbedTargetOtherOrg", testEmbedTargetOtherOrg},
	{"EmbedTargetCopies", testEmbedTargetCopies},
}

// newDive builds a Dive of org with two required resources.
func newDive(org, title string) storage.Dive {
	return storage.Dive{
		ID:      uuid.NewString(),
		Org:     org,
		Title:   title,
		Version: 1,
		RequiredResources: []storage.Resource{
			{URL: "md:sales", Alias: "sales"},
			{URL: "md:_share/analytics/0a1b", Alias: "analytics"},
		},
	}
}

// getDive requires GetDive to find the dive id of org, and returns it.
func getDive(t testing.TB, s storage.Store, org, id string) storage.Dive {
	t.Helper()
	d, err := s.GetDive(t.Context(), org, id)
	require.NoError(t, err, "get dive %s", id)
	return d
}

// PutDive stores a Dive that GetDive returns whole.
func testDivePutGet(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	d := newDive(org.ID, "Revenue by region")
	d.Version = 7
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	bare := newDive(org.ID, "No resources")
	bare.RequiredResources = nil
	require.NoError(t, s.PutDive(t.Context(), bare, nil))

	assert.Equal(t, normDive(d), normDive(getDive(t, s, org.ID, d.ID)))
	got := getDive(t, s, org.ID, bare.ID)
	assert.Len(t, got.RequiredResources, 0)
	assert.Equal(t, normDive(bare), normDive(got))
}

// A second PutDive with the same (Org, ID) replaces the first.
func testDiveReplace(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	d := newDive(org.ID, "v1")
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	other := newDive(org.ID, "other")
	require.NoError(t, s.PutDive(t.Context(), other, nil))

	v2 := d
	v2.Title = "v2"
	v2.Version = 2
	v2.RequiredResources = []storage.Resource{{URL: "md:inventory", Alias: "inv"}}
	require.NoError(t, s.PutDive(t.Context(), v2, nil))
	assert.Equal(t, normDive(v2), normDive(getDive(t, s, org.ID, d.ID)))

	v3 := v2
	v3.Version = 3
	v3.RequiredResources = nil
	require.NoError(t, s.PutDive(t.Context(), v3, nil))
	assert.Equal(t, normDive(v3), normDive(getDive(t, s, org.ID, d.ID)))

	assert.Equal(t, normDive(other), normDive(getDive(t, s, org.ID, other.ID)))
}

// CreateDive stores a Dive the org does not hold, and refuses, changing
// nothing, one it holds, whoever stored it; the same id is free in
// another org.
func testDiveCreate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a, b := newOrg(t, s), newOrg(t, s)
	d := newDive(a.ID, "first")
	require.NoError(t, s.CreateDive(ctx, d, nil))
	assert.Equal(t, normDive(d), normDive(getDive(t, s, a.ID, d.ID)))

	again := d
	again.Title, again.Version, again.RequiredResources = "second", 2, nil
	require.ErrorIs(t, s.CreateDive(ctx, again, nil), storage.ErrAlreadyExists)
	assert.Equal(t, normDive(d), normDive(getDive(t, s, a.ID, d.ID)), "kept as it was")

	put := newDive(a.ID, "put")
	require.NoError(t, s.PutDive(ctx, put, nil))
	require.ErrorIs(t, s.CreateDive(ctx, again, nil), storage.ErrAlreadyExists, "a Dive PutDive stored")
	put.Title = "replaced"
	require.NoError(t, s.PutDive(ctx, put, nil), "PutDive replaces a Dive CreateDive stored")

	inB := again
	inB.Org = b.ID
	require.NoError(t, s.CreateDive(ctx, inB, nil))
	assert.Equal(t, normDive(inB), normDive(getDive(t, s, b.ID, d.ID)))
	assert.Equal(t, normDive(d), normDive(getDive(t, s, a.ID, d.ID)))

	noOrg := newDive(uuid.NewString(), "x")
	require.ErrorIs(t, s.CreateDive(ctx, noOrg, nil), storage.ErrNotFound)
	_, err := s.GetDive(ctx, noOrg.Org, noOrg.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// GetDive of an unknown id is ErrNotFound.
func testDiveMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	_, err := s.GetDive(t.Context(), org.ID, uuid.NewString())
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, s.PutDive(t.Context(), newDive(org.ID, "x"), nil))
	_, err = s.GetDive(t.Context(), org.ID, uuid.NewString())
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// A Dive of org A is not found through org B; the same id in two orgs names
// two Dives.
func testDiveOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	d := newDive(a.ID, "in A")
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	_, err := s.GetDive(t.Context(), b.ID, d.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)

	inB := d
	inB.Org = b.ID
	inB.Title = "in B"
	inB.RequiredResources = nil
	require.NoError(t, s.PutDive(t.Context(), inB, nil))
	assert.Equal(t, normDive(d), normDive(getDive(t, s, a.ID, d.ID)))
	assert.Equal(t, normDive(inB), normDive(getDive(t, s, b.ID, d.ID)))
}

// Mutating a Dive's resources after PutDive, or those GetDive returns,
// changes nothing stored.
func testDiveCopies(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	d := newDive(org.ID, "copies")
	want := d
	want.RequiredResources = []storage.Resource{d.RequiredResources[0], d.RequiredResources[1]}
	d.RequiredResources = append(make([]storage.Resource, 0, 8), d.RequiredResources...)
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	scribble(d.RequiredResources, storage.Resource{URL: "mutated"})
	assert.Equal(t, normDive(want), normDive(getDive(t, s, org.ID, d.ID)), "after mutating PutDive's argument")

	got := getDive(t, s, org.ID, d.ID)
	scribble(got.RequiredResources, storage.Resource{URL: "mutated"})
	assert.Equal(t, normDive(want), normDive(getDive(t, s, org.ID, d.ID)), "after mutating GetDive's result")
}

// GetEmbedTarget reads the Dive and the user together.
func testEmbedTarget(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	d := newDive(org.ID, "Sales")
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	u := createUser(t, s, org.ID, "Robot", true)

	got, err := s.GetEmbedTarget(t.Context(), org.ID, d.ID, u.FoldedUsername)
	require.NoError(t, err)
	assert.True(t, got.DiveFound)
	assert.True(t, got.UserFound)
	assert.Equal(t, normDive(d), normDive(got.Dive))
	assertUser(t, u, got.User)
}

// A missing Dive or user is a false Found flag, not an error.
func testEmbedTargetMissing(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	d := newDive(org.ID, "Sales")
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	u := createUser(t, s, org.ID, "robot", true)

	got, err := s.GetEmbedTarget(t.Context(), org.ID, d.ID, "nobody")
	require.NoError(t, err)
	assert.True(t, got.DiveFound)
	assert.False(t, got.UserFound)
	assert.Equal(t, storage.User{}, got.User)

	got, err = s.GetEmbedTarget(t.Context(), org.ID, uuid.NewString(), u.FoldedUsername)
	require.NoError(t, err)
	assert.False(t, got.DiveFound)
	assert.True(t, got.UserFound)
	assert.Equal(t, storage.Dive{}, got.Dive)

	got, err = s.GetEmbedTarget(t.Context(), "no-such-org", d.ID, u.FoldedUsername)
	require.NoError(t, err)
	assert.Equal(t, storage.EmbedTarget{}, got)
}

// Neither the Dive nor the user of another org is found.
func testEmbedTargetOtherOrg(t *testing.T, s storage.Store) {
	a, b := newOrg(t, s), newOrg(t, s)
	d := newDive(a.ID, "Sales")
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	u := createUser(t, s, a.ID, "robot", true)

	got, err := s.GetEmbedTarget(t.Context(), b.ID, d.ID, u.FoldedUsername)
	require.NoError(t, err)
	assert.Equal(t, storage.EmbedTarget{}, got)
}

// Mutating what GetEmbedTarget returns changes nothing stored.
func testEmbedTargetCopies(t *testing.T, s storage.Store) {
	org := newOrg(t, s)
	d := newDive(org.ID, "Sales")
	require.NoError(t, s.PutDive(t.Context(), d, nil))
	u := newUser(org.ID, "robot", true)
	u.Privileges = []string{"a", "b"}
	require.NoError(t, s.CreateUser(t.Context(), u, storage.UserLimit{}, nil))

	got, err := s.GetEmbedTarget(t.Context(), org.ID, d.ID, u.FoldedUsername)
	require.NoError(t, err)
	scribble(got.Dive.RequiredResources, storage.Resource{URL: "md:changed"})
	scribble(got.User.Privileges, "changed")

	again, err := s.GetEmbedTarget(t.Context(), org.ID, d.ID, u.FoldedUsername)
	require.NoError(t, err)
	assert.Equal(t, normDive(d), normDive(again.Dive))
	assertUser(t, u, again.User)
}
