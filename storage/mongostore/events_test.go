package mongostore

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin/storage"
)

// withEvent is ctx carrying an audit event of org at t0.
func withEvent(ctx context.Context, org, action, target string) (context.Context, string) {
	id := uuid.NewString()
	return storage.WithAudit(ctx, storage.Audit{Event: storage.Event{
		ID: id, Org: org, At: t0, ActorUsername: "system", Action: action, TargetID: target,
	}}), id
}

// listed returns the ids of the org's listed events.
func listed(t *testing.T, s *Store, org string) []string {
	t.Helper()
	page, err := s.ListEvents(t.Context(), org, storage.EventQuery{Limit: 100})
	require.NoError(t, err)
	ids := []string{}
	for _, e := range page.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

// A change that stops at any of its crash points leaves its event pending,
// which no listing shows; once the event is old enough, a listing (with
// SettleBefore) or Cleanup keeps it exactly when the change was made:
// then every change has its event and every event its change.
func TestEventCrashPoints(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	for _, c := range []struct {
		name, stop string
		made       bool // whether the change is made when the call stops
		// run makes the change (a deletion of u); nil creates a user.
		run    func(ctx context.Context, s *Store, org string, u storage.User) error
		action string
	}{
		{"user created, not yet confirmed", stepCreateUser, true, nil, "user.create"},
		{"before the user is created", stepEventPending, false, nil, "user.create"},
		{"user tombstoned", stepTombstone, true, func(ctx context.Context, s *Store, org string, u storage.User) error {
			_, err := s.DeleteUser(ctx, org, u.FoldedUsername)
			return err
		}, "user.delete"},
		{"before the user is deleted", stepEventPending, false, func(ctx context.Context, s *Store, org string, u storage.User) error {
			_, err := s.DeleteUser(ctx, org, u.FoldedUsername)
			return err
		}, "user.delete"},
	} {
		for _, bySettling := range []bool{false, true} {
			name := c.name + ", settled by Cleanup"
			if bySettling {
				name = c.name + ", settled by a listing"
			}
			t.Run(name, func(t *testing.T) {
				s := newTestStore(t)
				ctx := t.Context()
				org := storage.Org{ID: uuid.NewString(), CreatedAt: t0}
				require.NoError(t, s.CreateOrg(ctx, org))
				alice := crashUser(org.ID, "Alice")
				require.NoError(t, s.CreateUser(ctx, alice, storage.UserLimit{}))

				target := alice.ID
				crashAfter(s, c.stop)
				ectx, id := withEvent(ctx, org.ID, c.action, target)
				if c.action == "user.create" {
					carol := crashUser(org.ID, "Carol")
					target = carol.ID
					ectx, id = withEvent(ctx, org.ID, c.action, target)
					err := s.CreateUser(ectx, carol, storage.UserLimit{})
					require.ErrorIs(t, err, errCrash)
				} else {
					require.ErrorIs(t, c.run(ectx, s, org.ID, alice), errCrash)
				}
				s.afterStep = nil
				require.Empty(t, listed(t, s, org.ID), "a pending event is not listed")

				// Too young to settle: its writer may still be at work.
				_, err := s.Cleanup(ctx, t0)
				require.NoError(t, err)
				page, err := s.ListEvents(ctx, org.ID, storage.EventQuery{Limit: 10, SettleBefore: t0})
				require.NoError(t, err)
				require.Empty(t, page.Events)
				require.Empty(t, listed(t, s, org.ID))

				// Settled by a listing, or by Cleanup.
				if bySettling {
					_, err = s.ListEvents(ctx, org.ID, storage.EventQuery{Limit: 10, SettleBefore: later})
				} else {
					_, err = s.Cleanup(ctx, later)
				}
				require.NoError(t, err)
				if c.made {
					require.Equal(t, []string{id}, listed(t, s, org.ID), "the change was made: its event is kept")
				} else {
					require.Empty(t, listed(t, s, org.ID), "no change: no event")
					n, err := s.events.CountDocuments(ctx, map[string]any{"_id": id})
					require.NoError(t, err)
					require.Zero(t, n, "the pending event is removed")
				}
			})
		}
	}
}
