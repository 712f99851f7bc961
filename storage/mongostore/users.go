package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// userDoc is a user. Its id is key(org, user id). A user being deleted is
// a tombstone: Org is null (so no query of an org finds it), DeletedOrg
// keeps the org, FKey and the slot are the document id (so the username
// and the user's place are free) and DeletedFKey keeps the username, whose
// pointer Cleanup removes. The slot (see CreateUser) is written by
// CreateUser, DeleteUser and backfillSlots alone; reads leave it out.
type userDoc struct {
	ID          string       `bson:"_id"`
	Org         *string      `bson:"org"`
	DeletedOrg  string       `bson:"dorg,omitempty"`
	DeletedFKey string       `bson:"dfkey,omitempty"`
	UID         string       `bson:"uid"`
	FKey        string       `bson:"fkey"`
	Name        string       `bson:"name"`
	Desc        string       `bson:"desc,omitempty"`
	SA          bool         `bson:"sa"`
	Role        string       `bson:"role"`
	Privileges  []string     `bson:"privs,omitempty"`
	Email       string       `bson:"email,omitempty"`
	First       string       `bson:"first,omitempty"`
	Last        string       `bson:"last,omitempty"`
	Created     time.Time    `bson:"created"`
	Instances   instancesDoc `bson:"inst"`
	// Ev is the id of the event of the last audited change that wrote
	// the user (see changeUser and resolveEvent).
	Ev string `bson:"ev,omitempty"`
}

type instancesDoc struct {
	ReadWrite   sideDoc `bson:"rw"`
	ReadScaling sideDoc `bson:"rs"`
}

type sideDoc struct {
	Size     string `bson:"size"`
	Flock    int    `bson:"flock"`
	Cooldown int    `bson:"cool"`
}

// slottedUser is a new user's document with its slot.
type slottedUser struct {
	User userDoc `bson:",inline"`
	// Slot is a number below the limit the user was created under, or,
	// without a limit, the user's id.
	Slot any `bson:"slot"`
}

// slotDoc is what freeUserSlot reads of a user.
type slotDoc struct {
	Slot bson.RawValue `bson:"slot"`
}

func userToDoc(u storage.User) userDoc {
	org := u.Org
	return userDoc{
		ID:         key(u.Org, u.ID),
		Org:        &org,
		UID:        u.ID,
		FKey:       u.FoldedUsername,
		Name:       u.Username,
		Desc:       u.Description,
		SA:         u.IsServiceAccount,
		Role:       u.Role,
		Privileges: u.Privileges,
		Email:      u.Email,
		First:      u.FirstName,
		Last:       u.LastName,
		Created:    u.CreatedAt,
		Instances:  instancesToDoc(u.Instances),
	}
}

func (d userDoc) record() storage.User {
	org := d.DeletedOrg
	if d.Org != nil {
		org = *d.Org
	}
	return storage.User{
		ID:               d.UID,
		Org:              org,
		Username:         d.Name,
		FoldedUsername:   d.FKey,
		Description:      d.Desc,
		IsServiceAccount: d.SA,
		Role:             d.Role,
		Privileges:       d.Privileges,
		Email:            d.Email,
		FirstName:        d.First,
		LastName:         d.Last,
		CreatedAt:        d.Created,
		Instances:        d.Instances.record(),
	}
}

// alive reports whether d is the live user id of org.
func (d userDoc) alive(org, id string) bool {
	return d.Org != nil && *d.Org == org && d.UID == id
}

func instancesToDoc(c storage.InstanceConfig) instancesDoc {
	side := func(s storage.InstanceSide) sideDoc {
		return sideDoc{Size: s.Size, Flock: s.FlockSize, Cooldown: s.CooldownSeconds}
	}
	return instancesDoc{ReadWrite: side(c.ReadWrite), ReadScaling: side(c.ReadScaling)}
}

func (d instancesDoc) record() storage.InstanceConfig {
	side := func(s sideDoc) storage.InstanceSide {
		return storage.InstanceSide{Size: s.Size, FlockSize: s.Flock, CooldownSeconds: s.Cooldown}
	}
	return storage.InstanceConfig{ReadWrite: side(d.ReadWrite), ReadScaling: side(d.ReadScaling)}
}

// byName is the filter of the live user of org named folded. It is a
// search of the users: with name pointers (Store.byPointer), the way of
// last resort.
func byName(org, folded string) bson.D {
	return bson.D{{Key: "org", Value: org}, {Key: "fkey", Value: folded}}
}

// nameDoc is a name pointer (see the package comment). Its id is
// key(org, folded username); it holds the id of the user created, or being
// created, under that username.
type nameDoc struct {
	ID  string `bson:"_id"`
	UID string `bson:"uid"`
}

// pointed returns the live user of org named folded by following the name
// pointer: two reads by id. When that finds no such user it returns
// mongo.ErrNoDocuments and the user id the pointer holds ("" when there is
// no pointer); the caller then searches by name, since a pointer is only a
// hint, and repairs the pointer with that id (see repoint).
func (s *Store) pointed(ctx context.Context, org, folded string) (userDoc, string, error) {
	var n nameDoc
	if err := s.names.FindOne(ctx, bson.D{{Key: "_id", Value: key(org, folded)}}).Decode(&n); err != nil {
		return userDoc{}, "", err
	}
	d, err := s.liveUser(ctx, org, n.UID)
	if err == nil && d.FKey != folded {
		err = mongo.ErrNoDocuments
	}
	if err != nil {
		return userDoc{}, n.UID, err
	}
	return d, "", nil
}

// claimName makes the name pointer of folded in org hold the user id, for
// CreateUser to do before it inserts the user. A pointer already there is
// taken over unless it names a live user of that name, which is
// ErrAlreadyExists: it is stale (left by a crash, or by a creation that
// lost) or its creation is under way, and then the insert of the users
// decides.
func (s *Store) claimName(ctx context.Context, org, folded, id string) error {
	k := key(org, folded)
	doc := nameDoc{ID: k, UID: id}
	_, err := s.names.InsertOne(ctx, doc)
	if !mongo.IsDuplicateKeyError(err) {
		return err
	}
	switch _, _, err := s.pointed(ctx, org, folded); {
	case err == nil:
		return fmt.Errorf("name pointer: %w", storage.ErrAlreadyExists)
	case !errors.Is(err, mongo.ErrNoDocuments):
		return err
	}
	return replace(ctx, s.names, k, doc)
}

// repoint makes the stale name pointer of folded in org (stale is the id
// it held, "" when there was none) hold id, the live user a search found,
// unless the pointer changed since it was read (a creation under that
// name wrote it). Its error leaves the pointer stale or missing, which the
// next lookup searches past again.
func (s *Store) repoint(ctx context.Context, org, folded, stale, id string) error {
	k := key(org, folded)
	if stale == "" {
		_, err := s.names.InsertOne(ctx, nameDoc{ID: k, UID: id})
		return err
	}
	_, err := s.names.ReplaceOne(ctx, bson.D{{Key: "_id", Value: k}, {Key: "uid", Value: stale}}, nameDoc{ID: k, UID: id})
	return err
}

// userByName returns the live user of org named folded, or
// mongo.ErrNoDocuments: through the name pointer where the store keeps
// them, else by name. A missing or stale pointer is searched past, by
// name, and repaired: a pointer is only ever a hint.
func (s *Store) userByName(ctx context.Context, org, folded string) (userDoc, error) {
	stale := ""
	if s.byPointer {
		d, pointer, err := s.pointed(ctx, org, folded)
		if err == nil || !errors.Is(err, mongo.ErrNoDocuments) {
			return d, err
		}
		stale = pointer
	}
	var d userDoc
	if err := s.users.FindOne(ctx, byName(org, folded)).Decode(&d); err != nil {
		return userDoc{}, err
	}
	if s.byPointer {
		_ = s.repoint(ctx, org, folded, stale, d.UID) // the answer is right either way
	}
	return d, nil
}

// changeUser makes an audited change of a user, update, which sets ev to
// its event's id, in one atomic update of the user's document, and
// returns the document as it was before, or mongo.ErrNoDocuments. It
// reads the user (find), confirms the event of the last audited change
// the document records (that change is made, and its record is about to
// be overwritten), then updates the document if it still matches filter
// and still records that event; when another change came between, it
// reads again. So a document's ev moves on only from a confirmed event,
// and a pending event that no document records was never made (see
// resolveEvent).
//
// With name pointers (FerretDB v1, which reads every document of the
// collection for any filter but a bare {_id: X}, and whose conditional
// write is a read and then a write by id anyway) the update goes by id
// alone, and the document as it was tells the rest: when it was no
// longer the user read (still reports false: deleted meanwhile, a
// tombstone now changed in nothing a read of users sees) the change is
// mongo.ErrNoDocuments. (The tombstone then records the change's event
// until the caller withdraws it; a settle or Cleanup that reads it first
// counts the change as made.) When it records another event than the
// one read (a change made in between, now overwritten), that event is
// confirmed at once, as its change was made. Either way no document's ev
// moves on from an event left pending.
//
// guard, when not nil, holds conditions on the document that the write
// requires besides, in either way (a compare-and-set: SetPrivileges);
// when the document no longer meets them, the change reads again, and
// find tells what changed.
func (s *Store) changeUser(ctx context.Context, find func() (userDoc, error), filter func(userDoc) bson.D, still func(read, was userDoc) bool, update func(docID string) bson.D, guard bson.D) (userDoc, error) {
	before := options.FindOneAndUpdate().SetReturnDocument(options.Before)
	for attempt := 1; ; attempt++ {
		d, err := find()
		if err != nil {
			return userDoc{}, err
		}
		if d.Ev != "" {
			if err := s.confirmIfPending(ctx, d.Ev); err != nil {
				return userDoc{}, fmt.Errorf("confirm event %s: %w", d.Ev, err)
			}
		}
		if s.byPointer {
			var was userDoc
			byID := append(bson.D{{Key: "_id", Value: d.ID}}, guard...)
			err := s.users.FindOneAndUpdate(ctx, byID, update(d.ID), before).Decode(&was)
			switch {
			case err == nil:
			case guard == nil || !errors.Is(err, mongo.ErrNoDocuments):
				return userDoc{}, failedUpdate(find, err)
			case attempt == maxChangeAttempts:
				return userDoc{}, fmt.Errorf("written concurrently %d times", attempt)
			default:
				continue
			}
			if was.Ev != d.Ev && was.Ev != "" {
				if err := s.confirmIfPending(ctx, was.Ev); err != nil {
					return userDoc{}, fmt.Errorf("confirm event %s: %w", was.Ev, err)
				}
			}
			if !still(d, was) {
				return userDoc{}, mongo.ErrNoDocuments
			}
			return was, nil
		}
		f := append(append(filter(d), lastEvent(d.Ev)), guard...)
		err = s.users.FindOneAndUpdate(ctx, f, update(d.ID), before).Decode(&d)
		switch {
		case err == nil:
			return d, nil
		case !errors.Is(err, mongo.ErrNoDocuments):
			return userDoc{}, failedUpdate(find, err)
		case attempt == maxChangeAttempts:
			return userDoc{}, fmt.Errorf("written concurrently %d times", attempt)
		}
	}
}

// failedUpdate is the answer to an update of a user that failed with
// err: when the server refused the write, what find says of the user
// now if the user is gone (or, for a compare-and-set, changed); else
// err. FerretDB v1 updates a document by reading it and then writing it
// whole by id; when the user is deleted in between and a new user takes
// its name, or, under a limit, its slot, that write fails on the unique
// index of names or of slots, with an error no MongoDB gives and that
// says nothing of the user. The write did not happen, and the user it
// was for is gone: not found, as when the delete came first. An error
// that leaves unknown whether the write happened (the connection's, a
// timeout's, the write concern's) stays as it is.
func failedUpdate(find func() (userDoc, error), err error) error {
	if !refused(err) {
		return err
	}
	if _, ferr := find(); errors.Is(ferr, mongo.ErrNoDocuments) || errors.Is(ferr, storage.ErrConflict) {
		return ferr
	}
	return err
}

// refused reports whether err is the server's answer that it made no
// write: a server error, but none of the connection, of a timeout or of
// the write concern (after which the write may have happened).
func refused(err error) bool {
	var se mongo.ServerError
	if !errors.As(err, &se) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) {
		return false
	}
	var we mongo.WriteException
	return !errors.As(err, &we) || we.WriteConcernError == nil
}

// backfillNames writes the name pointer of every live user that has none:
// users created before the store kept pointers, or while a server that
// needs none served the database, so that lookups of them need no search.
// (Lookups search past a missing pointer all the same: on FerretDB v1 a
// conditional write reads, then writes by id, so a pointer can be lost in
// a race.) New runs it before the store is used. A pointer a creation
// wrote meanwhile is left as it is.
func (s *Store) backfillNames(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var have []nameDoc
	cur, err := s.names.Find(ctx, bson.D{}, options.Find().SetProjection(idOnly))
	if err == nil {
		err = cur.All(ctx, &have)
	}
	if err != nil {
		return fmt.Errorf("mongostore: read name pointers: %w", err)
	}
	pointed := make(map[string]bool, len(have))
	for _, n := range have {
		pointed[n.ID] = true
	}
	var live []userDoc
	proj := bson.D{{Key: "org", Value: 1}, {Key: "uid", Value: 1}, {Key: "fkey", Value: 1}}
	cur, err = s.users.Find(ctx, bson.D{{Key: "org", Value: bson.D{{Key: "$ne", Value: nil}}}}, options.Find().SetProjection(proj))
	if err == nil {
		err = cur.All(ctx, &live)
	}
	if err != nil {
		return fmt.Errorf("mongostore: read users: %w", err)
	}
	var missing []any
	for _, d := range live {
		if k := key(*d.Org, d.FKey); !pointed[k] {
			missing = append(missing, nameDoc{ID: k, UID: d.UID})
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = s.names.InsertMany(ctx, missing, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError == nil &&
		!slices.ContainsFunc(bwe.WriteErrors, func(we mongo.BulkWriteError) bool { return !mongo.IsDuplicateKeyError(we) }) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("mongostore: write name pointers: %w", err)
	}
	return nil
}

// backfillSlots gives a slot to every user document that has none (one
// written before the store kept slots), so that the unique index org_slot
// can be created: a live user its id, as a user created without a limit
// holds, and a tombstone its document id. New runs it before it creates
// the indexes; once org_slot exists it does nothing.
func (s *Store) backfillSlots(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	specs, err := s.users.Indexes().ListSpecifications(ctx)
	if err != nil {
		return fmt.Errorf("mongostore: list indexes of %s: %w", usersColl, err)
	}
	if slices.ContainsFunc(specs, func(spec mongo.IndexSpecification) bool { return spec.Name == "org_slot" }) {
		return nil
	}
	noSlot := bson.E{Key: "slot", Value: bson.D{{Key: "$exists", Value: false}}}
	var docs []userDoc
	proj := bson.D{{Key: "_id", Value: 1}, {Key: "org", Value: 1}, {Key: "uid", Value: 1}}
	cur, err := s.users.Find(ctx, bson.D{noSlot}, options.Find().SetProjection(proj))
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil {
		return fmt.Errorf("mongostore: read users without a slot: %w", err)
	}
	if len(docs) == 0 {
		return nil
	}
	writes := make([]mongo.WriteModel, len(docs))
	for i, d := range docs {
		slot := d.ID
		if d.Org != nil {
			slot = d.UID
		}
		writes[i] = mongo.NewUpdateOneModel().
			SetFilter(bson.D{{Key: "_id", Value: d.ID}, noSlot}).
			SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "slot", Value: slot}}}})
	}
	if _, err := s.users.BulkWrite(ctx, writes, options.BulkWrite().SetOrdered(false)); err != nil {
		return fmt.Errorf("mongostore: write slots: %w", err)
	}
	return nil
}

// liveUser returns the live user id of org, or ErrNotFound. It reads the
// document by id alone (the cheapest read on every server) and checks the
// rest itself.
func (s *Store) liveUser(ctx context.Context, org, id string) (userDoc, error) {
	var d userDoc
	if err := s.users.FindOne(ctx, bson.D{{Key: "_id", Value: key(org, id)}}).Decode(&d); err != nil {
		return userDoc{}, err
	}
	if !d.alive(org, id) {
		return userDoc{}, mongo.ErrNoDocuments
	}
	return d, nil
}

// Steps of CreateUser, named for the test hook.
const (
	stepCreateName = "create name"
	stepCreateUser = "create user"
)

// How many random slots CreateUser tries before it reads which are free,
// and how many slots in all.
const (
	randomUserSlots     = 3
	maxUserSlotAttempts = 100
)

// CreateUser implements storage.Store. Where the store keeps name
// pointers it first claims the pointer of the username (see claimName),
// so that a user is never without one; then it inserts the user
// document, which is the creation: the unique index of users decides
// between concurrent creations of one username.
//
// The limit is kept without a transaction by slots, as the token quota
// is: every live user holds a slot unique in its org (the unique index
// org_slot), and a user created under lim.Max takes a slot below
// lim.Max, so that no interleaving of concurrent creations under one
// limit stores more than lim.Max users. A creation counts the org's users
// first (ErrLimitExceeded at lim.Max, with no write), then inserts the
// user at a random slot below lim.Max; when a few of those are taken it
// reads the slots the org's users hold and takes a free one, or fails
// with ErrLimitExceeded when none is left, removing the name pointer it
// claimed. A user created without a limit holds its id as its slot, a
// string, which no number and no other user's id of the org can equal:
// it counts against a later limit but holds no place below it. A
// tombstone's slot is its document id, so a user being deleted frees its
// place at once.
func (s *Store) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	doc := slottedUser{User: userToDoc(u), Slot: u.ID}
	doc.User.Ev = eventID(a)
	if err := s.checkOrgAndRoom(ctx, doc.User, lim); err != nil {
		return fmt.Errorf("mongostore: create user: %w", err)
	}
	if s.byPointer {
		if err := s.claimName(ctx, u.Org, u.FoldedUsername, u.ID); err != nil {
			return wrap("create user", err)
		}
		if err := s.step(stepCreateName); err != nil {
			return fmt.Errorf("mongostore: create user: %w", err)
		}
	}
	if lim.Max > 0 {
		err = s.insertInSlot(ctx, &doc, lim.Max)
	} else {
		_, err = s.users.InsertOne(ctx, doc)
	}
	if errors.Is(err, storage.ErrLimitExceeded) && s.byPointer {
		// Not the pointer of a user created meanwhile under the name.
		// Should this fail, the pointer is stale: a hint the next
		// creation of the name takes over.
		_, _ = s.names.DeleteOne(ctx, bson.D{{Key: "_id", Value: key(u.Org, u.FoldedUsername)}, {Key: "uid", Value: u.ID}})
	}
	if err != nil {
		return wrap("create user", err)
	}
	if err := s.step(stepCreateUser); err != nil {
		return fmt.Errorf("mongostore: create user: %w", err)
	}
	return nil
}

// checkOrgAndRoom checks that d's org exists and, under a limit, that it
// holds fewer than lim.Max users, the two reads running concurrently. A
// missing org is ErrNotFound; a full one ErrLimitExceeded, unless d's
// username or id is taken (ErrAlreadyExists), as every store answers.
func (s *Store) checkOrgAndRoom(ctx context.Context, d userDoc, lim storage.UserLimit) error {
	org := *d.Org
	var (
		n        int64
		countErr error
		counted  = make(chan struct{})
	)
	if lim.Max > 0 {
		go func() {
			defer close(counted)
			n, countErr = s.users.CountDocuments(ctx, bson.D{{Key: "org", Value: org}}, options.Count().SetLimit(int64(lim.Max)))
		}()
	} else {
		close(counted)
	}
	ok, err := s.orgExists(ctx, org)
	<-counted
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("org: %w", storage.ErrNotFound)
	case countErr != nil:
		return fmt.Errorf("count users: %w", countErr)
	case n < int64(lim.Max) || lim.Max <= 0:
		return nil
	}
	switch taken, err := s.taken(ctx, d); {
	case err != nil:
		return err
	case taken:
		return storage.ErrAlreadyExists
	}
	return storage.ErrLimitExceeded
}

// taken reports whether the id of d, or its username in its org, is
// another user's.
func (s *Store) taken(ctx context.Context, d userDoc) (bool, error) {
	err := s.users.FindOne(ctx, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "_id", Value: d.ID}},
		byName(*d.Org, d.FKey),
	}}}, options.FindOne().SetProjection(idOnly)).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}

// insertInSlot inserts doc at a free slot below limit: a random one for the
// first randomUserSlots attempts, then one that freeUserSlot finds. It
// fails with ErrAlreadyExists when doc's username or id is taken, and
// with ErrLimitExceeded when the org's users hold limit slots.
func (s *Store) insertInSlot(ctx context.Context, doc *slottedUser, limit int) error {
	for attempt := 1; ; attempt++ {
		slot := rand.IntN(limit) // #nosec G404 -- spreads concurrent creations over slots; nothing secret
		if attempt > randomUserSlots {
			var err error
			if slot, err = s.freeUserSlot(ctx, *doc.User.Org, limit); err != nil {
				return err
			}
		}
		doc.Slot = slot
		_, err := s.users.InsertOne(ctx, doc)
		if err == nil || !mongo.IsDuplicateKeyError(err) {
			return err
		}
		// A taken username or id, or a slot another user holds?
		switch taken, err := s.taken(ctx, doc.User); {
		case err != nil:
			return err
		case taken:
			return storage.ErrAlreadyExists
		case attempt == maxUserSlotAttempts:
			return fmt.Errorf("no free slot after %d attempts", attempt)
		}
	}
}

// freeUserSlot returns a free slot below limit in org, chosen at random
// among the first few, or ErrLimitExceeded when the org holds limit users.
func (s *Store) freeUserSlot(ctx context.Context, org string, limit int) (int, error) {
	cur, err := s.users.Find(ctx, bson.D{{Key: "org", Value: org}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "slot", Value: 1}}))
	if err != nil {
		return 0, err
	}
	var held []slotDoc
	if err := cur.All(ctx, &held); err != nil {
		return 0, err
	}
	if len(held) >= limit {
		return 0, storage.ErrLimitExceeded
	}
	used := make(map[int64]bool, len(held))
	for _, d := range held {
		if n, ok := d.Slot.AsInt64OK(); ok {
			used[n] = true
		}
	}
	// Fewer than limit users: some slot below limit is free.
	var free []int
	for n := 0; n < limit && len(free) < 16; n++ {
		if !used[int64(n)] {
			free = append(free, n)
		}
	}
	return free[rand.IntN(len(free))], nil // #nosec G404 -- as in insertInSlot
}

// GetUser implements storage.Store.
func (s *Store) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	d, err := s.userByName(ctx, org, folded)
	if err != nil {
		return storage.User{}, wrap("get user", err)
	}
	return d.record(), nil
}

// SetPrivileges implements storage.Store, in one update of the user's
// document, found by its id and its privileges as read (a compare-and-
// set): the privileges are the update's filter, with the id, whichever
// way the store finds users. When the update matches no document, a read
// of the user tells ErrNotFound from ErrConflict. (On FerretDB v1 an
// update is a read and then a write by id, so two changes at one instant
// can both pass the filter, and one is lost: see the README.)
func (s *Store) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	guard := bson.D{{Key: "org", Value: org}, {Key: "uid", Value: userID}, privilegesAre(from)}
	// The update: privileges none are left out, as userToDoc leaves them.
	update := func(ev string) bson.D {
		var set, u bson.D
		if len(to) > 0 {
			set = append(set, bson.E{Key: "privs", Value: to})
		} else {
			u = append(u, bson.E{Key: "$unset", Value: bson.D{{Key: "privs", Value: ""}}})
		}
		if ev != "" {
			set = append(set, bson.E{Key: "ev", Value: ev})
		}
		if len(set) > 0 {
			u = append(u, bson.E{Key: "$set", Value: set})
		}
		return u
	}
	// find reads the user, and what it holds decides: ErrConflict when
	// its privileges are not those read.
	find := func() (userDoc, error) {
		d, err := s.liveUser(ctx, org, userID)
		if err == nil && !slices.Equal(d.Privileges, from) {
			err = storage.ErrConflict
		}
		return d, err
	}
	if ev := eventID(a); ev != "" {
		_, err := s.changeUser(ctx, find,
			func(d userDoc) bson.D { return bson.D{{Key: "_id", Value: d.ID}} },
			func(_, was userDoc) bool { return was.alive(org, userID) },
			func(string) bson.D { return update(ev) }, guard)
		return wrap("set privileges", err)
	}
	res, err := s.users.UpdateOne(ctx, append(bson.D{{Key: "_id", Value: key(org, userID)}}, guard...), update(""))
	if err != nil {
		return wrap("set privileges", failedUpdate(find, err))
	}
	if res.MatchedCount == 0 {
		_, err := find()
		if err == nil {
			err = storage.ErrConflict // changed back since: still not what was read
		}
		return wrap("set privileges", err)
	}
	return nil
}

// privilegesAre is the condition that a user's privileges are ps: the
// same elements in the same order, none (absent, as written, or an empty
// array) for an empty ps.
func privilegesAre(ps []string) bson.E {
	if len(ps) == 0 {
		return bson.E{Key: "privs", Value: bson.D{{Key: "$in", Value: bson.A{nil, bson.A{}}}}}
	}
	return bson.E{Key: "privs", Value: ps}
}

// SetInstances implements storage.Store, in one update of the user's
// document, found by its id as SetPrivileges finds it.
func (s *Store) SetInstances(ctx context.Context, org, userID string, c storage.InstanceConfig, a *storage.Audit) (err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return err
	}
	defer func() { end(err) }()
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "inst", Value: instancesToDoc(c)}}}}
	filter := bson.D{{Key: "_id", Value: key(org, userID)}, {Key: "org", Value: org}}
	if ev := eventID(a); ev != "" {
		update = bson.D{{Key: "$set", Value: bson.D{{Key: "inst", Value: instancesToDoc(c)}, {Key: "ev", Value: ev}}}}
		_, err := s.changeUser(ctx, func() (userDoc, error) { return s.liveUser(ctx, org, userID) },
			func(userDoc) bson.D { return filter },
			func(_, was userDoc) bool { return was.alive(org, userID) },
			func(string) bson.D { return update }, nil)
		return wrap("set instances", err)
	}
	res, err := s.users.UpdateOne(ctx, filter, update)
	if err != nil {
		return wrap("set instances", failedUpdate(func() (userDoc, error) { return s.liveUser(ctx, org, userID) }, err))
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("mongostore: set instances: %w", storage.ErrNotFound)
	}
	return nil
}

// Steps of DeleteUser, named for the test hook.
const (
	stepTombstone = "tombstone"
	stepTokens    = "tokens"
	stepSessions  = "sessions"
	stepDucklings = "ducklings"
	stepName      = "name"
	stepUser      = "user"
	// After a user written back over its tombstone is a tombstone again
	// (removeUser, FerretDB v1).
	stepTombstoneAgain = "tombstone again"
)

// DeleteUser implements storage.Store. Its first write turns the user into
// a tombstone, atomically: from then on the user, its tokens and its
// sessions are unusable and the username is free. It then removes the
// tokens, embed sessions, Duckling reports and name pointer, and last the
// tombstone. A delete that stops part-way is ignored by every read and
// finished by Cleanup. The user is found by its id, as SetInstances finds
// it: a read of its document, then the update of it, which counts only
// if the document was that live user still (its filter says so, or, by
// id alone where a filter costs a scan, the document as it was).
func (s *Store) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (_ storage.User, err error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	end, err := s.beginEvent(ctx, a)
	if err != nil {
		return storage.User{}, err
	}
	defer func() { end(err) }()
	// The tombstone keeps the username of the user read (a user's never
	// changes).
	ev := eventID(a)
	var read userDoc
	find := func() (userDoc, error) {
		d, err := s.liveUser(ctx, org, userID)
		read = d
		return d, err
	}
	tombstone := func(docID string) bson.D { return tombstoneOf(org, docID, read.FKey, ev) }
	live := func(d userDoc) bson.D {
		return bson.D{{Key: "_id", Value: d.ID}, {Key: "org", Value: org}, {Key: "uid", Value: userID}}
	}
	var d userDoc
	if ev != "" {
		d, err = s.changeUser(ctx, find, live,
			func(_, was userDoc) bool { return was.alive(org, userID) }, tombstone, nil)
	} else if _, err = find(); err == nil {
		// By id alone where a filter costs a scan (FerretDB v1, see
		// changeUser): a user deleted meanwhile is a tombstone that the
		// update changes in nothing any read sees.
		filter := live(read)
		if s.byPointer {
			filter = bson.D{{Key: "_id", Value: read.ID}}
		}
		before := options.FindOneAndUpdate().SetReturnDocument(options.Before)
		err = s.users.FindOneAndUpdate(ctx, filter, tombstone(read.ID), before).Decode(&d)
		if err == nil && !d.alive(org, userID) {
			err = mongo.ErrNoDocuments
		}
	}
	if err != nil {
		return storage.User{}, wrap("delete user", err)
	}
	if err := s.step(stepTombstone); err != nil {
		return storage.User{}, fmt.Errorf("mongostore: delete user: %w", err)
	}
	if ev == "" {
		ev = d.Ev // the tombstone keeps the user's
	}
	// The user is deleted: a caller that leaves now does not fail the call.
	fctx, fcancel := s.finishing(ctx)
	defer fcancel()
	if err := s.removeUser(fctx, org, d.UID, d.ID, d.FKey, ev); err != nil {
		return storage.User{}, fmt.Errorf("mongostore: delete user: %w", err)
	}
	return d.record(), nil
}

// tombstoneOf is the update that turns the document docID of a user of
// org named folded into its tombstone, recording ev ("" keeps the event
// the document records). Its fkey and slot are its document id, unique
// among tombstones; it keeps the org and the username for Cleanup to
// find its records and remove its name pointer.
func tombstoneOf(org, docID, folded, ev string) bson.D {
	set := bson.D{
		{Key: "org", Value: nil},
		{Key: "dorg", Value: org},
		{Key: "fkey", Value: docID},
		{Key: "slot", Value: docID},
		{Key: "dfkey", Value: folded},
	}
	if ev != "" {
		set = append(set, bson.E{Key: "ev", Value: ev})
	}
	return bson.D{{Key: "$set", Value: set}}
}

// maxRemoveAttempts bounds how often removeUser turns back into its
// tombstone a user that a change wrote back whole. Each time, changes
// that read the user while it was live again can write it back again:
// seven writers of one user without a pause did so three times running.
const maxRemoveAttempts = 10

// removeUser removes what belongs to the user id of org, then the name
// pointer of folded if it still names that user (folded is empty for a
// tombstone older than name pointers), then the tombstone docID, after
// confirming the event the tombstone holds, ev ("" for none): that of
// the deletion, or of the user's last audited change when the deletion
// has none. Once the tombstone is gone nothing shows that its change was
// made. Each step is idempotent.
//
// On FerretDB v1 a change of the user that read it before its tombstone
// was written can write it back whole (its update is a read and then a
// write by id): the tombstone is then the live user again, with records
// the user may have been given meanwhile. removeUser turns it back into
// the tombstone and removes them again. (Elsewhere a document that is no
// tombstone any more was removed by another call.)
func (s *Store) removeUser(ctx context.Context, org, id, docID, folded, ev string) error {
	for attempt := 1; ; attempt++ {
		if err := s.removeRecords(ctx, org, id, folded, ev); err != nil {
			return err
		}
		res, err := s.users.DeleteOne(ctx, bson.D{{Key: "_id", Value: docID}, {Key: "org", Value: nil}})
		if err != nil {
			return fmt.Errorf("remove tombstone: %w", err)
		}
		if res.DeletedCount > 0 || !s.byPointer {
			return s.step(stepUser) // or removed by another call
		}
		back, err := s.tombstoneAgain(ctx, org, docID, folded, ev)
		switch {
		case err != nil:
			return fmt.Errorf("remove tombstone: %w", err)
		case !back:
			return s.step(stepUser) // removed by another call
		case attempt == maxRemoveAttempts:
			return fmt.Errorf("remove tombstone: written back %d times", attempt)
		}
	}
}

// removeRecords is removeUser up to the tombstone itself.
func (s *Store) removeRecords(ctx context.Context, org, id, folded, ev string) error {
	owned := bson.D{{Key: "org", Value: org}, {Key: "uid", Value: id}}
	for _, st := range []struct {
		name string
		coll *mongo.Collection
	}{{stepTokens, s.tokens}, {stepSessions, s.sessions}, {stepDucklings, s.ducklings}} {
		if st.coll != s.ducklings {
			if _, err := s.confirmCreations(ctx, st.coll, org, owned); err != nil {
				return fmt.Errorf("remove %s: %w", st.name, err)
			}
		}
		if _, err := st.coll.DeleteMany(ctx, owned); err != nil {
			return fmt.Errorf("remove %s: %w", st.name, err)
		}
		if err := s.step(st.name); err != nil {
			return err
		}
	}
	if s.byPointer && folded != "" {
		// Not the pointer of a user created since under the same name.
		if _, err := s.names.DeleteOne(ctx, bson.D{{Key: "_id", Value: key(org, folded)}, {Key: "uid", Value: id}}); err != nil {
			return fmt.Errorf("remove name pointer: %w", err)
		}
		if err := s.step(stepName); err != nil {
			return err
		}
	}
	if ev != "" {
		if err := s.confirmIfPending(ctx, ev); err != nil {
			return fmt.Errorf("confirm event %s: %w", ev, err)
		}
	}
	return nil
}

// tombstoneAgain turns the document docID, which removeUser found no
// tombstone, back into one, and reports whether there was a document.
// As changeUser does, it first reads the document and confirms the event
// it records, when another than ev (a change written back is made, and
// the document is all that shows it), then overwrites it by id, and
// confirms at once the event of the document as it was, when another
// change wrote it in between.
func (s *Store) tombstoneAgain(ctx context.Context, org, docID, folded, ev string) (bool, error) {
	confirm := func(id string) error {
		if id == "" || id == ev {
			return nil
		}
		if err := s.confirmIfPending(ctx, id); err != nil {
			return fmt.Errorf("confirm event %s: %w", id, err)
		}
		return nil
	}
	byID := bson.D{{Key: "_id", Value: docID}}
	var read, was userDoc
	err := s.users.FindOne(ctx, byID).Decode(&read)
	if err == nil {
		if err := confirm(read.Ev); err != nil {
			return false, err
		}
		before := options.FindOneAndUpdate().SetReturnDocument(options.Before)
		err = s.users.FindOneAndUpdate(ctx, byID, tombstoneOf(org, docID, folded, ev), before).Decode(&was)
	}
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := s.step(stepTombstoneAgain); err != nil {
		return false, err
	}
	if was.Ev != read.Ev {
		if err := confirm(was.Ev); err != nil {
			return false, err
		}
	}
	return true, nil
}

// ListUsers implements storage.Store. A page is one range of the index
// (org, [sa,] fkey) whether it starts after a cursor or at the start; the
// total is a count over the same index prefix. Both run concurrently.
func (s *Store) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	filter := bson.D{{Key: "org", Value: org}}
	if q.ServiceAccount != nil {
		filter = append(filter, bson.E{Key: "sa", Value: *q.ServiceAccount})
	}
	countFilter := slices.Clone(filter)
	opts := options.Find().SetSort(bson.D{{Key: "fkey", Value: 1}}).SetLimit(int64(q.Limit) + 1)
	if q.After != "" {
		filter = append(filter, bson.E{Key: "fkey", Value: bson.D{{Key: "$gt", Value: q.After}}})
	} else if q.Offset > 0 {
		opts.SetSkip(int64(q.Offset))
	}

	var (
		docs              []userDoc
		total             int64
		findErr, countErr error
		wg                sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		total, countErr = s.users.CountDocuments(ctx, countFilter)
	}()
	cur, findErr := s.users.Find(ctx, filter, opts)
	if findErr == nil {
		findErr = cur.All(ctx, &docs)
	}
	wg.Wait()
	if err := cmp.Or(findErr, countErr); err != nil {
		return storage.UserPage{}, wrap("list users", err)
	}
	page := storage.UserPage{Users: slices.Grow(q.Into, min(len(docs), q.Limit)), Total: int(total)}
	for i, d := range docs {
		if i == q.Limit {
			page.More = true
			break
		}
		page.Users = append(page.Users, d.record())
	}
	return page, nil
}
