package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
// keeps the org, FKey is the document id (so the username is free) and
// DeletedFKey keeps the username, whose pointer Cleanup removes.
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
// key(org, folded username); it holds the id of a user who had that
// username when the pointer was written.
type nameDoc struct {
	ID  string `bson:"_id"`
	UID string `bson:"uid"`
}

// pointedUser returns the user id the name pointer of folded in org
// holds, or "" when there is none.
func (s *Store) pointedUser(ctx context.Context, org, folded string) (string, error) {
	var n nameDoc
	err := s.names.FindOne(ctx, bson.D{{Key: "_id", Value: key(org, folded)}}).Decode(&n)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", nil
	}
	return n.UID, err
}

// point makes the name pointer of folded in org hold the user id, when the
// store keeps name pointers. Its error leaves only a missing or stale
// pointer, which the next lookup by name repairs.
func (s *Store) point(ctx context.Context, org, folded, id string) error {
	if !s.byPointer {
		return nil
	}
	k := key(org, folded)
	return replace(ctx, s.names, k, nameDoc{ID: k, UID: id})
}

// userByName returns the live user of org named folded, or
// mongo.ErrNoDocuments. With name pointers it follows the pointer: two
// reads by id. Without one, or with a stale one, it searches the users by
// name and repairs the pointer.
func (s *Store) userByName(ctx context.Context, org, folded string) (userDoc, error) {
	if s.byPointer {
		id, err := s.pointedUser(ctx, org, folded)
		if err != nil {
			return userDoc{}, err
		}
		if id != "" {
			d, err := s.liveUser(ctx, org, id)
			if err == nil && d.FKey == folded {
				return d, nil
			}
			if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
				return userDoc{}, err
			}
		}
	}
	var d userDoc
	if err := s.users.FindOne(ctx, byName(org, folded)).Decode(&d); err != nil {
		return userDoc{}, err
	}
	_ = s.point(ctx, org, folded, d.UID) // the answer is right either way
	return d, nil
}

// updatePointed applies the update that update(document id) returns to
// the user the name pointer of folded in org names, filtering by the
// document id alone (any other filter makes a server that needs name
// pointers scan). It returns the document as it was before (whole:
// FerretDB v1 has no projection in findAndModify), and whether that was
// the live user named folded. When it was not (no pointer, a stale one,
// or a store without pointers), the caller searches by name; an update
// that met a tombstone changed nothing any read sees.
func (s *Store) updatePointed(ctx context.Context, org, folded string, update func(docID string) bson.D) (userDoc, bool, error) {
	if !s.byPointer {
		return userDoc{}, false, nil
	}
	id, err := s.pointedUser(ctx, org, folded)
	if err != nil || id == "" {
		return userDoc{}, false, err
	}
	docID := key(org, id)
	opts := options.FindOneAndUpdate().SetReturnDocument(options.Before)
	var d userDoc
	err = s.users.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: docID}}, update(docID), opts).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return userDoc{}, false, nil
	}
	if err != nil {
		return userDoc{}, false, err
	}
	return d, d.alive(org, id) && d.FKey == folded, nil
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
	stepCreateUser = "create user"
	stepCreateName = "create name"
)

// CreateUser implements storage.Store. The insert of the user document is
// the whole of the creation: the unique index of users decides between
// concurrent creations of one username. The name pointer, where the store
// keeps them, is written after it; should that fail, the user is created
// all the same, and the first lookup by name writes the pointer.
func (s *Store) CreateUser(ctx context.Context, u storage.User) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	switch ok, err := s.orgExists(ctx, u.Org); {
	case err != nil:
		return wrap("create user", err)
	case !ok:
		return fmt.Errorf("mongostore: create user: org: %w", storage.ErrNotFound)
	}
	if _, err := s.users.InsertOne(ctx, userToDoc(u)); err != nil {
		return wrap("create user", err)
	}
	if !s.byPointer {
		return nil
	}
	if err := s.step(stepCreateUser); err != nil {
		return fmt.Errorf("mongostore: create user: %w", err)
	}
	_ = s.point(ctx, u.Org, u.FoldedUsername, u.ID) // a hint; see above
	if err := s.step(stepCreateName); err != nil {
		return fmt.Errorf("mongostore: create user: %w", err)
	}
	return nil
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

// UpdateUser implements storage.Store. It replaces every field but the
// username in one update of the user's document.
func (s *Store) UpdateUser(ctx context.Context, u storage.User) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	d := userToDoc(u)
	set := bson.D{
		{Key: "desc", Value: d.Desc},
		{Key: "sa", Value: d.SA},
		{Key: "role", Value: d.Role},
		{Key: "privs", Value: d.Privileges},
		{Key: "email", Value: d.Email},
		{Key: "first", Value: d.First},
		{Key: "last", Value: d.Last},
		{Key: "created", Value: d.Created},
		{Key: "inst", Value: d.Instances},
	}
	filter := bson.D{{Key: "_id", Value: d.ID}, {Key: "org", Value: u.Org}}
	res, err := s.users.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return wrap("update user", err)
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("mongostore: update user: %w", storage.ErrNotFound)
	}
	return nil
}

// SetInstances implements storage.Store, in one update of the user's
// document: found through the name pointer where the store keeps them,
// else by name.
func (s *Store) SetInstances(ctx context.Context, org, folded string, c storage.InstanceConfig) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "inst", Value: instancesToDoc(c)}}}}
	set := func(string) bson.D { return update }
	switch _, ok, err := s.updatePointed(ctx, org, folded, set); {
	case err != nil:
		return wrap("set instances", err)
	case ok:
		return nil
	}
	if !s.byPointer {
		res, err := s.users.UpdateOne(ctx, byName(org, folded), update)
		if err != nil {
			return wrap("set instances", err)
		}
		if res.MatchedCount == 0 {
			return fmt.Errorf("mongostore: set instances: %w", storage.ErrNotFound)
		}
		return nil
	}
	// No pointer, or a stale one: by name, learning the id to point to.
	var d userDoc
	if err := s.users.FindOneAndUpdate(ctx, byName(org, folded), update).Decode(&d); err != nil {
		return wrap("set instances", err)
	}
	_ = s.point(ctx, org, folded, d.UID) // a hint, repaired by the next lookup
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
)

// DeleteUser implements storage.Store. Its first write turns the user into
// a tombstone, atomically: from then on the user, its tokens and its
// sessions are unusable and the username is free. It then removes the
// tokens, embed sessions, Duckling reports and name pointer, and last the
// tombstone. A delete that stops part-way is ignored by every read and
// finished by Cleanup.
func (s *Store) DeleteUser(ctx context.Context, org, folded string) (storage.User, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	// The tombstone's fkey is its document id, unique among tombstones.
	tombstone := func(docID string) bson.D {
		return bson.D{{Key: "$set", Value: bson.D{
			{Key: "org", Value: nil},
			{Key: "dorg", Value: org},
			{Key: "fkey", Value: docID},
			{Key: "dfkey", Value: folded},
		}}}
	}
	d, ok, err := s.updatePointed(ctx, org, folded, tombstone)
	if err != nil {
		return storage.User{}, wrap("delete user", err)
	}
	if !ok {
		if err := s.users.FindOne(ctx, byName(org, folded), options.FindOne().SetProjection(idOnly)).Decode(&d); err != nil {
			return storage.User{}, wrap("delete user", err)
		}
		filter := bson.D{{Key: "_id", Value: d.ID}, {Key: "org", Value: org}, {Key: "fkey", Value: folded}}
		opts := options.FindOneAndUpdate().SetReturnDocument(options.Before)
		if err := s.users.FindOneAndUpdate(ctx, filter, tombstone(d.ID), opts).Decode(&d); err != nil {
			return storage.User{}, wrap("delete user", err)
		}
	}
	if err := s.step(stepTombstone); err != nil {
		return storage.User{}, fmt.Errorf("mongostore: delete user: %w", err)
	}
	if err := s.removeUser(ctx, org, d.UID, d.ID, folded); err != nil {
		return storage.User{}, fmt.Errorf("mongostore: delete user: %w", err)
	}
	return d.record(), nil
}

// removeUser removes what belongs to the user id of org, then the name
// pointer of folded if it still names that user (folded is empty for a
// tombstone older than name pointers), then the tombstone docID. Each step
// is idempotent.
func (s *Store) removeUser(ctx context.Context, org, id, docID, folded string) error {
	owned := bson.D{{Key: "org", Value: org}, {Key: "uid", Value: id}}
	for _, st := range []struct {
		name string
		coll *mongo.Collection
	}{{stepTokens, s.tokens}, {stepSessions, s.sessions}, {stepDucklings, s.ducklings}} {
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
	filter := bson.D{{Key: "_id", Value: docID}, {Key: "org", Value: nil}}
	if _, err := s.users.DeleteOne(ctx, filter); err != nil {
		return fmt.Errorf("remove tombstone: %w", err)
	}
	return s.step(stepUser)
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
	page := storage.UserPage{Users: make([]storage.User, 0, min(len(docs), q.Limit)), Total: int(total)}
	for i, d := range docs {
		if i == q.Limit {
			page.More = true
			break
		}
		page.Users = append(page.Users, d.record())
	}
	return page, nil
}
