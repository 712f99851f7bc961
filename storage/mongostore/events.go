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

// Audit events live in two collections: audit_events holds an event
// while it is pending, its id the event's; audit_trail holds it once
// confirmed, under its place in its org's sequence ("<org>\x00<seq>", 20
// digits), with the event's id (eid, under a unique index). Listings read
// audit_trail only.
//
// Without transactions, an event and its change are two writes, ordered
// so that no crash point loses either: the event is inserted first,
// pending; the change is made; the event is confirmed: inserted into
// audit_trail and removed from audit_events. A change that is refused
// (not found, already exists, limit, conflict) removes the pending event
// instead.
// A crash, or a failure whose outcome is unknown, leaves a pending event,
// which is settled by looking at the store (resolveEvent, per action): an
// event whose change is made is confirmed, at any age, since a change
// made stays made; one whose change is not made is removed once older
// than a minute, as until then its writer may still be about to make it.
//
// What says that a change is made: the documents an audited change
// writes (users, Dives, orgs, embed sessions) hold the id of its event
// (ev), set in the same document write as the change. An audited change
// of a user or a Dive first reads the id the document holds, confirms
// that event (its change is made, and its record is about to be
// overwritten), then writes only if the document still holds that id
// (changeUser, replaceAudited); the removal of a tombstone confirms the
// deletion's event first, and the removal of tokens and sessions (with
// their user, or expired) the events of their creations. So a document's
// ev moves on only from a confirmed event, and a pending event is made
// exactly when its document holds its id (or, for a token or a user,
// whose ids are minted for one creation, when the record exists): an
// equal value written by another change, or the record of a later
// change, never confirms it.
//
// When: a listing first settles its org's pending events, the oldest
// first, confirming the made ones and removing the unmade ones recorded
// before its SettleBefore (the Service passes a minute ago), and walks
// past the unmade younger ones it leaves pending; Cleanup settles every
// pending event, removing the unmade ones older than pendingGrace, before
// it removes anything expired. So after a process is killed mid-write,
// the next listing of the org shows every change it made with its event,
// and never an event whose change was not made; such an event is removed
// by the first listing or Cleanup after it is a minute old. A listing
// reads at most listSettleMax (256) pending events, for at most
// listSettleTime (5 s): with more pending in the org, a made change
// behind those shows its event at a later listing, once older ones are
// settled, or at Cleanup.
//
// Sequence. Confirming an event gives it its Seq: the next value of its
// org's counter (a document of audit_seq keyed by the org,
// findOneAndUpdate $inc, a lookup by _id alone, which FerretDB v1 hands
// to SQLite), and the insert into audit_trail under that value is what
// makes the event visible, in one write. The unique keys of audit_trail
// make a value and an event each confirmed once: a second confirmation
// of an event finds it there and stops, and a value already taken (on
// FerretDB v1, whose $inc is a read then a write, two writers can be
// handed one value) makes the writer take another. A pending event has
// no Seq and delays nothing: once confirmed it is at the top.
//
// A walk of pages is exact through a watermark: its first page (no
// cursor) reads the highest Seq of the org in audit_trail, then fills
// every value below it that is still free (one handed to a writer that
// has not inserted yet, or never will) with a void entry, from the last
// value a listing so filled (the counter's "sealed"); it serves the
// events at or below that Seq. Later pages serve those below their
// cursor. A writer that finds its value filled takes another, above the
// watermark. So no event can take a Seq at or below a walk's top once
// its first page is read: the walk sees what was confirmed when it
// began, nothing skipped, nothing repeated, and what is confirmed later
// comes first in the next walk.
//
// The cost: confirming is one round trip more than a plain update (the
// counter, then the insert, then the removal of the pending document,
// where one update was), and one more for each value taken already; the
// first page of a walk reads the highest Seq and the counter (two round
// trips), and when values were handed out since the last walk, the Seqs
// above the last sealed one (one more), one insert for each free value
// and an update of the counter. Events recorded by an earlier version of
// this package (in audit_events, confirmed) are not listed; Cleanup
// removes them with the retention. On FerretDB v1, whose counter can
// fall back under concurrent writes, a value left free by a writer that
// died after taking it, below the last sealed one, can be taken again
// late: a walk under way then misses that one event (the next shows it,
// below its top).
//
// Limits of the check: a token's deletion counts as made when no token
// has its id, so a deletion left pending by a crash counts as made if
// the token went another way meanwhile (expired and removed, its user
// deleted, another deletion of it). On a server whose conditional write
// is a read and then a write by id (FerretDB v1), two audited changes of
// one Dive at the same instant can both pass the check of the id; the
// one overwritten first then counts as not made if its process also dies
// before confirming it. An audited change of a user there writes by id
// alone and confirms at once the event of any change it overwrote
// (changeUser), so a user's never counts as not made. Every process sharing a database must
// run a version that records event ids: an older one neither records
// them nor confirms what it overwrites.
//
// Retention: each event holds the retention (keep: its At less the
// Audit's DropBefore) and its org's bound (max) it was written under.
// Cleanup, in each org, removes the events older than now less the
// retention of the org's newest event (in audit_trail, and those of an
// earlier version in audit_events), and the oldest beyond its bound,
// with the void entries below the oldest event kept.
// Listings filter out what has expired meanwhile (the Service passes the
// retention as EventQuery.Since).

// pendingGrace is how old a pending event whose change is not made must
// be for Cleanup to remove it: far beyond an operation's timeout, so its
// writer is done with it.
const pendingGrace = time.Minute

const (
	eventsColl    = "audit_events"
	trailColl     = "audit_trail"
	eventSeqsColl = "audit_seq"
)

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

// trailDoc is a confirmed event: an eventDoc under its place in its
// org's sequence, or a void entry that holds a value no event took.
type trailDoc struct {
	Key            string    `bson:"_id"`
	EID            string    `bson:"eid"`
	Org            string    `bson:"org"`
	Seq            int64     `bson:"seq"`
	Void           bool      `bson:"void,omitempty"`
	At             time.Time `bson:"at,omitempty"`
	ActorID        string    `bson:"aid,omitempty"`
	ActorUsername  string    `bson:"aun,omitempty"`
	ActorTokenID   string    `bson:"atid,omitempty"`
	Action         string    `bson:"act,omitempty"`
	TargetKind     string    `bson:"tk,omitempty"`
	TargetID       string    `bson:"tid,omitempty"`
	TargetUsername string    `bson:"tun,omitempty"`
	RequestID      string    `bson:"rid,omitempty"`
	Before         *string   `bson:"before,omitempty"`
	After          *string   `bson:"after,omitempty"`
	Keep           int64     `bson:"keep,omitempty"`
	Max            int       `bson:"max,omitempty"`
}

// trailKey is the _id of the entry of org's sequence at seq: ordered as
// the sequence within an org.
func trailKey(org string, seq int64) string {
	return fmt.Sprintf("%s\x00%020d", org, seq)
}

// confirmed is d as confirmed at seq.
func (d eventDoc) confirmed(seq int64) trailDoc {
	return trailDoc{
		Key: trailKey(d.Org, seq), EID: d.ID, Org: d.Org, Seq: seq, At: d.At, ActorID: d.ActorID, ActorUsername: d.ActorUsername,
		ActorTokenID: d.ActorTokenID, Action: d.Action, TargetKind: d.TargetKind, TargetID: d.TargetID,
		TargetUsername: d.TargetUsername, RequestID: d.RequestID, Before: d.Before, After: d.After, Keep: d.Keep, Max: d.Max,
	}
}

func (d trailDoc) record() storage.Event {
	e := storage.Event{
		ID: d.EID, Org: d.Org, Seq: d.Seq, At: d.At.UTC(), ActorID: d.ActorID, ActorUsername: d.ActorUsername, ActorTokenID: d.ActorTokenID,
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

func eventToDoc(a *storage.Audit) eventDoc {
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

// beginEvent inserts the event of a, unless a is nil, as pending, before
// its change; the change's method defers end with its error: nil
// confirms the event, a refusal of the contract removes it, and any other
// error (an unknown outcome) leaves it pending for Cleanup.
func (s *Store) beginEvent(ctx context.Context, a *storage.Audit) (end func(error), err error) {
	if a == nil {
		return func(error) {}, nil
	}
	doc := eventToDoc(a)
	if _, err := s.events.InsertOne(ctx, doc); err != nil {
		return nil, wrap("record event", err)
	}
	if err := s.step(stepEventPending); err != nil {
		return nil, fmt.Errorf("mongostore: record event: %w", err)
	}
	id := bson.D{{Key: "_id", Value: a.Event.ID}}
	return func(err error) {
		switch {
		case err == nil:
			if s.step(stepEventChanged) != nil {
				return
			}
			// Should this fail, the next listing or Cleanup confirms it.
			_ = s.confirmEvent(ctx, doc)
		case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrAlreadyExists), errors.Is(err, storage.ErrLimitExceeded),
			errors.Is(err, storage.ErrConflict):
			// Should this fail, Cleanup finds no change and removes it.
			_, _ = s.events.DeleteOne(ctx, id)
		}
	}, nil
}

// Steps of every audited change, named for the test hook: after its
// pending event is written and before the change; after the change and
// before the event is confirmed.
const (
	stepEventPending = "event pending"
	stepEventChanged = "event changed"
	// stepTokenStored is CreateToken's, after the token is inserted and
	// before its user is checked again.
	stepTokenStored = "token stored"
)

// confirmEvent confirms the pending event d: it inserts d into
// audit_trail at the next value of its org's counter (another, when that
// value is taken), unless an earlier confirmation did, then removes d
// from audit_events. It is safe whenever the event's change is known to
// be made, by anyone, any number of times.
func (s *Store) confirmEvent(ctx context.Context, d eventDoc) error {
	if err := s.insertConfirmed(ctx, d); err != nil {
		return err
	}
	if _, err := s.events.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}}); err != nil {
		return fmt.Errorf("confirm event: %w", err)
	}
	return nil
}

// insertConfirmed inserts the pending event d into audit_trail at the
// next free value of its org's counter, unless it is there already.
func (s *Store) insertConfirmed(ctx context.Context, d eventDoc) error {
	if s.byPointer {
		select {
		case s.confirming <- struct{}{}:
			defer func() { <-s.confirming }()
		case <-ctx.Done():
			return fmt.Errorf("confirm event: %w", ctx.Err())
		}
	}
	for attempt := 1; ; attempt++ {
		seq, err := s.claimSeqs(ctx, d.Org, 1)
		if err != nil {
			return err
		}
		_, err = s.trail.InsertOne(ctx, d.confirmed(seq))
		if err == nil {
			break
		}
		if !mongo.IsDuplicateKeyError(err) {
			return fmt.Errorf("confirm event: %w", err)
		}
		// The value is taken (on FerretDB v1 often: its $inc is a read,
		// then a write), or the event confirmed already. A confirmation
		// removes the pending document once it inserted the event, so
		// the pending document, read by id (which FerretDB v1 hands to
		// SQLite, in a collection of pending events only), tells which,
		// unless a confirmer stopped between the two writes: after a few
		// tries the trail itself is searched by the event's id, which
		// FerretDB v1 does by decoding all of it.
		if attempt < confirmByPendingAttempts {
			err = s.events.FindOne(ctx, bson.D{{Key: "_id", Value: d.ID}}, options.FindOne().SetProjection(idOnly)).Err()
			if errors.Is(err, mongo.ErrNoDocuments) {
				break
			}
			if err != nil {
				return fmt.Errorf("confirm event: %w", err)
			}
			continue
		}
		err = s.trail.FindOne(ctx, bson.D{{Key: "eid", Value: d.ID}}, options.FindOne().SetProjection(idOnly)).Err()
		if err == nil {
			break
		}
		if !errors.Is(err, mongo.ErrNoDocuments) {
			return fmt.Errorf("confirm event: %w", err)
		}
		if attempt == maxSeqAttempts {
			return fmt.Errorf("confirm event: no free sequence value in %d attempts", attempt)
		}
	}
	return nil
}

// maxSeqAttempts bounds the values one confirmation tries.
const maxSeqAttempts = 100

// confirmByPendingAttempts is how many values a confirmation tries before
// it searches the trail for its event (see confirmEvent).
const confirmByPendingAttempts = 4

// confirmIfPending confirms the event id if it is still pending: the
// event a change is about to overwrite the record of, which is most
// often confirmed already (one read by id, then).
func (s *Store) confirmIfPending(ctx context.Context, id string) error {
	var d eventDoc
	err := s.events.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) || (err == nil && !d.Pending) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.confirmEvent(ctx, d)
}

// claimSeqs takes the next n values of org's event counter and returns
// the last: the values taken are last-n+1 to last.
func (s *Store) claimSeqs(ctx context.Context, org string, n int) (int64, error) {
	var c seqDoc
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: int64(n)}}}}
	opts := options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.After)
	err := s.eventSeqs.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: org}}, inc, opts).Decode(&c)
	if mongo.IsDuplicateKeyError(err) {
		// Two upserts of a new counter raced: it exists now.
		err = s.eventSeqs.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: org}}, inc, opts).Decode(&c)
	}
	if err != nil {
		return 0, fmt.Errorf("take event sequence: %w", err)
	}
	return c.N, nil
}

// seqDoc is the counter of an org's events: the last value handed out,
// and the highest below which a listing filled every free value.
type seqDoc struct {
	N      int64 `bson:"n"`
	Sealed int64 `bson:"sealed"`
}

// confirmCreations confirms the pending events of the creation of the
// tokens or embed sessions (coll) of org that match filter, before they
// are removed: they exist, so their creations were made, and once they
// are gone nothing would show it (see resolveEvent). A token's creation
// is found by its id, which is minted for it; a session's by the event
// id it holds. It returns the document ids (_id) of those it found.
func (s *Store) confirmCreations(ctx context.Context, coll *mongo.Collection, org string, filter bson.D) (bson.A, error) {
	field := "tid"
	if coll == s.sessions {
		field = "ev"
	}
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: field, Value: 1}}))
	var docs []bson.M
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil {
		return nil, fmt.Errorf("read what is removed: %w", err)
	}
	var found, ids bson.A
	for _, d := range docs {
		found = append(found, d["_id"])
		if id, ok := d[field].(string); ok && id != "" {
			ids = append(ids, id)
		}
	}
	return found, s.confirmEventsOf(ctx, coll, org, ids, "")
}

// confirmEventsOf confirms the pending events of the creation of the
// tokens of org whose ids are ids, or, for embed sessions (coll), the
// events whose ids are ids; never the event except ("" for none), that
// of the creation under way that calls it, which may reuse the id of a
// token it drops (its own event is its own to confirm or remove).
func (s *Store) confirmEventsOf(ctx context.Context, coll *mongo.Collection, org string, ids bson.A, except string) error {
	if len(ids) == 0 {
		return nil
	}
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
	if coll == s.tokens {
		filter = bson.D{
			{Key: "org", Value: org},
			{Key: "tid", Value: bson.D{{Key: "$in", Value: ids}}},
			{Key: "act", Value: bson.D{{Key: "$in", Value: bson.A{"token.create", "token.seed"}}}},
		}
		if except != "" {
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$ne", Value: except}}})
		}
	}
	filter = append(filter, bson.E{Key: "p", Value: true})
	cur, err := s.events.Find(ctx, filter)
	var docs []eventDoc
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil {
		return fmt.Errorf("confirm events: %w", err)
	}
	for _, d := range docs {
		if err := s.confirmEvent(ctx, d); err != nil {
			return fmt.Errorf("confirm events: %w", err)
		}
	}
	return nil
}

// eventID is the id of the event of a, "" when a is nil.
func eventID(a *storage.Audit) string {
	if a == nil {
		return ""
	}
	return a.Event.ID
}

// noEvent is the filter of a document no audited change has written.
var noEvent = bson.D{{Key: "$exists", Value: false}}

// lastEvent is the filter of a document whose last audited change is the
// event id ("" for none).
func lastEvent(id string) bson.E {
	if id == "" {
		return bson.E{Key: "ev", Value: noEvent}
	}
	return bson.E{Key: "ev", Value: id}
}

// ListEvents implements storage.Store: one query over the org's
// confirmed events, newest first, a row more than asked; the first page
// of a walk settles and fixes its watermark first (see Sequence above).
func (s *Store) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	if !q.SettleBefore.IsZero() && q.BeforeSeq == 0 {
		if err := s.settleOrgEvents(ctx, org, q.SettleBefore); err != nil {
			return storage.EventPage{}, err
		}
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	seq := bson.D{{Key: "$lt", Value: q.BeforeSeq}}
	if q.BeforeSeq == 0 {
		top, err := s.watermark(ctx, org)
		if err != nil {
			return storage.EventPage{}, wrap("list events", err)
		}
		seq = bson.D{{Key: "$lte", Value: top}}
	}
	filter := bson.D{{Key: "org", Value: org}, {Key: "seq", Value: seq}, {Key: "void", Value: bson.D{{Key: "$exists", Value: false}}}}
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
	opts := options.Find().SetSort(bson.D{{Key: "seq", Value: -1}}).SetLimit(int64(q.Limit) + 1)
	cur, err := s.trail.Find(ctx, filter, opts)
	if err != nil {
		return storage.EventPage{}, wrap("list events", err)
	}
	var docs []trailDoc
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

// watermark returns the top of a walk of org's events: the highest Seq
// in audit_trail, once every value below it is taken, by an event or by
// a void entry it inserts (from the counter's sealed mark up, which it
// then raises). No event can take a Seq at or below it afterwards.
func (s *Store) watermark(ctx context.Context, org string) (int64, error) {
	var top trailDoc
	err := s.trail.FindOne(ctx, bson.D{{Key: "org", Value: org}},
		options.FindOne().SetSort(bson.D{{Key: "seq", Value: -1}}).SetProjection(bson.D{{Key: "seq", Value: 1}})).Decode(&top)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the newest event: %w", err)
	}
	var c seqDoc
	err = s.eventSeqs.FindOne(ctx, bson.D{{Key: "_id", Value: org}}).Decode(&c)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, fmt.Errorf("read event sequence: %w", err)
	}
	if c.Sealed >= top.Seq {
		return top.Seq, nil
	}
	cur, err := s.trail.Find(ctx, bson.D{{Key: "org", Value: org}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: c.Sealed}, {Key: "$lte", Value: top.Seq}}}},
		options.Find().SetProjection(bson.D{{Key: "seq", Value: 1}}))
	var taken []trailDoc
	if err == nil {
		err = cur.All(ctx, &taken)
	}
	if err != nil {
		return 0, fmt.Errorf("read the sequence: %w", err)
	}
	used := make(map[int64]bool, len(taken))
	for _, d := range taken {
		used[d.Seq] = true
	}
	for v := c.Sealed + 1; v < top.Seq; v++ {
		if used[v] {
			continue
		}
		key := trailKey(org, v)
		_, err := s.trail.InsertOne(ctx, trailDoc{Key: key, EID: "\x00void\x00" + key, Org: org, Seq: v, Void: true})
		if err != nil && !mongo.IsDuplicateKeyError(err) {
			return 0, fmt.Errorf("fill sequence value %d: %w", v, err)
		}
	}
	if _, err := s.eventSeqs.UpdateOne(ctx, bson.D{{Key: "_id", Value: org}}, bson.D{{Key: "$max", Value: bson.D{{Key: "sealed", Value: top.Seq}}}},
		options.UpdateOne().SetUpsert(true)); err != nil && !mongo.IsDuplicateKeyError(err) {
		return 0, fmt.Errorf("raise the sealed mark: %w", err)
	}
	return top.Seq, nil
}

// A listing settles its org's pending events before it reads its page,
// the oldest first, listSettleBatch at a time, and reads at most
// listSettleMax of them, for at most listSettleTime (it settles one
// event at least, so that listings always make progress): the rest wait
// for the next listing or Cleanup. Each event takes a few operations,
// each bounded by Options.Timeout, so without the time bound a listing
// on a slow server could take longer than the HTTP server allows it to
// answer.
const (
	listSettleBatch = 16
	listSettleMax   = 256
	listSettleTime  = 5 * time.Second
)

// settleOrgEvents settles the pending events of org for a listing, the
// oldest first, walking past those it leaves pending (unmade, and
// recorded at or after before: a writer may be about to make them), so
// that they do not hide a made change recorded after them. It stops
// once s.settleTime has passed.
func (s *Store) settleOrgEvents(ctx context.Context, org string, before time.Time) error {
	oldestFirst := bson.D{{Key: "at", Value: 1}, {Key: "_id", Value: 1}}
	until := time.Now().Add(s.settleTime)
	var after *eventDoc
	for read := 0; read < listSettleMax; read += listSettleBatch {
		filter := bson.D{{Key: "org", Value: org}}
		if after != nil {
			filter = append(filter, bson.E{Key: "$or", Value: bson.A{
				bson.D{{Key: "at", Value: bson.D{{Key: "$gt", Value: after.At}}}},
				bson.D{{Key: "at", Value: after.At}, {Key: "_id", Value: bson.D{{Key: "$gt", Value: after.ID}}}},
			}})
		}
		batch, err := s.settleEvents(ctx, filter, oldestFirst, listSettleBatch, before, until)
		if err != nil || batch.read < listSettleBatch || batch.stopped {
			return err
		}
		after = &batch.last
	}
	return nil
}

// settleAllEvents settles every pending event, in batches of
// cleanupBatch by id, for Cleanup; those recorded before the instant
// before that are not made are removed. It returns how many it removed.
func (s *Store) settleAllEvents(ctx context.Context, before time.Time) (int, error) {
	removed, last := 0, ""
	for {
		filter := bson.D{}
		if last != "" {
			filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: last}}})
		}
		batch, err := s.settleEvents(ctx, filter, bson.D{{Key: "_id", Value: 1}}, cleanupBatch, before, time.Time{})
		removed += batch.removed
		if err != nil || batch.read < cleanupBatch {
			return removed, err
		}
		last = batch.last.ID
	}
}

// cleanupEvents removes the expired events and trims each org beyond its
// bound. It returns how many events it removed.
func (s *Store) cleanupEvents(ctx context.Context, now time.Time) (int, error) {
	return s.trimEvents(ctx, now)
}

// settled is what one settleEvents did: how many pending events it read,
// the last it settled, how many it removed, and whether it stopped at its
// time bound with some read left as they were.
type settled struct {
	read, removed int
	last          eventDoc
	stopped       bool
}

// settleEvents settles up to limit pending events that match filter, in
// the order sort: it confirms those whose change is made (resolveEvent),
// whatever their age, since a change made stays made; it removes those
// whose change is not made only when they were recorded before the
// instant before, as until then their writer may be about to make it;
// the others it leaves pending. Past the instant until (unless zero) it
// stops, having settled one event at least.
func (s *Store) settleEvents(ctx context.Context, filter, sort bson.D, limit int, before, until time.Time) (settled, error) {
	var out settled
	opCtx, cancel := s.op(ctx)
	filter = append(filter, bson.E{Key: "p", Value: true})
	cur, err := s.events.Find(opCtx, filter, options.Find().SetSort(sort).SetLimit(int64(limit)))
	var pending []eventDoc
	if err == nil {
		err = cur.All(opCtx, &pending)
	}
	cancel()
	if err != nil {
		return out, fmt.Errorf("mongostore: settle events: %w", err)
	}
	out.read = len(pending)
	for i, d := range pending {
		if i > 0 && !until.IsZero() && !time.Now().Before(until) {
			out.stopped = true
			break
		}
		out.last = d
		opCtx, cancel := s.op(ctx)
		made, err := s.resolveEvent(opCtx, d)
		switch {
		case err != nil:
		case made:
			err = s.confirmEvent(opCtx, d)
		case d.At.Before(before):
			if _, err = s.events.DeleteOne(opCtx, bson.D{{Key: "_id", Value: d.ID}}); err == nil {
				out.removed++
			}
		}
		cancel()
		if err != nil {
			return out, fmt.Errorf("mongostore: settle event %s: %w", d.ID, err)
		}
	}
	return out, nil
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
// retention of its newest, and the oldest beyond the bound of its newest,
// with the void entries below the oldest event kept.
func (s *Store) trimOrgEvents(ctx context.Context, org string, now time.Time) (int, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	newestFirst := bson.D{{Key: "seq", Value: -1}}
	events := bson.D{{Key: "org", Value: org}, {Key: "void", Value: bson.D{{Key: "$exists", Value: false}}}}
	var newest trailDoc
	err := s.trail.FindOne(ctx, events, options.FindOne().SetSort(newestFirst)).Decode(&newest)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	removed := 0
	if newest.Keep > 0 {
		expired := bson.D{{Key: "org", Value: org}, {Key: "at", Value: bson.D{{Key: "$lt", Value: now.Add(-time.Duration(newest.Keep) * time.Millisecond)}}}}
		res, err := s.trail.DeleteMany(ctx, expired)
		if err != nil {
			return 0, err
		}
		removed += int(res.DeletedCount)
		// Events of an earlier version, never listed.
		old, err := s.events.DeleteMany(ctx, append(expired, bson.E{Key: "p", Value: bson.D{{Key: "$exists", Value: false}}}))
		if err != nil {
			return removed, err
		}
		removed += int(old.DeletedCount)
	}
	if newest.Max > 0 {
		var edge trailDoc
		err = s.trail.FindOne(ctx, events,
			options.FindOne().SetSort(newestFirst).SetSkip(int64(newest.Max)-1).SetProjection(bson.D{{Key: "seq", Value: 1}})).Decode(&edge)
		switch {
		case errors.Is(err, mongo.ErrNoDocuments):
		case err != nil:
			return removed, err
		default:
			res, err := s.trail.DeleteMany(ctx, bson.D{{Key: "org", Value: org}, {Key: "seq", Value: bson.D{{Key: "$lt", Value: edge.Seq}}}})
			if err != nil {
				return removed, err
			}
			removed += int(res.DeletedCount)
		}
	}
	var oldest trailDoc
	err = s.trail.FindOne(ctx, events, options.FindOne().SetSort(bson.D{{Key: "seq", Value: 1}}).SetProjection(bson.D{{Key: "seq", Value: 1}})).Decode(&oldest)
	if err != nil {
		return removed, err // there is one: the newest
	}
	if _, err := s.trail.DeleteMany(ctx, bson.D{{Key: "org", Value: org}, {Key: "void", Value: true}, {Key: "seq", Value: bson.D{{Key: "$lt", Value: oldest.Seq}}}}); err != nil {
		return removed, err
	}
	return removed, nil
}

// resolveEvent reports whether the change of the pending event d is
// made, from what the store holds now. Users, Dives, orgs and embed
// sessions record the id of the event of the last audited change that
// wrote them (ev), in the same document write as the change; a writer
// confirms that event before an audited change of its own overwrites it
// (changeUser, PutDive), and removeUser confirms a tombstone's before it
// removes it. So a pending event named by no document was never made:
//
//   - org.create: the org's document holds the event's id;
//   - user.create: the user's document exists (live or a tombstone; the
//     id is minted for one creation), or an event records its deletion;
//   - user.delete: the user's document is a tombstone holding the id;
//   - user.grant_privilege, instances.set: the user's document holds the
//     id (an equal value written by another change does not count);
//   - dive.register: the Dive's document holds the id;
//   - token.create, token.seed: the token exists (its id is minted for
//     one creation) and its user is alive, or an event records its
//     deletion (a creation that finds its user gone takes its token out
//     again and answers NOT_FOUND, so a token of a user gone does not
//     show its creation made; a deletion of the user confirms the
//     creations of the tokens it removes itself);
//   - token.delete: no token has the id;
//   - embed_session.create: a session of the org and the Dive holds the
//     id, and its user is alive (as for a token).
func (s *Store) resolveEvent(ctx context.Context, d eventDoc) (bool, error) {
	exists := func(coll *mongo.Collection, filter bson.D) (bool, error) {
		err := coll.FindOne(ctx, filter, options.FindOne().SetProjection(idOnly)).Err()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return err == nil, err
	}
	// found reads the first document of coll that matches filter into
	// v; false when there is none.
	found := func(coll *mongo.Collection, filter bson.D, v any) (bool, error) {
		err := coll.FindOne(ctx, filter).Decode(v)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return err == nil, err
	}
	// userAlive reports whether the user id of org is alive: a token's
	// or a session's creation whose user is gone is being taken out by
	// its writer (which then answers NOT_FOUND), or was removed with its
	// user, which confirms the creations it removes first.
	userAlive := func(org, id string) (bool, error) {
		_, err := s.liveUser(ctx, org, id)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return err == nil, err
	}
	// byID reads the document id of coll, by id alone, into v; false
	// when there is none.
	byID := func(coll *mongo.Collection, id string, v any) (bool, error) {
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(v)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return err == nil, err
	}
	deletedLater := func(action string) (bool, error) {
		f := bson.D{{Key: "org", Value: d.Org}, {Key: "act", Value: action}, {Key: "tid", Value: d.TargetID}}
		ok, err := exists(s.trail, f)
		if ok || err != nil {
			return ok, err
		}
		return exists(s.events, f)
	}
	switch d.Action {
	case "org.create":
		var o orgDoc
		ok, err := byID(s.orgs, d.Org, &o)
		return ok && o.Ev == d.ID, err
	case "user.create":
		var u userDoc
		ok, err := byID(s.users, key(d.Org, d.TargetID), &u)
		if ok || err != nil {
			return ok, err
		}
		return deletedLater("user.delete")
	case "user.delete":
		var u userDoc
		ok, err := byID(s.users, key(d.Org, d.TargetID), &u)
		return ok && u.Org == nil && u.Ev == d.ID, err
	case "instances.set", "user.grant_privilege":
		var u userDoc
		ok, err := byID(s.users, key(d.Org, d.TargetID), &u)
		return ok && u.Ev == d.ID, err
	case "dive.register":
		var v diveDoc
		ok, err := byID(s.dives, key(d.Org, d.TargetID), &v)
		return ok && v.Ev == d.ID, err
	case "token.create", "token.seed":
		var t tokenDoc
		ok, err := found(s.tokens, bson.D{{Key: "tid", Value: d.TargetID}}, &t)
		switch {
		case err != nil:
			return false, err
		case ok:
			return userAlive(d.Org, t.UID)
		}
		return deletedLater("token.delete")
	case "token.delete":
		ok, err := exists(s.tokens, bson.D{{Key: "tid", Value: d.TargetID}})
		return !ok, err
	case "embed_session.create":
		var es sessionDoc
		ok, err := found(s.sessions, bson.D{{Key: "org", Value: d.Org}, {Key: "dive", Value: d.TargetID}, {Key: "ev", Value: d.ID}}, &es)
		if !ok || err != nil {
			return false, err
		}
		return userAlive(d.Org, es.UID)
	}
	return false, nil
}
