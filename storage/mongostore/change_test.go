package mongostore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/orgadmin/orgadmin/storage"
)

// With name pointers (FerretDB v1), an audited change of a user writes
// by id alone. When another audited change came between its read and
// its write, the event of that change, now overwritten, is confirmed at
// once: its change was made, and no document records it any longer.
func TestChangeByIDConfirmsTheEventItOverwrites(t *testing.T) {
	s := newTestStore(t)
	s.byPointer = true
	ctx := t.Context()
	w := newCrashWorld(t, s)
	stale, err := s.userByName(ctx, w.org, w.alice.FoldedUsername)
	require.NoError(t, err)

	// Another process's change, made, its event left pending (it died
	// before confirming it).
	other, otherID := withEvent(w.org, "instances.set", w.alice.ID)
	crashAfter(s, stepEventChanged)
	require.NoError(t, s.SetInstances(ctx, w.org, w.alice.ID, storage.InstanceConfig{ReadWrite: storage.InstanceSide{Size: "jumbo"}}, other))
	s.afterStep = nil
	require.Equal(t, int64(1), eventCount(t, s, otherID, true), "left pending")

	// This change read the user before that one: it writes over it.
	mine, mineID := withEvent(w.org, "instances.set", w.alice.ID)
	end, err := s.beginEvent(ctx, mine)
	require.NoError(t, err)
	was, err := s.changeUser(ctx, func() (userDoc, error) { return stale, nil },
		func(d userDoc) bson.D { return bson.D{{Key: "_id", Value: d.ID}} },
		func(read, was userDoc) bool { return was.alive(w.org, read.UID) },
		func(string) bson.D {
			return bson.D{{Key: "$set", Value: bson.D{{Key: "inst.rw.size", Value: "mega"}, {Key: "ev", Value: mineID}}}}
		}, nil)
	end(err)
	require.NoError(t, err)
	assert.Equal(t, otherID, was.Ev, "the document recorded the other change")
	assert.Zero(t, eventCount(t, s, otherID, true), "no longer pending")
	assert.Equal(t, int64(1), eventCount(t, s, otherID, false), "confirmed: its change was made")
	assert.Equal(t, []string{mineID, otherID}, listed(t, s, w.org)[:2], "both, in the order they were written")

	// A user deleted between the read and the write is not found; the
	// tombstone's event is confirmed all the same.
	deletion, deletionID := withEvent(w.org, "user.delete", w.alice.ID)
	crashAfter(s, stepTombstone)
	_, err = s.DeleteUser(ctx, w.org, w.alice.ID, deletion)
	require.ErrorIs(t, err, errCrash)
	s.afterStep = nil
	late, lateID := withEvent(w.org, "instances.set", w.alice.ID)
	end, err = s.beginEvent(ctx, late)
	require.NoError(t, err)
	_, err = s.changeUser(ctx, func() (userDoc, error) { return stale, nil },
		func(d userDoc) bson.D { return bson.D{{Key: "_id", Value: d.ID}} },
		func(read, was userDoc) bool { return was.alive(w.org, read.UID) },
		func(string) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: "ev", Value: lateID}}}} }, nil)
	require.Error(t, err)
	end(storage.ErrNotFound)
	assert.Zero(t, eventCount(t, s, lateID, false), "a change of no user records nothing")
	assert.Equal(t, int64(1), eventCount(t, s, deletionID, false), "the deletion was made")
}
