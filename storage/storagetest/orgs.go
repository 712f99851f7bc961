package storagetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var orgTests = []subtest{
	{"CreateGet", testOrgCreateGet},
	{"Duplicate", testOrgDuplicate},
	{"GetMissing", testOrgGetMissing},
}

var seedMarkTests = []subtest{
	{"RoundTrip", testSeedMarksRoundTrip},
	{"OutliveRecords", testSeedMarksOutliveRecords},
}

var pingTests = []subtest{
	{"Ping", func(t *testing.T, s storage.Store) { require.NoError(t, s.Ping(t.Context())) }},
}

// CreateOrg stores an org that GetOrg returns, time included.
func testOrgCreateGet(t *testing.T, s storage.Store) {
	o := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
	require.NoError(t, s.CreateOrg(t.Context(), o, nil))
	other := storage.Org{ID: uuid.NewString(), CreatedAt: at(time.Second)}
	require.NoError(t, s.CreateOrg(t.Context(), other, nil))

	got, err := s.GetOrg(t.Context(), o.ID)
	require.NoError(t, err)
	assert.Equal(t, o.ID, got.ID)
	assertTime(t, "Org.CreatedAt", o.CreatedAt, got.CreatedAt)

	got, err = s.GetOrg(t.Context(), other.ID)
	require.NoError(t, err)
	assert.Equal(t, other.ID, got.ID)
	assertTime(t, "Org.CreatedAt", other.CreatedAt, got.CreatedAt)
}

// CreateOrg with a taken ID is ErrAlreadyExists and changes nothing.
func testOrgDuplicate(t *testing.T, s storage.Store) {
	o := newOrg(t, s)
	err := s.CreateOrg(t.Context(), storage.Org{ID: o.ID, CreatedAt: past}, nil)
	require.ErrorIs(t, err, storage.ErrAlreadyExists)

	got, err := s.GetOrg(t.Context(), o.ID)
	require.NoError(t, err)
	assertTime(t, "Org.CreatedAt", o.CreatedAt, got.CreatedAt)
}

// GetOrg of an unknown ID is ErrNotFound.
func testOrgGetMissing(t *testing.T, s storage.Store) {
	_, err := s.GetOrg(t.Context(), uuid.NewString())
	require.ErrorIs(t, err, storage.ErrNotFound)

	newOrg(t, s)
	_, err = s.GetOrg(t.Context(), uuid.NewString())
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// MarkSeeded records keys per org, again and again without change, and
// SeedMarks returns them; an org without marks (even one that does not
// exist) has none.
func testSeedMarksRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := newOrg(t, s)
	other := newOrg(t, s)
	marks, err := s.SeedMarks(ctx, o.ID)
	require.NoError(t, err)
	assert.Empty(t, marks)

	require.NoError(t, s.MarkSeeded(ctx, o.ID, []string{"user:alice", "token:ab12"}))
	require.NoError(t, s.MarkSeeded(ctx, o.ID, []string{"token:ab12", "user:bob"}))
	require.NoError(t, s.MarkSeeded(ctx, o.ID, nil))
	require.NoError(t, s.MarkSeeded(ctx, other.ID, []string{"user:carol"}))
	missing := uuid.NewString()
	require.NoError(t, s.MarkSeeded(ctx, missing, []string{"user:dave"}))

	marks, err = s.SeedMarks(ctx, o.ID)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"user:alice", "token:ab12", "user:bob"}, marks)
	marks, err = s.SeedMarks(ctx, other.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:carol"}, marks)
	marks, err = s.SeedMarks(ctx, missing)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:dave"}, marks)
	marks, err = s.SeedMarks(ctx, uuid.NewString())
	require.NoError(t, err)
	assert.Empty(t, marks)
}

// Marks stay when the records they name are deleted.
func testSeedMarksOutliveRecords(t *testing.T, s storage.Store) {
	ctx := t.Context()
	o := newOrg(t, s)
	u := createUser(t, s, o.ID, "alice", false)
	require.NoError(t, s.MarkSeeded(ctx, o.ID, []string{"user:alice"}))
	_, err := s.DeleteUser(ctx, o.ID, u.ID, nil)
	require.NoError(t, err)
	marks, err := s.SeedMarks(ctx, o.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"user:alice"}, marks)
}
