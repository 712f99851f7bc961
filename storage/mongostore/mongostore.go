// Package mongostore is the MongoDB storage adapter. It runs on a
// standalone server, a replica set or a sharded cluster, and several
// orgadmin processes may share one database: nothing is cached in-process.
//
// It uses no multi-document transaction (a standalone server has none).
// Every invariant lives in one document or is kept by writes ordered so
// that each crash point is safe:
//
//   - Uniqueness (usernames, user, token and embed session ids, token
//     digests) comes from unique indexes; a duplicate key is
//     storage.ErrAlreadyExists.
//   - DeleteUser first turns the user document into a tombstone in one
//     atomic update, which frees the username and makes the user, its
//     tokens and its sessions unusable; it then removes the tokens, embed
//     sessions and Duckling reports, and last the tombstone. Every read
//     checks that the user a record belongs to is alive, so a delete that
//     stopped part-way is ignored by later calls, and Cleanup finishes it.
//   - A token, session or Duckling report written concurrently with the
//     deletion of its user is written first and the user checked after; if
//     the user is gone the writer removes what it wrote and reports
//     storage.ErrNotFound.
//   - The live-token quota is kept by slots: each token of a user holds a
//     distinct slot number (a unique index), and a token created under a
//     quota of Max takes a free slot below Max, so concurrent creations
//     cannot exceed it.
//
// Expiry is decided by the instants the caller passes; the adapter reads
// no clock. Reads filter on expiry where the contract asks, since TTL
// indexes may be absent (or late) on a deployment; expired tokens and
// sessions are removed when the user creates new ones and by Cleanup.
//
// Each method applies Options.Timeout to its context, so a server that is
// down or slow makes a call fail within the timeout instead of hanging.
package mongostore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// DefaultTimeout bounds each operation when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// MaxFeedback is how many feedback submissions a Store keeps when it
// creates the feedback collection, as a capped collection (where the
// deployment allows one); older ones are dropped.
const MaxFeedback = 100_000

// Options configures a Store. The zero value is usable.
type Options struct {
	// Timeout bounds each operation, on top of the caller's context. Zero
	// means DefaultTimeout.
	Timeout time.Duration
}

// Collection names.
const (
	orgsColl      = "orgs"
	usersColl     = "users"
	tokensColl    = "tokens"
	sessionsColl  = "embed_sessions"
	ducklingsColl = "ducklings"
	divesColl     = "dives"
	feedbackColl  = "feedback"
)

// Store is a storage.Store on a MongoDB database. The zero value is not
// usable; call New.
type Store struct {
	db        *mongo.Database
	timeout   time.Duration
	orgs      *mongo.Collection
	users     *mongo.Collection
	tokens    *mongo.Collection
	sessions  *mongo.Collection
	ducklings *mongo.Collection
	dives     *mongo.Collection
	feedback  *mongo.Collection

	// afterDeleteStep, when set (by tests), runs after each step of
	// DeleteUser; an error stops the delete there, as a crash would.
	afterDeleteStep func(step string) error
}

var _ storage.Store = (*Store)(nil)

// New returns a Store on db, creating the collections and indexes it needs
// (which is idempotent). The caller owns db's client and disconnects it
// when done. It fails when the indexes cannot be created.
func New(ctx context.Context, db *mongo.Database, opts Options) (*Store, error) {
	s := &Store{
		db:        db,
		timeout:   opts.Timeout,
		orgs:      db.Collection(orgsColl),
		users:     db.Collection(usersColl),
		tokens:    db.Collection(tokensColl),
		sessions:  db.Collection(sessionsColl),
		ducklings: db.Collection(ducklingsColl),
		dives:     db.Collection(divesColl),
		feedback:  db.Collection(feedbackColl),
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if err := s.createFeedback(ctx); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		coll    *mongo.Collection
		indexes []indexSpec
	}{
		{s.users, []indexSpec{
			// The unique key of users, and the order of listings.
			index("org_fkey", true, "org", "fkey"),
			// Listings filtered on the kind of account.
			index("org_sa_fkey", false, "org", "sa", "fkey"),
		}},
		{s.tokens, []indexSpec{
			index("tid", true, "tid"),
			// The quota (see CreateToken) and the tokens of one user.
			index("org_uid_slot", true, "org", "uid", "slot"),
			// ListTokens, in its order.
			index("org_uid_created_tid", false, "org", "uid", "created", "tid"),
			// Cleanup of expired tokens.
			index("exp", false, "exp"),
		}},
		{s.sessions, []indexSpec{
			index("org_uid_exp", false, "org", "uid", "exp"),
			index("exp", false, "exp"),
		}},
		{s.ducklings, []indexSpec{
			index("org_uid", false, "org", "uid"),
		}},
	} {
		if err := s.createIndexes(ctx, c.coll, c.indexes); err != nil {
			return nil, fmt.Errorf("mongostore: create indexes of %s: %w", c.coll.Name(), err)
		}
	}
	return s, nil
}

// createIndexes creates those of indexes that coll lacks, by name. (Asking
// for all of them every time would be idempotent on MongoDB, but FerretDB
// v1 fails when every index asked for exists.)
func (s *Store) createIndexes(ctx context.Context, coll *mongo.Collection, indexes []indexSpec) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	specs, err := coll.Indexes().ListSpecifications(ctx)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(specs))
	for _, spec := range specs {
		have[spec.Name] = true
	}
	var missing []mongo.IndexModel
	for _, ix := range indexes {
		if !have[ix.name] {
			missing = append(missing, ix.model())
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = coll.Indexes().CreateMany(ctx, missing)
	return err
}

// createFeedback creates the feedback collection, capped at MaxFeedback
// documents, unless it exists.
func (s *Store) createFeedback(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	names, err := s.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: feedbackColl}})
	if err != nil {
		return fmt.Errorf("mongostore: list collections: %w", err)
	}
	if len(names) > 0 {
		return nil
	}
	opts := options.CreateCollection().SetCapped(true).SetSizeInBytes(256 << 20).SetMaxDocuments(MaxFeedback)
	err = s.db.CreateCollection(ctx, feedbackColl, opts)
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		// NamespaceExists: another process won. Anything else the server
		// refused (a deployment without capped collections): the first
		// insert creates an uncapped collection.
		return nil
	}
	if err != nil {
		return fmt.Errorf("mongostore: create collection %s: %w", feedbackColl, err)
	}
	return nil
}

// indexSpec is an ascending index on fields.
type indexSpec struct {
	name   string
	unique bool
	fields []string
}

// index returns the spec of an ascending index on fields named name.
func index(name string, unique bool, fields ...string) indexSpec {
	return indexSpec{name: name, unique: unique, fields: fields}
}

func (ix indexSpec) model() mongo.IndexModel {
	keys := bson.D{}
	for _, f := range ix.fields {
		keys = append(keys, bson.E{Key: f, Value: 1})
	}
	opts := options.Index().SetName(ix.name)
	if ix.unique {
		opts.SetUnique(true)
	}
	return mongo.IndexModel{Keys: keys, Options: opts}
}

// op returns ctx bounded by the per-operation timeout.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// key joins parts into one document id, each prefixed with its length, so
// that two different tuples never share a key whatever they contain.
func key(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// digestKey is the document id of a digest: its lowercase hex form.
func digestKey(d storage.Digest) string { return hex.EncodeToString(d[:]) }

// parseDigest is the inverse of digestKey.
func parseDigest(k string) (storage.Digest, error) {
	var d storage.Digest
	if n, err := hex.Decode(d[:], []byte(k)); err != nil || n != len(d) {
		return storage.Digest{}, fmt.Errorf("malformed digest %q", k)
	}
	return d, nil
}

// idOnly is the projection that keeps only the document id.
var idOnly = bson.D{{Key: "_id", Value: 1}}

// wrap maps a driver error to the storage sentinels, with context.
func wrap(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return fmt.Errorf("mongostore: %s: %w", what, storage.ErrNotFound)
	case mongo.IsDuplicateKeyError(err):
		return fmt.Errorf("mongostore: %s: %w", what, storage.ErrAlreadyExists)
	default:
		return fmt.Errorf("mongostore: %s: %w", what, err)
	}
}

// Ping implements storage.Store: it reports whether the server answers
// within the timeout.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	return wrap("ping", s.db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err())
}

// step runs the test hook after the DeleteUser step named step.
func (s *Store) step(name string) error {
	if s.afterDeleteStep == nil {
		return nil
	}
	return s.afterDeleteStep(name)
}
