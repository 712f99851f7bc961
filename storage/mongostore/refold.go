package mongostore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/internal/casefold"
	"github.com/orgadmin/orgadmin/storage"
)

// The re-keying of users stored under the earlier fold of usernames.
//
// Until the fold became Unicode simple case folding (casefold.Fold), the
// folded username, a user's key, was the smallest lower-case member of
// each rune's case orbit: "Μαρία" was keyed "µαρία" (the micro sign),
// where it is now "μαρία". The key is stored in two places: the fkey of
// the user's document (the unique index org_fkey, the order of listings)
// and, on a server with name pointers, the id of the user's name pointer,
// key(org, folded). Everything else of a user (tokens, embed sessions,
// Duckling reports, revoked tokens) is keyed by the user's id, and audit
// events and embed sessions hold the username as spelled, so neither
// changes. A tombstone keeps its username in dfkey only to remove its
// name pointer under that key, which it does whichever fold made it.
//
// Fold(old) is the new key of a user keyed old (the two folds are
// constant on the same orbits), and it is no other user's: no key
// changes to another user's, so a unique conflict means a process of an
// earlier version created, while this one ran, a user whose name another
// user holds under the new key.

// migrationsColl holds one document for each migration of the stored data
// done, named by its id.
const migrationsColl = "migrations"

// refoldMark is the id of the document that says every user an earlier
// version stored under the earlier fold is re-keyed.
const refoldMark = "usernames folded by CaseFolding.txt"

// maxRefoldRounds bounds how often refold reads the users again when a
// round left some stale (see refold).
const maxRefoldRounds = 3

// Steps of the re-keying of one user, named for the test hook.
const (
	stepRefoldUser    = "refold user"     // its document holds the new key
	stepRefoldName    = "refold name"     // the pointer under the new key holds it
	stepRefoldOldName = "refold old name" // the pointer under the old key is gone
)

// rekey is what refold does for one user id of org whose key was old: its
// steps in order, each done only when set.
type rekey struct {
	org, uid, old string
	// user: the user's document is live under old; re-key it.
	user bool
	// point: write the name pointer under the new key.
	point bool
	// unpoint: remove the name pointer under old, which holds uid.
	unpoint bool
}

// refold re-keys, once per database, the users an earlier version stored
// under the earlier fold (see above). New runs it; a database it has done
// costs one read by id of migrationsColl. Otherwise it reads the live
// users and, with name pointers, the pointers, and re-keys each user
// keyed by a stale key, one user at a time, in the order of (org, id):
//
//  1. the update of the document from the old key to the new one, on the
//     condition that it is the live user under the old key; this is the
//     re-keying, atomic on its own;
//  2. the name pointer under the new key, written to hold the user;
//  3. the removal of the name pointer under the old key, if it holds the
//     user.
//
// Each crash point is safe: before 1 the user is as an earlier version
// left it, found under the old key. After 1 it is found under the new
// key alone: a lookup by the new key finds no pointer, searches by name
// and repairs the pointer (as after any crash of CreateUser), and one by
// the old key follows the old pointer to a user of another key and
// searches past it, in vain. After 2 the user is found by its pointer;
// the old pointer is a stale hint, which reserves nothing. A later run
// finds the user by its old key (before 1) or the pointer under the old
// key (after 1 or 2) and does what is left; each step is idempotent, and
// processes that run it at once repeat each other's writes.
//
// When a round re-keyed some user, it reads the users again and goes on
// until none is stale (at most maxRefoldRounds rounds): an update of
// FerretDB v1 is a read and then a write of the whole document, so a
// change of a user made at that instant by another process of this
// version can write back the old key. Then it writes the mark. A user
// whose new key another user holds is not re-keyed, nor its pointers
// touched: refold goes on with the other users and then fails with
// storage.ErrAlreadyExists naming the org, the user and both keys,
// without writing the mark.
func (s *Store) refold(ctx context.Context) error {
	marks := s.db.Collection(migrationsColl)
	if err := s.findMark(ctx, marks); !errors.Is(err, mongo.ErrNoDocuments) {
		return err // nil: done before
	}
	for round := 1; ; round++ {
		plan, err := s.refoldPlan(ctx)
		if err != nil {
			return err
		}
		if len(plan) == 0 {
			return s.writeMark(ctx, marks)
		}
		if round > maxRefoldRounds {
			return fmt.Errorf("mongostore: re-key usernames: users still stored under the earlier fold after %d rounds: "+
				"is a process of an earlier version running?", maxRefoldRounds)
		}
		var conflicts []error
		for _, r := range plan {
			err := s.rekeyUser(ctx, r)
			if errors.Is(err, storage.ErrAlreadyExists) {
				conflicts = append(conflicts, err)
				continue
			}
			if err != nil {
				return fmt.Errorf("mongostore: re-key usernames: %w", err)
			}
		}
		if len(conflicts) > 0 {
			return fmt.Errorf("mongostore: re-key usernames: %w", errors.Join(conflicts...))
		}
	}
}

// findMark reads the mark of refold: nil when it is there,
// mongo.ErrNoDocuments when not.
func (s *Store) findMark(ctx context.Context, marks *mongo.Collection) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := marks.FindOne(ctx, bson.D{{Key: "_id", Value: refoldMark}}).Err()
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("mongostore: read migrations: %w", err)
	}
	return err
}

// writeMark writes the mark of refold; another process's is as good.
func (s *Store) writeMark(ctx context.Context, marks *mongo.Collection) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := marks.InsertOne(ctx, bson.D{{Key: "_id", Value: refoldMark}})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("mongostore: write migration mark: %w", err)
	}
	return nil
}

// refoldPlan reads the live users and, with name pointers, the pointers,
// and returns what refold has to do, ordered by org and user id: a rekey
// of each live user keyed by a stale key, and one of each pointer under
// a stale key that holds no such user (a run that stopped after a user's
// update left it, or it holds a user deleted or being deleted, which
// needs it no more).
func (s *Store) refoldPlan(ctx context.Context) ([]rekey, error) {
	live, err := s.liveKeys(ctx)
	if err != nil {
		return nil, err
	}
	var pointers map[string]string // pointer id: user id
	if s.byPointer {
		if pointers, err = s.pointers(ctx); err != nil {
			return nil, err
		}
	}
	pointsTo := func(org, folded, uid string) bool {
		id, ok := pointers[key(org, folded)]
		return ok && id == uid
	}
	plan := make(map[[2]string]*rekey)
	for ou, fkey := range live {
		if casefold.Stale(fkey) {
			plan[ou] = &rekey{org: ou[0], uid: ou[1], old: fkey, user: true,
				point:   s.byPointer && !pointsTo(ou[0], casefold.Fold(fkey), ou[1]),
				unpoint: pointsTo(ou[0], fkey, ou[1])}
		}
	}
	for id, uid := range pointers {
		parts, ok := splitKey(id)
		if !ok || len(parts) != 2 || !casefold.Stale(parts[1]) {
			continue
		}
		org, old := parts[0], parts[1]
		ou := [2]string{org, uid}
		if r, ok := plan[ou]; ok && r.old == old {
			continue // the user's own, above
		}
		if _, ok := plan[ou]; ok {
			// The user is keyed by another stale key than this pointer's:
			// one rekey per user, this pointer next round.
			continue
		}
		fkey, alive := live[ou]
		plan[ou] = &rekey{org: org, uid: uid, old: old, unpoint: true,
			point: alive && fkey == casefold.Fold(old) && !pointsTo(org, fkey, uid)}
	}
	out := make([]rekey, 0, len(plan))
	for _, r := range plan {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b rekey) int { return cmp.Or(strings.Compare(a.org, b.org), strings.Compare(a.uid, b.uid)) })
	return out, nil
}

// liveKeys returns the key (fkey) of every live user, by org and user id.
func (s *Store) liveKeys(ctx context.Context) (map[[2]string]string, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var docs []userDoc
	proj := bson.D{{Key: "org", Value: 1}, {Key: "uid", Value: 1}, {Key: "fkey", Value: 1}}
	cur, err := s.users.Find(ctx, bson.D{{Key: "org", Value: bson.D{{Key: "$ne", Value: nil}}}}, options.Find().SetProjection(proj))
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil {
		return nil, fmt.Errorf("mongostore: re-key usernames: read users: %w", err)
	}
	out := make(map[[2]string]string, len(docs))
	for _, d := range docs {
		out[[2]string{*d.Org, d.UID}] = d.FKey
	}
	return out, nil
}

// pointers returns the user id each name pointer holds, by pointer id.
func (s *Store) pointers(ctx context.Context) (map[string]string, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var docs []nameDoc
	cur, err := s.names.Find(ctx, bson.D{})
	if err == nil {
		err = cur.All(ctx, &docs)
	}
	if err != nil {
		return nil, fmt.Errorf("mongostore: re-key usernames: read name pointers: %w", err)
	}
	out := make(map[string]string, len(docs))
	for _, d := range docs {
		out[d.ID] = d.UID
	}
	return out, nil
}

// rekeyUser does the steps of r in order (see refold), each a write of
// its own, bounded by the per-operation timeout. When the user is not the
// live user under the old key any more (deleted, or re-keyed by another
// process), it writes no pointer under the new key. When the new key is
// another user's it writes nothing and fails with ErrAlreadyExists.
func (s *Store) rekeyUser(ctx context.Context, r rekey) error {
	folded := casefold.Fold(r.old)
	if r.user {
		matched, err := s.rekeyDoc(ctx, r.org, r.uid, r.old, folded)
		if err != nil {
			return err
		}
		r.point = r.point && matched
		if err := s.step(stepRefoldUser); err != nil {
			return err
		}
	}
	if r.point {
		if err := s.pointName(ctx, r.org, folded, r.uid); err != nil {
			return fmt.Errorf("name pointer of user %s of org %q: %w", r.uid, r.org, err)
		}
		if err := s.step(stepRefoldName); err != nil {
			return err
		}
	}
	if r.unpoint {
		if err := s.unpointName(ctx, r.org, r.old, r.uid); err != nil {
			return fmt.Errorf("old name pointer of user %s of org %q: %w", r.uid, r.org, err)
		}
		if err := s.step(stepRefoldOldName); err != nil {
			return err
		}
	}
	return nil
}

// rekeyDoc updates the key of the live user uid of org from old to
// folded, and reports whether it was that user still. When another user
// holds folded it fails with ErrAlreadyExists, naming that user. (A
// duplicate key is a server error of its own on MongoDB; FerretDB v1
// refuses the write with an internal error that names the index: a
// refused update is a conflict when a search by the new key finds
// another user.)
func (s *Store) rekeyDoc(ctx context.Context, org, uid, old, folded string) (bool, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	filter := bson.D{{Key: "_id", Value: key(org, uid)}, {Key: "org", Value: org}, {Key: "uid", Value: uid}, {Key: "fkey", Value: old}}
	res, err := s.users.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "fkey", Value: folded}}}})
	if err == nil {
		return res.MatchedCount > 0, nil
	}
	if mongo.IsDuplicateKeyError(err) || refused(err) {
		var d userDoc
		ferr := s.users.FindOne(ctx, byName(org, folded), options.FindOne().SetProjection(bson.D{{Key: "uid", Value: 1}})).Decode(&d)
		if ferr == nil && d.UID != uid {
			return false, fmt.Errorf("user %s of org %q, keyed %q by an earlier version: its key %q is user %s's: %w",
				uid, org, old, folded, d.UID, storage.ErrAlreadyExists)
		}
	}
	return false, fmt.Errorf("user %s of org %q: %w", uid, org, err)
}

// pointName makes the name pointer of folded in org hold uid, whatever
// it held: the user re-keyed to folded holds that key (the unique index
// of users says so), and a pointer is only a hint that readers check.
func (s *Store) pointName(ctx context.Context, org, folded, uid string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	k := key(org, folded)
	return replace(ctx, s.names, k, nameDoc{ID: k, UID: uid})
}

// unpointName removes the name pointer of old in org if it holds uid.
func (s *Store) unpointName(ctx context.Context, org, old, uid string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	_, err := s.names.DeleteOne(ctx, bson.D{{Key: "_id", Value: key(org, old)}, {Key: "uid", Value: uid}})
	return err
}

// splitKey is the inverse of key: the parts k joins, and whether k is
// such a join.
func splitKey(k string) ([]string, bool) {
	var parts []string
	for k != "" {
		n, rest, ok := strings.Cut(k, ":")
		if !ok {
			return nil, false
		}
		size, err := strconv.Atoi(n)
		if err != nil || size < 0 || size > len(rest) || strconv.Itoa(size) != n {
			return nil, false
		}
		parts = append(parts, rest[:size])
		k = rest[size:]
	}
	return parts, true
}
