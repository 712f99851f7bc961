package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// cleanupBatch bounds how many unfinished deletes one Cleanup reads at once.
const cleanupBatch = 100

// Cleanup removes what no read can see any more: it first settles the
// audit events left pending (confirming those whose change is made,
// removing those whose change is not made that are older than a minute),
// then finishes the deletes of users that stopped part-way (a crash, a
// timeout), removes the tokens and embed sessions that are no longer
// live at now, the tombstones of revoked tokens past their time at now,
// and the audit events expired or beyond their org's bound. It
// returns how many deletes it finished plus how many tokens, sessions,
// tombstones and events it removed. The caller's clock decides, as
// everywhere; a deployment's TTL indexes, if any, are not needed. It is
// safe to run at any time, in any number of processes; each step is
// bounded by the per-operation timeout.
func (s *Store) Cleanup(ctx context.Context, now time.Time) (int, error) {
	// Pending events first: a change made is confirmed before what it
	// wrote (a token, a session) expires and is removed below.
	removed, err := s.settleAllEvents(ctx, now.Add(-pendingGrace))
	if err != nil {
		return removed, fmt.Errorf("mongostore: cleanup: %w", err)
	}
	for {
		n, err := s.finishDeletes(ctx)
		removed += n
		if err != nil {
			return removed, err
		}
		if n < cleanupBatch {
			break
		}
	}
	expired := bson.D{{Key: "exp", Value: bson.D{{Key: "$lte", Value: now}}}}
	for _, st := range []struct {
		what string
		del  func(context.Context) (int64, error)
	}{
		{"tokens", func(ctx context.Context) (int64, error) {
			res, err := s.tokens.DeleteMany(ctx, expired)
			return res.DeletedCount, err
		}},
		{"embed sessions", func(ctx context.Context) (int64, error) {
			res, err := s.sessions.DeleteMany(ctx, expired)
			return res.DeletedCount, err
		}},
		{"revoked tokens", func(ctx context.Context) (int64, error) {
			res, err := s.revoked.DeleteMany(ctx, bson.D{{Key: "until", Value: bson.D{{Key: "$lte", Value: now}}}})
			return res.DeletedCount, err
		}},
	} {
		opCtx, cancel := s.op(ctx)
		n, err := st.del(opCtx)
		cancel()
		removed += int(n)
		if err != nil {
			return removed, fmt.Errorf("mongostore: cleanup: expired %s: %w", st.what, err)
		}
	}
	n, err := s.cleanupEvents(ctx, now)
	return removed + n, err
}

// finishDeletes finishes up to cleanupBatch deletes of users that stopped
// after turning the user into a tombstone, and returns how many it
// finished.
func (s *Store) finishDeletes(ctx context.Context) (int, error) {
	opCtx, cancel := s.op(ctx)
	defer cancel()
	proj := bson.D{{Key: "_id", Value: 1}, {Key: "uid", Value: 1}, {Key: "dorg", Value: 1}, {Key: "dfkey", Value: 1}, {Key: "ev", Value: 1}}
	cur, err := s.users.Find(opCtx, bson.D{{Key: "org", Value: nil}}, options.Find().SetProjection(proj).SetLimit(cleanupBatch))
	if err != nil {
		return 0, fmt.Errorf("mongostore: cleanup: find unfinished deletes: %w", err)
	}
	var stones []userDoc
	if err := cur.All(opCtx, &stones); err != nil {
		return 0, fmt.Errorf("mongostore: cleanup: find unfinished deletes: %w", err)
	}
	for i, d := range stones {
		opCtx, cancel := s.op(ctx)
		err := s.removeUser(opCtx, d.DeletedOrg, d.UID, d.ID, d.DeletedFKey, d.Ev)
		cancel()
		if err != nil {
			return i, fmt.Errorf("mongostore: cleanup: finish delete of user %s: %w", d.UID, err)
		}
	}
	return len(stones), nil
}
