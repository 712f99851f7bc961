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
//     sessions and Duckling reports, the name pointer (below), and last
//     the tombstone. Every read checks that the user a record belongs to
//     is alive, so a delete that stopped part-way is ignored by later
//     calls, and Cleanup finishes it.
//   - On a server that reads every document of a collection for any
//     filter but a bare {_id: X} (FerretDB v1; see New), users are also
//     found by name through name pointers: a document whose id is
//     key(org, folded username) and which holds a user id. CreateUser
//     writes it before the user document (New writes those missing from
//     an older database). A pointer is only a hint: a reader follows it
//     by id and checks that the user there is alive and has that
//     username; a stale or missing pointer (a crash, a creation that
//     lost, or a race: FerretDB v1 makes a conditional write a read, then
//     a write by id) it searches past, by name, and repairs. A stale
//     pointer reserves nothing: the next creation of the name takes it
//     over, and the unique index of users stays the one judge of
//     uniqueness. A write through a pointer goes
//     by the user's id alone, after the read that checked it; this
//     relies on an id never being given to a second user, as the
//     Service's random ids never are.
//   - A token, session or Duckling report written concurrently with the
//     deletion of its user is written first and the user checked after; if
//     the user is gone the writer removes what it wrote and reports
//     storage.ErrNotFound.
//   - An audit event is written pending before its change and confirmed
//     after it; the change's document records the event's id, so a
//     pending event left by a crash is confirmed at the next listing of
//     its org (or Cleanup) when its change was made, at once, and
//     removed once a minute old when not. After a process is killed
//     mid-write, a reader sees each change it made with its event at
//     the org's next listing, and never an event without its change.
//   - The live-token quota is kept by slots: each token of a user holds a
//     distinct slot number (a unique index), and a token created under a
//     quota of Max takes a free slot below Max, so concurrent creations
//     cannot exceed it. The limit of users of an org is kept alike: each
//     live user holds a slot distinct in its org (see CreateUser).
//   - The limit of live embed sessions of a user is kept by a count before
//     the insert: concurrent creations can pass it by the number running
//     at once, less one (see CreateEmbedSession).
//
// Expiry is decided by the instants the caller passes; the adapter reads
// no clock. Reads filter on expiry where the contract asks, since TTL
// indexes may be absent (or late) on a deployment; expired tokens and
// sessions are removed when the user creates new ones and by Cleanup.
//
// Each method applies Options.Timeout to its context, so a server that is
// down or slow makes a call fail within the timeout instead of hanging.
//
// # Re-keying
//
// Until usernames were folded by Unicode simple case folding
// (orgadmin.FoldUsername), a user's folded username, its key, was the
// smallest lower-case member of each rune's case orbit: "Μαρία" was keyed
// "µαρία" (the micro sign), where it is now "μαρία". New re-keys, once,
// the users that an earlier version stored under the earlier fold. The
// key is held by the user's document and, with name pointers, by the id
// of its pointer; tokens, embed sessions and Duckling reports name the
// user by id, and audit events by the username as spelled. The first New
// that finds no mark of the re-keying in the collection migrations
// re-keys each such user in three writes: its document (the re-keying,
// one atomic update), then the pointer under the new key, then the
// removal of the pointer under the old one. A stop between two writes
// leaves the user found under one key, the pointers hints that readers
// search past and repair, and the next New does what is left. It writes
// the mark once no user is left under the earlier fold; from then on the
// re-keying costs New one read by id. Several processes may run it at
// once.
//
// Processes of the earlier version must be stopped before the first
// process of this one starts: a user one of them creates, or writes
// back, is stored under the earlier fold, and once the mark is written
// New looks for such users no more.
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

// DefaultMaxInFlight bounds the operations a Store runs at once when
// Options.MaxInFlight is zero.
const DefaultMaxInFlight = 8

// MaxTurnWaits bounds how long an operation waits for its turn (see
// Options.MaxInFlight), in timeouts: 10 s with the default Timeout. A
// listing of 100 users on FerretDB, 32 at once, waits 2 to 3 s for its
// turn; 150 requests at once on a server that is down are all answered
// within 12 s, well before an HTTP server's write timeout (the example
// server's is 35 s).
const MaxTurnWaits = 5

// Options configures a Store. The zero value is usable.
type Options struct {
	// Timeout bounds each operation, on top of the caller's context. Zero
	// means DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight bounds the operations the Store runs on the server at
	// once. One more waits for its turn, for at most MaxTurnWaits times
	// Timeout (and no longer than its context allows), and its Timeout
	// starts when its turn comes: a burst of requests queues in the
	// process instead of piling onto the server, where every one of them
	// would be slowed past its timeout and fail (possibly after its write
	// was made). One that gets no turn in time fails with
	// context.DeadlineExceeded, having sent nothing: a server that is
	// down or hangs fails the queued operations within that bound,
	// rather than each in its turn. Zero means DefaultMaxInFlight;
	// negative means no bound.
	MaxInFlight int
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
	namesColl     = "user_names"
	seedMarksColl = "seed_marks"
	revokedColl   = "revoked_tokens"
)

// Store is a storage.Store on a MongoDB database. The zero value is not
// usable; call New.
type Store struct {
	db      *mongo.Database
	timeout time.Duration
	// turns holds a value for each operation under way; nil means no
	// bound (see Options.MaxInFlight).
	turns     chan struct{}
	orgs      *mongo.Collection
	users     *mongo.Collection
	tokens    *mongo.Collection
	sessions  *mongo.Collection
	ducklings *mongo.Collection
	dives     *mongo.Collection
	feedback  *mongo.Collection
	names     *mongo.Collection
	seedMarks *mongo.Collection
	events    *mongo.Collection
	revoked   *mongo.Collection // tombstones of revoked tokens (tokens.go)
	trail     *mongo.Collection // confirmed audit events, by sequence (events.go)
	eventSeqs *mongo.Collection // the counter of each org's audit events (events.go)

	// byPointer is set on a server that scans a collection for every
	// filter but a bare {_id: X}: users are then found by name through
	// the names collection (see the package comment).
	byPointer bool
	// confirming holds a value while a confirmation of an event
	// (confirmEvent) takes its counter value on such a server, whose $inc
	// is a read and then a write: the confirmations of one process then
	// take values one at a time instead of colliding on them and trying
	// again. One waits for its turn only as long as its context allows.
	confirming chan struct{}

	// settleTime bounds how long a listing settles pending events
	// (listSettleTime; tests shorten it).
	settleTime time.Duration

	// afterStep, when set (by tests), runs after each step of CreateUser
	// and DeleteUser; an error stops the call there, as a crash would.
	afterStep func(step string) error
}

var _ storage.Store = (*Store)(nil)

// New returns a Store on db, creating the collections and indexes it needs
// (which is idempotent). The caller owns db's client and disconnects it
// when done. It fails when the indexes cannot be created.
//
// New also re-keys, once, the users that an earlier version stored under
// the earlier fold of usernames (see Re-keying in the package comment):
// stop every process of the earlier version before the first process of
// this one starts. It fails, before the store is used, when the
// re-keying cannot finish: with storage.ErrAlreadyExists, naming the org,
// the user and the key, when another user holds a user's new key (one
// that a process of the earlier version created meanwhile); the users
// involved are left as they were, and a later New does what is left
// once one of them is deleted (by a process of the earlier version).
// Once the re-keying is done, it costs New one read by id.
func New(ctx context.Context, db *mongo.Database, opts Options) (*Store, error) {
	s := &Store{
		db:         db,
		confirming: make(chan struct{}, 1),
		timeout:    opts.Timeout,
		settleTime: listSettleTime,
		orgs:       db.Collection(orgsColl),
		users:      db.Collection(usersColl),
		tokens:     db.Collection(tokensColl),
		sessions:   db.Collection(sessionsColl),
		ducklings:  db.Collection(ducklingsColl),
		dives:      db.Collection(divesColl),
		feedback:   db.Collection(feedbackColl),
		names:      db.Collection(namesColl),
		seedMarks:  db.Collection(seedMarksColl),
		events:     db.Collection(eventsColl),
		trail:      db.Collection(trailColl),
		eventSeqs:  db.Collection(eventSeqsColl),
		revoked:    db.Collection(revokedColl),
	}
	switch n := opts.MaxInFlight; {
	case n == 0:
		s.turns = make(chan struct{}, DefaultMaxInFlight)
	case n > 0:
		s.turns = make(chan struct{}, n)
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	var err error
	if s.byPointer, err = s.scansFilters(ctx); err != nil {
		return nil, err
	}
	if err := s.createFeedback(ctx); err != nil {
		return nil, err
	}
	if err := s.backfillSlots(ctx); err != nil {
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
			// The limit of users (see CreateUser).
			index("org_slot", true, "org", "slot"),
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
		{s.revoked, []indexSpec{
			// Cleanup of tombstones past their time.
			index("until", false, "until"),
			// The bound of an org's tombstones (Revocation.MaxPerOrg).
			index("org_until", false, "org", "until"),
		}},
		{s.ducklings, []indexSpec{
			index("org_uid", false, "org", "uid"),
		}},
		{s.events, []indexSpec{
			// Listings, newest first, and the per-org bound.
			index("org_at_id", false, "org", "at", "_id"),
			// A token's pending events (settleTaken, resolveEvent).
			index("org_tid", false, "org", "tid"),
		}},
		{s.trail, []indexSpec{
			// An event is confirmed once.
			index("eid", true, "eid"),
			// Listings, newest first, and the per-org bound.
			index("org_seq", false, "org", "seq"),
			// Retention.
			index("org_at", false, "org", "at"),
		}},
	} {
		if err := s.createIndexes(ctx, c.coll, c.indexes); err != nil {
			return nil, fmt.Errorf("mongostore: create indexes of %s: %w", c.coll.Name(), err)
		}
	}
	if err := s.refold(ctx); err != nil {
		return nil, err
	}
	if s.byPointer {
		if err := s.backfillNames(ctx); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// scansFilters reports whether the server reads every document of a
// collection for any filter but a bare {_id: X}. FerretDB v1 on SQLite
// does (every FerretDB v1 is taken alike); it says what it is in the
// ferretdbVersion field of buildInfo. A version that does not parse is
// taken to be such a server: that costs a round trip on a lookup by name,
// never a scan.
func (s *Store) scansFilters(ctx context.Context) (bool, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var info struct {
		FerretDB string `bson:"ferretdbVersion"`
	}
	if err := s.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		return false, fmt.Errorf("mongostore: build info: %w", err)
	}
	return ferretDBv1(info.FerretDB), nil
}

// ferretDBv1 reports whether version, the ferretdbVersion of buildInfo
// ("" on any other server), is that of FerretDB v1 or does not parse.
func ferretDBv1(version string) bool {
	if version == "" {
		return false
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	n, err := strconv.Atoi(major)
	return err != nil || n < 2
}

// indexAttempts bounds how often createIndexes tries.
const indexAttempts = 5

// createIndexes creates those of indexes that coll lacks, by name. (Asking
// for all of them every time would be idempotent on MongoDB, but FerretDB
// v1 fails when every index asked for exists.) Processes opening one
// database at once make the same collections and indexes: a creation may
// fail for another's (FerretDB v1 even drops the connection), so it
// tries again, a little later, and finds them made.
func (s *Store) createIndexes(ctx context.Context, coll *mongo.Collection, indexes []indexSpec) error {
	for attempt := 1; ; attempt++ {
		err := s.createMissingIndexes(ctx, coll, indexes)
		if err == nil || attempt == indexAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt*attempt) * 10 * time.Millisecond):
		}
	}
}

// createMissingIndexes is one attempt of createIndexes.
func (s *Store) createMissingIndexes(ctx context.Context, coll *mongo.Collection, indexes []indexSpec) error {
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

// op waits for the turn of an operation (see Options.MaxInFlight) and
// returns ctx bounded by the per-operation timeout, and the function that
// ends the operation and gives its turn to the next. An operation that an
// operation runs (a listing that settles events) runs in its turn. When
// ctx ends before its turn comes, the context returned is ctx, done; when
// the timeout passes first, a context of ctx past its deadline.
func (s *Store) op(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.turns == nil || ctx.Value(turnKey{}) != nil {
		return context.WithTimeout(ctx, s.timeout)
	}
	select {
	case s.turns <- struct{}{}:
	default: // a turn to wait for: only then a timer
		wait := time.NewTimer(MaxTurnWaits * s.timeout)
		select {
		case s.turns <- struct{}{}:
			wait.Stop()
		case <-ctx.Done():
			wait.Stop()
			return ctx, func() {}
		case <-wait.C:
			return context.WithDeadline(ctx, time.Now())
		}
	}
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, turnKey{}, true), s.timeout)
	return ctx, func() {
		cancel()
		<-s.turns
	}
}

// finishing returns the context of the steps that end a change already
// made (once DeleteUser's tombstone or CreateEmbedSession's session is
// written): not ended by its caller's cancellation, which would fail a
// call whose change is made (its event confirmed later, by a listing or
// Cleanup, and the Service never told), but bounded by the per-operation
// timeout. It keeps ctx's values, the operation's turn among them.
func (s *Store) finishing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
}

// turnKey marks the context of an operation that has its turn.
type turnKey struct{}

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

// step runs the test hook after the step named name.
func (s *Store) step(name string) error {
	if s.afterStep == nil {
		return nil
	}
	return s.afterStep(name)
}
