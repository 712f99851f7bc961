package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// diveDoc is a Dive; its id is key(org, Dive id).
type diveDoc struct {
	ID        string        `bson:"_id"`
	Org       string        `bson:"org"`
	DID       string        `bson:"did"`
	Title     string        `bson:"title"`
	Version   int           `bson:"version"`
	Resources []resourceDoc `bson:"res,omitempty"`
	// Ev is the id of the event of the last audited change that wrote
	// the Dive (see resolveEvent).
	Ev string `bson:"ev,omitempty"`
}

type resourceDoc struct {
	URL   string `bson:"url"`
	Alias string `bson:"alias,omitempty"`
}

func resourcesToDoc(rs []storage.Resource) []resourceDoc {
	if len(rs) == 0 {
		return nil
	}
	out := make([]resourceDoc, len(rs))
	for i, r := range rs {
		out[i] = resourceDoc{URL: r.URL, Alias: r.Alias}
	}
	return out
}

func resourcesRecord(rs []resourceDoc) []storage.Resource {
	if len(rs) == 0 {
		return nil
	}
	out := make([]storage.Resource, len(rs))
	for i, r := range rs {
		out[i] = storage.Resource{URL: r.URL, Alias: r.Alias}
	}
	return out
}

func diveToDoc(d storage.Dive) diveDoc {
	return diveDoc{
		ID:        key(d.Org, d.ID),
		Org:       d.Org,
		DID:       d.ID,
		Title:     d.Title,
		Version:   d.Version,
		Resources: resourcesToDoc(d.RequiredResources),
	}
}

func (d diveDoc) record() storage.Dive {
	return storage.Dive{
		ID:                d.DID,
		Org:               d.Org,
		Title:             d.Title,
		Version:           d.Version,
		RequiredResources: resourcesRecord(d.Resources),
	}
}

// PutDive implements storage.Store.
func (s *Store) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return s.writeDive(ctx, "put dive", d, a, func(ctx context.Context, doc diveDoc) error {
		return s.replaceAudited(ctx, s.dives, doc.ID, doc)
	})
}

// CreateDive implements storage.Store: the Dive's document is inserted,
// which the server refuses (a duplicate key: ErrAlreadyExists) when one
// has its id.
func (s *Store) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return s.writeDive(ctx, "create dive", d, a, func(ctx context.Context, doc diveDoc) error {
		_, err := s.dives.InsertOne(ctx, doc)
		return err
	})
}

// writeDive makes the audited change op of the Dive d: with a's event
// pending, it checks that d's org exists and has write store the Dive's
// document, which holds the event's id.
func (s *Store) writeDive(ctx context.Context, op string, d storage.Dive, a *storage.Audit, write func(context.Context, diveDoc) error) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	switch ok, err := s.orgExists(ctx, d.Org); {
	case err != nil:
		return wrap(op, err)
	case !ok:
		return fmt.Errorf("mongostore: %s: org: %w", op, storage.ErrNotFound)
	}
	doc := diveToDoc(d)
	doc.Ev = eventID(a)
	return wrap(op, write(ctx, doc))
}

// maxChangeAttempts bounds how often an audited change reads its
// document again after another change wrote it between its read and its
// write.
const maxChangeAttempts = 100

// replaceAudited stores doc, which holds its change's event id (ev; none
// for a change without an event), under id in coll, replacing any
// document there: it reads the event id the document there holds, confirms that event
// (its change is made, and the record of it is about to go), then
// replaces the document only if it still holds that id, or inserts it if
// there was none, and tries again when another change came between.
func (s *Store) replaceAudited(ctx context.Context, coll *mongo.Collection, id string, doc any) error {
	for attempt := 1; ; attempt++ {
		var old struct {
			Ev string `bson:"ev"`
		}
		err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{{Key: "ev", Value: 1}})).Decode(&old)
		found := err == nil
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return err
		}
		if old.Ev != "" {
			if err := s.confirmIfPending(ctx, old.Ev); err != nil {
				return fmt.Errorf("confirm event %s: %w", old.Ev, err)
			}
		}
		done := false
		if found {
			var res *mongo.UpdateResult
			res, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}, lastEvent(old.Ev)}, doc)
			done = err == nil && res.MatchedCount == 1
		} else {
			_, err = coll.InsertOne(ctx, doc)
			done = err == nil
			if mongo.IsDuplicateKeyError(err) {
				err = nil
			}
		}
		switch {
		case err != nil:
			return err
		case done:
			return nil
		case attempt == maxChangeAttempts:
			return fmt.Errorf("written concurrently %d times", attempt)
		}
	}
}

// GetDive implements storage.Store.
func (s *Store) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var d diveDoc
	if err := s.dives.FindOne(ctx, bson.D{{Key: "_id", Value: key(org, id)}}).Decode(&d); err != nil {
		return storage.Dive{}, wrap("get dive", err)
	}
	return d.record(), nil
}

// GetEmbedTarget implements storage.Store. The Dive and the user are read
// concurrently: the Dive's round trip in the time of the user's.
func (s *Store) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var (
		t       storage.EmbedTarget
		d       diveDoc
		diveErr error
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		diveErr = s.dives.FindOne(ctx, bson.D{{Key: "_id", Value: key(org, diveID)}}).Decode(&d)
	}()
	u, userErr := s.userByName(ctx, org, folded)
	wg.Wait()
	if errors.Is(diveErr, mongo.ErrNoDocuments) {
		diveErr = nil
	} else if diveErr == nil {
		t.Dive, t.DiveFound = d.record(), true
	}
	if errors.Is(userErr, mongo.ErrNoDocuments) {
		userErr = nil
	} else if userErr == nil {
		t.User, t.UserFound = u.record(), true
	}
	if err := cmp.Or(diveErr, userErr); err != nil {
		return storage.EmbedTarget{}, wrap("get embed target", err)
	}
	return t, nil
}

// sessionDoc is an embed session; its id is the hex digest.
type sessionDoc struct {
	Digest    string        `bson:"_id"`
	Org       string        `bson:"org"`
	UID       string        `bson:"uid"`
	Dive      string        `bson:"dive"`
	Version   int           `bson:"version"`
	Username  string        `bson:"name"`
	Resources []resourceDoc `bson:"res,omitempty"`
	State     []byte        `bson:"state,omitempty"`
	Affinity  string        `bson:"aff"`
	Created   time.Time     `bson:"created"`
	Expires   time.Time     `bson:"exp"`
	// Ev is the id of the event of its creation, if audited.
	Ev string `bson:"ev,omitempty"`
}

func sessionToDoc(es storage.EmbedSession) sessionDoc {
	return sessionDoc{
		Digest:    digestKey(es.Digest),
		Org:       es.Org,
		UID:       es.UserID,
		Dive:      es.DiveID,
		Version:   es.Version,
		Username:  es.Username,
		Resources: resourcesToDoc(es.Resources),
		State:     es.InitialState,
		Affinity:  es.AffinityKey,
		Created:   es.CreatedAt,
		Expires:   es.ExpiresAt,
	}
}

func (d sessionDoc) record() (storage.EmbedSession, error) {
	digest, err := parseDigest(d.Digest)
	if err != nil {
		return storage.EmbedSession{}, err
	}
	es := storage.EmbedSession{
		Digest:      digest,
		Org:         d.Org,
		DiveID:      d.Dive,
		Version:     d.Version,
		UserID:      d.UID,
		Username:    d.Username,
		Resources:   resourcesRecord(d.Resources),
		AffinityKey: d.Affinity,
		CreatedAt:   d.Created,
		ExpiresAt:   d.Expires,
	}
	if len(d.State) > 0 {
		es.InitialState = d.State
	}
	return es, nil
}

// CreateEmbedSession implements storage.Store. Like CreateToken, it checks
// the user before and after the insert, and removes a session that lost
// the race with DeleteUser. While it checks the user, it deletes the
// user's sessions that are not live at lim.LiveAt and, under a limit,
// counts the rest: ErrLimitExceeded at lim.Max, with nothing written.
//
// The count and the insert are two steps, not one: calls that run at once
// for one user can each count the same sessions and all insert, so the
// user can pass lim.Max by at most the number of creations running at
// once (less one; one Store runs at most Options.MaxInFlight). The bound
// keeps a store's size in check, which that approximation does not
// defeat. The slots that keep the token quota exact are not used here:
// their unique index over (org, uid, slot) would hold every session
// written by an earlier version without a slot, which New would have to
// rewrite first, and a process of that version still running would then
// fail a user's second creation on a duplicate key; and finding a free
// slot near the limit reads the slots of all the user's sessions, up to
// the 10 000 of the default limit, where a count reads an index.
func (s *Store) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	var live int64
	userErr, err := s.withLiveUser(ctx, es.Org, es.UserID, func() error {
		mine := bson.D{{Key: "org", Value: es.Org}, {Key: "uid", Value: es.UserID}}
		if err := s.dropExpiredSessions(ctx, mine, es.Org, lim.LiveAt); err != nil {
			return err
		}
		if lim.Max <= 0 {
			return nil
		}
		var err error
		live, err = s.sessions.CountDocuments(ctx, mine, options.Count().SetLimit(int64(lim.Max)))
		return err
	})
	if userErr != nil {
		return wrap("create embed session: user", userErr)
	}
	if err != nil {
		return wrap("create embed session", err)
	}
	if lim.Max > 0 && live >= int64(lim.Max) {
		// A taken digest is told as such, as every store does.
		err := s.sessions.FindOne(ctx, bson.D{{Key: "_id", Value: digestKey(es.Digest)}}, options.FindOne().SetProjection(idOnly)).Err()
		switch {
		case err == nil:
			return fmt.Errorf("mongostore: create embed session: %w", storage.ErrAlreadyExists)
		case !errors.Is(err, mongo.ErrNoDocuments):
			return wrap("create embed session", err)
		}
		return fmt.Errorf("mongostore: create embed session: %w", storage.ErrLimitExceeded)
	}
	doc := sessionToDoc(es)
	doc.Ev = eventID(a)
	if _, err := s.sessions.InsertOne(ctx, doc); err != nil {
		return wrap("create embed session", err)
	}
	// The session is stored: a caller that leaves now does not fail the
	// call, which checks its user once more.
	fctx, fcancel := s.finishing(ctx)
	defer fcancel()
	if _, err := s.liveUser(fctx, es.Org, es.UserID); err != nil {
		_, derr := s.sessions.DeleteOne(fctx, bson.D{{Key: "_id", Value: doc.Digest}})
		return wrap("create embed session: user", cmp.Or(err, derr))
	}
	return nil
}

// dropExpiredSessions deletes the sessions that match mine (those of one
// user of org) and are not live at liveAt, after confirming the pending
// events of their creations (confirmCreations). It deletes only when it
// found some, and only those.
func (s *Store) dropExpiredSessions(ctx context.Context, mine bson.D, org string, liveAt time.Time) error {
	notLive := bson.E{Key: "exp", Value: bson.D{{Key: "$lte", Value: liveAt}}}
	found, err := s.confirmCreations(ctx, s.sessions, org, append(mine, notLive))
	if err != nil || len(found) == 0 {
		return err
	}
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: found}}}, notLive}
	if _, err := s.sessions.DeleteMany(ctx, filter); err != nil {
		return fmt.Errorf("delete expired: %w", err)
	}
	return nil
}

// EmbedSessionByDigest implements storage.Store. A session whose user is
// gone or being deleted is not found.
func (s *Store) EmbedSessionByDigest(ctx context.Context, digest storage.Digest) (storage.EmbedSession, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var d sessionDoc
	if err := s.sessions.FindOne(ctx, bson.D{{Key: "_id", Value: digestKey(digest)}}).Decode(&d); err != nil {
		return storage.EmbedSession{}, wrap("embed session by digest", err)
	}
	if _, err := s.liveUser(ctx, d.Org, d.UID); err != nil {
		return storage.EmbedSession{}, wrap("embed session by digest: user", err)
	}
	es, err := d.record()
	if err != nil {
		return storage.EmbedSession{}, fmt.Errorf("mongostore: embed session by digest: %w", err)
	}
	return es, nil
}
