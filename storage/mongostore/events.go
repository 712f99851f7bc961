package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// Audit events live in the collection audit_events, one document each,
// its id the event's.
//
// Without transactions, an event and its change are two writes, ordered
// so that no crash point loses either: the event is inserted first,
// marked pending (p: true); the change is made; the mark is removed. A
// change that is refused (not found, already exists, limit) removes the
// pending event instead. Readers never show a pending event. A crash, or
// a failure whose outcome is unknown, leaves a pending event, which is
// settled by looking at the store: if its change happened (resolveEvent,
// per action), the mark is removed, and otherwise the event is. A listing
// settles the org's pending events recorded before its SettleBefore (the
// Service passes a minute ago), and Cleanup those of every org older
// than pendingGrace. So once settled, every change has its event and
// every event its change; until then (a minute) a change whose process
// died mid-way may be missing from listings, never the reverse.
//
// Retention: each event holds the retention (keep: its At less the
// Audit's DropBefore) and its org's bound (max) it was written under.
// Cleanup, in each org, removes the events older than now less the
// retention of the org's newest event, and the oldest beyond its bound.
// Listings filter out what has expired meanwhile (the Service passes the
// retention as EventQuery.Since).

// pendingGrace is how old a pending event must be for Cleanup to resolve
// it: far beyond an operation's timeout, so its writer is done with it.
const pendingGrace = time.Minute

const eventsColl = "audit_events"

// eventDoc is an audit event.
type eventDoc struct {
	ID             string    `bson:"_id"`
	Org            string    `bson:"org"`
	At             time.Time `bson:"at"`
	ActorID        string    `bson:"aid,omitempty"`
	ActorUsername  string    `bson:"aun,omitempty"`
	ActorTokenID   string    `bson:"atid,omitempty"`
	Action         string    `bson:"act"`
	TargetKind     string    `bson:"tk,omitempty"`
	TargetID       string    `bson:"tid,omitempty"`
	TargetUsername string    `bson:"tun,omitempty"`
	RequestID      string    `bson:"rid,omitempty"`
	Before         *string   `bson:"before,omitempty"`
	After          *string   `bson:"after,omitempty"`
	// Pending is set until the change is made.
	Pending bool `bson:"p,omitempty"`
	// Keep is how long, in milliseconds, the org's events are kept; zero
	// for ever.
	Keep int64 `bson:"keep,omitempty"`
	// Max is the bound of the org's events the event was written under.
	Max int `bson:"max,omitempty"`
}

func eventToDoc(a storage.Audit) eventDoc {
	e := a.Event
	d := eventDoc{
		ID: e.ID, Org: e.Org, At: e.At, ActorID: e.ActorID, ActorUsername: e.ActorUsername, ActorTokenID: e.ActorTokenID,
		Action: e.Action, TargetKind: e.TargetKind, TargetID: e.TargetID, TargetUsername: e.TargetUsername,
		RequestID: e.RequestID, Pending: true, Max: max(a.MaxPerOrg, 0),
	}
	if e.Before != nil {
		b := string(e.Before)
		d.Before = &b
	}
	if e.After != nil {
		b := string(e.After)
		d.After = &b
	}
	if !a.DropBefore.IsZero() {
		d.Keep = max(e.At.Sub(a.DropBefore).Milliseconds(), 1)
	}
	return d
}

func (d eventDoc) record() storage.Event {
	e := storage.Event{
		ID: d.ID, Org: d.Org, At: d.At.UTC(), ActorID: d.ActorID, ActorUsername: d.ActorUsername, ActorTokenID: d.ActorTokenID,
		Action: d.Action, TargetKind: d.TargetKind, TargetID: d.TargetID, TargetUsername: d.TargetUsername, RequestID: d.RequestID,
	}
	if d.Before != nil {
		e.Before = []byte(*d.Before)
	}
	if d.After != nil {
		e.After = []byte(*d.After)
	}
	return e
}

// beginEvent inserts the event ctx carries, if any, as pending, before
// its change; the change's method defers end with its error: nil
// confirms the event, a refusal of the contract removes it, and any other
// error (an unknown outcome) leaves it pending for Cleanup.
func (s *Store) beginEvent(ctx context.Context) (end func(error), err error) {
	a, ok := storage.AuditOf(ctx)
	if !ok {
		return func(error) {}, nil
	}
	if _, err := s.events.InsertOne(ctx, eventToDoc(a)); err != nil {
		return nil, wrap("record event", err)
	}
	if err := s.step(stepEventPending); err != nil {
		return nil, fmt.Errorf("mongostore: record event: %w", err)
	}
	id := bson.D{{Key: "_id", Value: a.Event.ID}}
	return func(err error) {
		switch {
		case err == nil:
			// Should this fail, Cleanup confirms the event later.
			_, _ = s.events.UpdateOne(ctx, id, bson.D{{Key: "$unset", Value: bson.D{{Key: "p", Value: ""}}}})
		case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrAlreadyExists), errors.Is(err, storage.ErrLimitExceeded):
			// Should this fail, Cleanup finds no change and removes it.
			_, _ = s.events.DeleteOne(ctx, id)
		}
	}, nil
}

// stepEventPending is the step, for the test hook, after a pending event
// is written and before its change.
const stepEventPending = "event pending"

// ListEvents implements storage.Store: one query over the org's
// confirmed events, newest first, a row more than asked.
func (s *Store) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	if !q.SettleBefore.IsZero() {
		if _, err := s.settleEvents(ctx, bson.D{{Key: "org", Value: org}}, q.SettleBefore); err != nil {
			return storage.EventPage{}, err
		}
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	filter := bson.D{{Key: "org", Value: org}, {Key: "p", Value: bson.D{{Key: "$exists", Value: false}}}}
	for _, f := range []struct{ key, v string }{
		{"act", q.Action}, {"aid", q.ActorID}, {"aun", q.ActorUsername},
		{"tk", q.TargetKind}, {"tid", q.TargetID}, {"tun", q.TargetUsername},
	} {
		if f.v != "" {
			filter = append(filter, bson.E{Key: f.key, Value: f.v})
		}
	}
	at := bson.D{}
	if !q.Since.IsZero() {
		at = append(at, bson.E{Key: "$gte", Value: q.Since})
	}
	if !q.Until.IsZero() {
		at = append(at, bson.E{Key: "$lt", Value: q.Until})
	}
	if len(at) > 0 {
		filter = append(filter, bson.E{Key: "at", Value: at})
	}
	if q.BeforeID != "" {
		filter = append(filter, bson.E{Key: "$or", Value: bson.A{
			bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: q.BeforeAt}}}},
			bson.D{{Key: "at", Value: q.BeforeAt}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: q.BeforeID}}}},
		}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "at", Value: -1}, {Key: "_id", Value: -1}}).SetLimit(int64(q.Limit) + 1)
	cur, err := s.events.Find(ctx, filter, opts)
	if err != nil {
		return storage.EventPage{}, wrap("list events", err)
	}
	var docs []eventDoc
	if err := cur.All(ctx, &docs); err != nil {
		return storage.EventPage{}, wrap("list events", err)
	}
	page := storage.EventPage{Events: q.Into}
	for i, d := range docs {
		if i == q.Limit {
			page.More = true
			break
		}
		page.Events = append(page.Events, d.record())
	}
	return page, nil
}

// cleanupEvents resolves the pending events older than pendingGrace,
// removes the expired events, and trims each org beyond its bound. It
// returns how many events it removed.
func (s *Store) cleanupEvents(ctx context.Context, now time.Time) (int, error) {
	removed, err := s.settleEvents(ctx, bson.D{}, now.Add(-pendingGrace))
	if err != nil {
		return removed, fmt.Errorf("mongostore: cleanup: %w", err)
	}
	n, err := s.trimEvents(ctx, now)
	return removed + n, err
}

// settleEvents settles up to cleanupBatch pending events that match
// filter and were recorded before the instant before: it keeps those
// whose change was made and removes the others. It returns how many it
// removed.
func (s *Store) settleEvents(ctx context.Context, filter bson.D, before time.Time) (int, error) {
	removed := 0
	opCtx, cancel := s.op(ctx)
	filter = append(filter, bson.E{Key: "p", Value: true}, bson.E{Key: "at", Value: bson.D{{Key: "$lt", Value: before}}})
	cur, err := s.events.Find(opCtx, filter, options.Find().SetLimit(cleanupBatch))
	var pending []eventDoc
	if err == nil {
		err = cur.All(opCtx, &pending)
	}
	cancel()
	if err != nil {
		return 0, fmt.Errorf("mongostore: settle events: %w", err)
	}
	for _, d := range pending {
		opCtx, cancel := s.op(ctx)
		happened, err := s.resolveEvent(opCtx, d)
		if err == nil {
			id := bson.D{{Key: "_id", Value: d.ID}}
			if happened {
				_, err = s.events.UpdateOne(opCtx, id, bson.D{{Key: "$unset", Value: bson.D{{Key: "p", Value: ""}}}})
			} else {
				_, err = s.events.DeleteOne(opCtx, id)
				removed++
			}
		}
		cancel()
		if err != nil {
			return removed, fmt.Errorf("mongostore: settle event %s: %w", d.ID, err)
		}
	}
	return removed, nil
}

// trimEvents removes, in every org, the events past the retention and
// beyond the bound its newest event was written under.
func (s *Store) trimEvents(ctx context.Context, now time.Time) (int, error) {
	opCtx, cancel := s.op(ctx)
	cur, err := s.orgs.Find(opCtx, bson.D{}, options.Find().SetProjection(idOnly))
	var orgs []orgDoc
	if err == nil {
		err = cur.All(opCtx, &orgs)
	}
	cancel()
	if err != nil {
		return 0, fmt.Errorf("mongostore: cleanup: orgs: %w", err)
	}
	removed := 0
	for _, o := range orgs {
		org := o.ID
		n, err := s.trimOrgEvents(ctx, org, now)
		removed += n
		if err != nil {
			return removed, fmt.Errorf("mongostore: cleanup: trim events of %s: %w", org, err)
		}
	}
	return removed, nil
}

// trimOrgEvents removes the events of org older than now less the
// retention of its newest, and the oldest beyond the bound of its newest.
func (s *Store) trimOrgEvents(ctx context.Context, org string, now time.Time) (int, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	newestFirst := bson.D{{Key: "at", Value: -1}, {Key: "_id", Value: -1}}
	var newest eventDoc
	err := s.events.FindOne(ctx, bson.D{{Key: "org", Value: org}}, options.FindOne().SetSort(newestFirst)).Decode(&newest)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	if newest.Keep > 0 {
		res, err := s.events.DeleteMany(ctx, bson.D{{Key: "org", Value: org},
			{Key: "at", Value: bson.D{{Key: "$lt", Value: now.Add(-time.Duration(newest.Keep) * time.Millisecond)}}}})
		if err != nil {
			return 0, err
		}
		removed += int(res.DeletedCount)
	}
	if newest.Max <= 0 {
		return removed, nil
	}
	var edge eventDoc
	err = s.events.FindOne(ctx, bson.D{{Key: "org", Value: org}},
		options.FindOne().SetSort(newestFirst).SetSkip(int64(newest.Max)-1).SetProjection(bson.D{{Key: "at", Value: 1}})).Decode(&edge)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return removed, nil
	}
	if err != nil {
		return removed, err
	}
	res, err := s.events.DeleteMany(ctx, bson.D{{Key: "org", Value: org}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: edge.At}}}},
		bson.D{{Key: "at", Value: edge.At}, {Key: "_id", Value: bson.D{{Key: "$lt", Value: edge.ID}}}},
	}}})
	if err != nil {
		return removed, err
	}
	return removed + int(res.DeletedCount), nil
}

// resolveEvent reports whether the change of the pending event d
// happened, from what the store holds now:
//
//   - org.create: the org exists, created at the event's time;
//   - user.create: the user exists (alive or being deleted), or an event
//     records its deletion;
//   - user.delete: no live user has the id;
//   - token.create, token.seed: the token exists, or an event records
//     its deletion;
//   - token.delete: no token has the id;
//   - instances.set, user.grant_privilege: the user exists (a value,
//     once later changes came, cannot tell whether this one was made
//     before them: a pending change of a user that exists is taken as
//     made);
//   - dive.register: the Dive exists;
//   - embed_session.create: a session of the org, the Dive and the user
//     created at the event's time exists.
func (s *Store) resolveEvent(ctx context.Context, d eventDoc) (bool, error) {
	exists := func(coll *mongo.Collection, filter bson.D) (bool, error) {
		err := coll.FindOne(ctx, filter, options.FindOne().SetProjection(idOnly)).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return err == nil, err
	}
	deletedLater := func(action string) (bool, error) {
		return exists(s.events, bson.D{{Key: "org", Value: d.Org}, {Key: "act", Value: action}, {Key: "tid", Value: d.TargetID}})
	}
	switch d.Action {
	case "org.create":
		return exists(s.orgs, bson.D{{Key: "_id", Value: d.Org}, {Key: "created", Value: d.At}})
	case "user.create":
		ok, err := exists(s.users, bson.D{{Key: "uid", Value: d.TargetID}})
		if ok || err != nil {
			return ok, err
		}
		return deletedLater("user.delete")
	case "user.delete":
		ok, err := exists(s.users, bson.D{{Key: "uid", Value: d.TargetID}, {Key: "org", Value: d.Org}})
		return !ok, err
	case "token.create", "token.seed":
		ok, err := exists(s.tokens, bson.D{{Key: "tid", Value: d.TargetID}})
		if ok || err != nil {
			return ok, err
		}
		return deletedLater("token.delete")
	case "token.delete":
		ok, err := exists(s.tokens, bson.D{{Key: "tid", Value: d.TargetID}})
		return !ok, err
	case "instances.set", "user.grant_privilege":
		return exists(s.users, bson.D{{Key: "uid", Value: d.TargetID}, {Key: "org", Value: d.Org}})
	case "dive.register":
		return exists(s.dives, bson.D{{Key: "org", Value: d.Org}, {Key: "did", Value: d.TargetID}})
	case "embed_session.create":
		return exists(s.sessions, bson.D{{Key: "org", Value: d.Org}, {Key: "dive", Value: d.TargetID}, {Key: "created", Value: d.At}})
	}
	return false, nil
}
