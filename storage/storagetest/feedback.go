package storagetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

var feedbackTests = []subtest{
	{"Add", testFeedbackAdd},
	{"DuplicateID", testFeedbackDuplicateID},
}

func newFeedback(text string) storage.Feedback {
	return storage.Feedback{
		ID:        uuid.NewString(),
		PagePath:  "/docs/getting-started",
		Text:      text,
		PageTitle: "Getting started",
		Source:    "docs",
		CreatedAt: t0,
	}
}

// AddFeedback stores submissions with distinct IDs.
func testFeedbackAdd(t *testing.T, s storage.Store) {
	require.NoError(t, s.AddFeedback(t.Context(), newFeedback("great")))
	f := newFeedback("same text, another submission")
	f.CreatedAt = at(time.Millisecond)
	require.NoError(t, s.AddFeedback(t.Context(), f))
	require.NoError(t, s.AddFeedback(t.Context(), storage.Feedback{ID: uuid.NewString()}))
}

// AddFeedback with a taken ID is ErrAlreadyExists.
func testFeedbackDuplicateID(t *testing.T, s storage.Store) {
	f := newFeedback("first")
	require.NoError(t, s.AddFeedback(t.Context(), f))
	dup := newFeedback("second")
	dup.ID = f.ID
	require.ErrorIs(t, s.AddFeedback(t.Context(), dup), storage.ErrAlreadyExists)
	require.ErrorIs(t, s.AddFeedback(t.Context(), f), storage.ErrAlreadyExists)
}
