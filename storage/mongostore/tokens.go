package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// tokenDoc is an access token. Its id is the hex digest, so that
// authentication reads it by id.
type tokenDoc struct {
	Digest string `bson:"_id"`
	ID     string `bson:"tid"`
	Org    string `bson:"org"`
	UID    string `bson:"uid"`
	// Slot is distinct among the tokens of one user; see CreateToken.
	Slot    int        `bson:"slot"`
	Name    string     `bson:"name"`
	Desc    string     `bson:"desc,omitempty"`
	Type    string     `bson:"type"`
	Created time.Time  `bson:"created"`
	Expires *time.Time `bson:"exp,omitempty"` // nil: never expires
}

func tokenToDoc(t storage.Token) tokenDoc {
	d := tokenDoc{
		Digest:  digestKey(t.Digest),
		ID:      t.ID,
		Org:     t.Org,
		UID:     t.UserID,
		Name:    t.Name,
		Desc:    t.Description,
		Type:    t.Type,
		Created: t.CreatedAt,
	}
	if !t.ExpiresAt.IsZero() {
		exp := t.ExpiresAt
		d.Expires = &exp
	}
	return d
}

func (d tokenDoc) record() (storage.Token, error) {
	t := storage.Token{
		ID:          d.ID,
		Org:         d.Org,
		UserID:      d.UID,
		Name:        d.Name,
		Description: d.Desc,
		Type:        d.Type,
		CreatedAt:   d.Created,
	}
	if d.Expires != nil {
		t.ExpiresAt = *d.Expires
	}
	var err error
	t.Digest, err = parseDigest(d.Digest)
	return t, err
}

// liveAt is the filter of the tokens (or sessions) live at the instant at:
// without an expiry, or expiring after it.
func liveAt(at time.Time) bson.E {
	return bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: "exp", Value: nil}},
		bson.D{{Key: "exp", Value: bson.D{{Key: "$gt", Value: at}}}},
	}}
}

// maxSlotAttempts bounds how often CreateToken retries after another
// token took the slot it chose.
const maxSlotAttempts = 1000

// CreateToken implements storage.Store.
//
// The quota is kept without a transaction by slots: every token of a user
// holds a slot number, unique among that user's tokens (a unique index),
// and a token created under lim.Max takes a free slot below lim.Max, so no
// interleaving of concurrent creations can store more than lim.Max tokens
// under one quota. Tokens that are not live at lim.LiveAt are deleted
// first, freeing their slots. The user is checked before the insert (while
// the slots are read, concurrently) and again after it: a token that lost
// the race with DeleteUser is removed and the call fails with ErrNotFound.
func (s *Store) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	doc := tokenToDoc(t)
	slot, err := s.checkUserAndFreeSlot(ctx, t.Org, t.UserID, lim, eventID(a))
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		doc.Slot = slot
		_, err := s.tokens.InsertOne(ctx, doc)
		if err == nil {
			break
		}
		if !mongo.IsDuplicateKeyError(err) {
			return wrap("create token", err)
		}
		// Duplicate digest or id, or a slot another token just took?
		err = s.tokens.FindOne(ctx, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "_id", Value: doc.Digest}},
			bson.D{{Key: "tid", Value: doc.ID}},
		}}}, options.FindOne().SetProjection(idOnly)).Err()
		switch {
		case err == nil:
			return fmt.Errorf("mongostore: create token: %w", storage.ErrAlreadyExists)
		case !errors.Is(err, mongo.ErrNoDocuments):
			return wrap("create token", err)
		case attempt == maxSlotAttempts:
			return fmt.Errorf("mongostore: create token: no free slot after %d attempts", attempt)
		}
		if slot, err = s.freeSlot(ctx, t.Org, t.UserID, lim, eventID(a)); err != nil {
			return fmt.Errorf("mongostore: create token: %w", err)
		}
	}
	if err := s.step(stepTokenStored); err != nil {
		return fmt.Errorf("mongostore: create token: %w", err)
	}
	// With the check of the user, the tombstone of the digest, if any
	// (a value seeded again after its revocation), goes.
	userErr, err := s.withLiveUser(ctx, t.Org, t.UserID, func() error {
		_, err := s.revoked.DeleteOne(ctx, bson.D{{Key: "_id", Value: doc.Digest}})
		return err
	})
	if userErr != nil {
		// Deleted meanwhile (or unreadable): the token must not outlive
		// the user. Should this removal fail too, ReadAccess still
		// refuses a token whose user is gone.
		_, derr := s.tokens.DeleteOne(ctx, bson.D{{Key: "_id", Value: doc.Digest}, {Key: "tid", Value: doc.ID}})
		return wrap("create token: user", cmp.Or(userErr, derr))
	}
	return wrap("create token: tombstone", err)
}

// revokedDoc is the tombstone of a revoked token (storage.Revocation): its
// digest, never its value.
type revokedDoc struct {
	Digest  string    `bson:"_id"`
	ID      string    `bson:"tid"`
	Org     string    `bson:"org"`
	UID     string    `bson:"uid"`
	Revoked time.Time `bson:"at"`
	Until   time.Time `bson:"until"`
}

// checkUserAndFreeSlot checks that the user id of org is alive while it
// looks for a free slot (see freeSlot), the two reads running
// concurrently. A missing user is ErrNotFound, whatever the slots say.
func (s *Store) checkUserAndFreeSlot(ctx context.Context, org, id string, lim storage.TokenLimit, own string) (int, error) {
	var slot int
	userErr, err := s.withLiveUser(ctx, org, id, func() (err error) {
		slot, err = s.freeSlot(ctx, org, id, lim, own)
		return err
	})
	if userErr != nil {
		return 0, wrap("create token: user", userErr)
	}
	if err != nil {
		return 0, fmt.Errorf("mongostore: create token: %w", err)
	}
	return slot, nil
}

// withLiveUser runs read while it checks, concurrently, that the user id
// of org is alive: one round trip's time for both. It returns the check's
// error (mongo.ErrNoDocuments for a user that is gone) and read's.
func (s *Store) withLiveUser(ctx context.Context, org, id string, read func() error) (userErr, readErr error) {
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		_, userErr = s.liveUser(ctx, org, id)
	}()
	readErr = read()
	<-checked
	return userErr, readErr
}

// freeSlot returns a slot for a new token of the user id of org under lim,
// after deleting that user's tokens that are not live at lim.LiveAt (and
// confirming the pending events of their creations, but for own, the
// event of the creation that calls it). It returns ErrLimitExceeded when
// lim.Max live tokens hold slots.
func (s *Store) freeSlot(ctx context.Context, org, id string, lim storage.TokenLimit, own string) (int, error) {
	cur, err := s.tokens.Find(ctx, bson.D{{Key: "org", Value: org}, {Key: "uid", Value: id}},
		options.Find().SetProjection(bson.D{{Key: "slot", Value: 1}, {Key: "exp", Value: 1}, {Key: "tid", Value: 1}}))
	if err != nil {
		return 0, err
	}
	var held []tokenDoc
	if err := cur.All(ctx, &held); err != nil {
		return 0, err
	}
	used := make(map[int]bool, len(held))
	var dead, deadIDs bson.A
	for _, d := range held {
		if !lim.LiveAt.IsZero() && d.Expires != nil && !d.Expires.After(lim.LiveAt) {
			dead = append(dead, d.Digest)
			deadIDs = append(deadIDs, d.ID)
			continue
		}
		used[d.Slot] = true
	}
	if len(dead) > 0 {
		// Their creations were made; once they are gone nothing shows it.
		if err := s.confirmEventsOf(ctx, s.tokens, org, deadIDs, own); err != nil {
			return 0, err
		}
		filter := bson.D{
			{Key: "_id", Value: bson.D{{Key: "$in", Value: dead}}},
			{Key: "exp", Value: bson.D{{Key: "$lte", Value: lim.LiveAt}}},
		}
		if _, err := s.tokens.DeleteMany(ctx, filter); err != nil {
			return 0, fmt.Errorf("delete expired tokens: %w", err)
		}
	}
	if lim.Max > 0 && len(used) >= lim.Max {
		return 0, storage.ErrLimitExceeded
	}
	// Choose among the first few free slots at random, so that concurrent
	// creations for one user seldom choose the same.
	var free []int
	for n := 0; len(free) < 16; n++ {
		if !used[n] {
			free = append(free, n)
		}
	}
	if lim.Max > 0 {
		for len(free) > 0 && free[len(free)-1] >= lim.Max {
			free = free[:len(free)-1]
		}
	}
	return free[rand.IntN(len(free))], nil // #nosec G404 -- spreads concurrent creations over slots; nothing secret
}

// ReadAccess implements storage.Store. It reads the token, then its user,
// both by document id (a token whose user is gone or being deleted is not
// found); then the target by name, unless it is that user, and its live
// tokens.
func (s *Store) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var td tokenDoc
	if err := s.tokens.FindOne(ctx, bson.D{{Key: "_id", Value: digestKey(q.Digest)}}).Decode(&td); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return s.revokedAt(ctx, q.Digest, q.LiveAt)
		}
		return storage.Access{}, wrap("read access", err)
	}
	u, err := s.liveUser(ctx, td.Org, td.UID)
	if err != nil {
		return storage.Access{}, wrap("read access: user", err)
	}
	t, err := td.record()
	if err != nil {
		return storage.Access{}, fmt.Errorf("mongostore: read access: %w", err)
	}
	a := storage.Access{Credential: storage.Credential{Token: t, User: u.record()}}
	if q.Username == "" {
		return a, nil
	}
	target := u
	if q.Username != u.FKey {
		target, err = s.userByName(ctx, td.Org, q.Username)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return a, nil
		}
		if err != nil {
			return storage.Access{}, wrap("read access: target", err)
		}
	}
	a.Target, a.TargetFound = target.record(), true
	a.Target.Privileges = slices.Clone(a.Target.Privileges) // not the credential's

	if q.Tokens {
		if a.Tokens, err = s.findTokens(ctx, q.Into, td.Org, target.UID, q.LiveAt); err != nil {
			return storage.Access{}, wrap("read access: tokens", err)
		}
	}
	return a, nil
}

// findTokens appends to dst the tokens of the user id of org live at the
// instant at, ordered by creation, then id, whether the user is alive or
// not.
func (s *Store) findTokens(ctx context.Context, dst []storage.Token, org, id string, at time.Time) ([]storage.Token, error) {
	filter := bson.D{{Key: "org", Value: org}, {Key: "uid", Value: id}, liveAt(at)}
	opts := options.Find().SetSort(bson.D{{Key: "created", Value: 1}, {Key: "tid", Value: 1}})
	cur, err := s.tokens.Find(ctx, filter, opts)
	if err != nil {
		return nil, err
	}
	var docs []tokenDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := slices.Grow(dst, len(docs))
	for _, d := range docs {
		t, err := d.record()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ListTokens implements storage.Store. The tokens of a user that is gone
// or being deleted are not listed.
func (s *Store) ListTokens(ctx context.Context, org, userID string, at time.Time) ([]storage.Token, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var ts []storage.Token
	userErr, err := s.withLiveUser(ctx, org, userID, func() error {
		var err error
		ts, err = s.findTokens(ctx, nil, org, userID, at)
		return err
	})
	if errors.Is(userErr, mongo.ErrNoDocuments) {
		return []storage.Token{}, nil
	}
	if err := cmp.Or(userErr, err); err != nil {
		return nil, wrap("list tokens", err)
	}
	return ts, nil
}

// revokedAt is ReadAccess's answer for a digest no token has: ErrRevoked
// with the revoked token's org, user and id when its tombstone lasts
// beyond liveAt, else ErrNotFound. It is one more find by _id, on that
// rare path only.
func (s *Store) revokedAt(ctx context.Context, d storage.Digest, liveAt time.Time) (storage.Access, error) {
	filter := bson.D{{Key: "_id", Value: digestKey(d)}, {Key: "until", Value: bson.D{{Key: "$gt", Value: liveAt}}}}
	var doc revokedDoc
	err := s.revoked.FindOne(ctx, filter).Decode(&doc)
	switch {
	case err == nil:
		var a storage.Access
		a.Credential.Token = storage.Token{Org: doc.Org, UserID: doc.UID, ID: doc.ID}
		return a, fmt.Errorf("mongostore: read access: %w", storage.ErrRevoked)
	case errors.Is(err, mongo.ErrNoDocuments):
		return storage.Access{}, fmt.Errorf("mongostore: read access: %w", storage.ErrNotFound)
	default:
		return storage.Access{}, wrap("read access: tombstone", err)
	}
}

// DeleteToken implements storage.Store: the token's document goes
// (findAndModify, which returns it), then its tombstone is written, both
// between the event's two writes. A stop between the two, or a tombstone
// that fails to be written, leaves no tombstone: the token reads as
// unknown rather than revoked, and the revocation stands.
func (s *Store) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	filter := bson.D{{Key: "tid", Value: id}, {Key: "org", Value: org}, {Key: "uid", Value: userID}, liveAt(r.At)}
	td, err := s.takeToken(ctx, filter)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("mongostore: delete token: %w", storage.ErrNotFound)
	}
	if err != nil {
		return wrap("delete token", err)
	}
	// Beside the tombstone, the events of the token left pending.
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		s.settleTaken(ctx, org, id, eventID(a))
	}()
	defer func() { <-settled }() // before end confirms this deletion's event
	var t storage.Token
	if td.Expires != nil {
		t.ExpiresAt = *td.Expires
	}
	until := r.Until(t)
	if !until.After(r.At) {
		return nil
	}
	// The token is gone, and its event must say so: a tombstone that
	// fails to be written is not the revocation's failure.
	doc := revokedDoc{Digest: td.Digest, ID: id, Org: org, UID: userID, Revoked: r.At, Until: until}
	if _, err := s.revoked.ReplaceOne(ctx, bson.D{{Key: "_id", Value: td.Digest}}, doc, options.Replace().SetUpsert(true)); err == nil && r.MaxPerOrg > 0 {
		// Nor is a bound that fails to be kept: the next revocation keeps
		// it.
		_ = s.boundRevoked(ctx, org, r.MaxPerOrg)
	}
	return nil
}

// settleTaken settles the events of the token id of org left pending,
// other than own, once a deletion took the token: only one call can take
// it, so any other deletion of it was not made (a call that failed
// before it took it, whose caller may have retried as this one; settling
// would count it made, the token being gone), and it goes. When the
// deletion is audited (own is its event), the token's creation was made,
// and its event goes to the trail before the deletion's (the Service's
// withdrawal of a token whose creation failed deletes it with its
// creation's event pending). An unaudited deletion (own empty: the
// Service's clean-up of a token it did not find listed) leaves the
// creation pending: settling, finding neither the token nor a deletion,
// counts neither made, as the Service's audit log has neither. It is one
// find when there are none. Should it fail, the events stay for
// settling.
func (s *Store) settleTaken(ctx context.Context, org, id, own string) {
	cur, err := s.events.Find(ctx, bson.D{{Key: "org", Value: org}, {Key: "tid", Value: id}, {Key: "p", Value: true}})
	var docs []eventDoc
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil {
		return
	}
	for _, d := range docs {
		switch d.Action {
		case "token.delete":
			if d.ID != own {
				_, _ = s.events.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}})
			}
		case "token.create", "token.seed":
			if own != "" {
				_ = s.confirmEvent(ctx, d)
			}
		}
	}
}

// takeToken deletes the token filter matches and returns it, or
// mongo.ErrNoDocuments when there is none, or when another call deleted
// it first. On MongoDB that is one findAndModify, atomic. FerretDB v1
// runs findAndModify as a read and then a delete whose count it drops, so
// two revocations of one token at once both returned it; there the token
// is read, then deleted by its id and creation (tid: a token seeded anew
// with the same value has another), and only the call whose delete counts
// it has taken it: FerretDB's delete reports the rows its database
// removed.
func (s *Store) takeToken(ctx context.Context, filter bson.D) (tokenDoc, error) {
	var td tokenDoc
	if !s.byPointer {
		err := s.tokens.FindOneAndDelete(ctx, filter).Decode(&td)
		return td, err
	}
	if err := s.tokens.FindOne(ctx, filter).Decode(&td); err != nil {
		return td, err
	}
	res, err := s.tokens.DeleteOne(ctx, bson.D{{Key: "_id", Value: td.Digest}, {Key: "tid", Value: td.ID}})
	if err == nil && res.DeletedCount == 0 {
		err = mongo.ErrNoDocuments
	}
	return td, err
}

// boundRevoked drops the tombstones of org that end first beyond keep of
// them (storage.Revocation.MaxPerOrg): it counts the org's tombstones,
// and only when there are too many reads the ids of the surplus and
// deletes them, all by the index on (org, until). Two revocations at once
// may both drop the surplus, and so keep fewer.
func (s *Store) boundRevoked(ctx context.Context, org string, keep int) error {
	byOrg := bson.D{{Key: "org", Value: org}}
	n, err := s.revoked.CountDocuments(ctx, byOrg)
	if err != nil || n <= int64(keep) {
		return err
	}
	cur, err := s.revoked.Find(ctx, byOrg, options.Find().
		SetSort(bson.D{{Key: "org", Value: 1}, {Key: "until", Value: 1}}).
		SetLimit(n-int64(keep)).
		SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return err
	}
	var surplus []struct {
		Digest string `bson:"_id"`
	}
	if err := cur.All(ctx, &surplus); err != nil {
		return err
	}
	ids := make(bson.A, len(surplus))
	for i, d := range surplus {
		ids[i] = d.Digest
	}
	_, err = s.revoked.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: "org", Value: org}})
	return err
}
