// Package storage defines the contract between the orgadmin service and the
// databases it can run on.
//
// A Store keeps records and fetches them; it never validates input, mints
// ids, reads a clock or decides whether something has expired. Where a method
// must filter on time (live tokens, for instance) the instant is passed in by
// the caller. Every rule of the API lives in the root orgadmin package, so the
// adapters (memstore, redisstore, mongostore, sqlstore) cannot drift apart.
//
// Records are passed and returned by value, and share no memory with what
// the Store holds, either way: mutating a record a Store returned, its
// slices or its maps, changes nothing stored, and neither does mutating,
// after the call, one passed to it.
//
// The mutating methods record, with their change and atomically, the
// audit event they are given (see "Audit events" below).
//
// Failures: a missing record is ErrNotFound, a uniqueness violation is
// ErrAlreadyExists, a full quota (of tokens, of users, of embed sessions) is
// ErrLimitExceeded, a compare-and-set that found the record changed is
// ErrConflict; compare with errors.Is. Any other error is a failure
// of the store itself.
//
// # Audit events
//
// CreateOrg, CreateUser, SetPrivileges, SetInstances, DeleteUser,
// CreateToken, DeleteToken, PutDive, CreateDive and CreateEmbedSession
// take as their last argument the Audit to record with the change (nil:
// none): the store writes its event in the same atomic step as the change
// (one Lua script, one SQL transaction, one lock), or, without
// multi-document transactions, in writes ordered so that none is lost
// between the two (mongostore: the event first, unconfirmed, then the
// change, then the confirmation; an event left unconfirmed is settled as
// EventQuery.SettleBefore says), and only when the method succeeds. After a crash there is never a change
// without its event, nor an event without its change (once settled). A
// method that fails, or that changes nothing, records nothing (CreateOrg
// for an existing org is ErrAlreadyExists and records nothing). A store
// that writes in one atomic step keeps the events of changes of one
// record in the order of the changes; one that writes in two steps may
// not, for changes made at once (mongostore).
//
// With each event the store drops events of the event's org that are
// older than Audit.DropBefore and, when the org holds more than
// Audit.MaxPerOrg events, the oldest beyond that bound. It may spread that
// work over later writes (a bounded amount per write) or leave it to a
// cleanup, but the events of an org never grow beyond MaxPerOrg plus a
// bounded slack, nor do expired events pile up without bound; callers
// filter out expired events that linger (EventQuery.Since). The store
// mints nothing and reads no clock: the caller gives the event's ID and
// At.
//
// # Sequence of events
//
// The store gives each event of an org its Seq, in the same atomic step
// as the event and its change, from a counter of the org, so that within
// an org Seq order is the order in which events become visible to
// ListEvents: once an event of Seq n is listed, no event of the org with a
// lower Seq appears any more (a store that writes in two steps keeps this
// for each walk of pages; see EventQuery.BeforeSeq). So a reader that
// pages down from the newest event, by BeforeSeq, sees exactly the events
// visible when it read its first page, none twice; whatever is written
// meanwhile, by any process and whatever its clock, sorts above that page.
// At, the writer's clock, plays no part in the order.
package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors every Store returns, possibly wrapped.
var (
	// ErrNotFound means the record, or a record it depends on, does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrAlreadyExists means a record with the same unique key exists.
	ErrAlreadyExists = errors.New("storage: already exists")
	// ErrLimitExceeded means a quota passed to the Store would be exceeded.
	ErrLimitExceeded = errors.New("storage: limit exceeded")
	// ErrConflict means the record changed since it was read: a
	// compare-and-set (SetPrivileges) found another value than the one
	// it was told to expect, and wrote nothing. The caller reads again.
	ErrConflict = errors.New("storage: the record changed since it was read")
	// ErrRevoked means ReadAccess found no token with the digest but the
	// tombstone DeleteToken left of one (see Revocation). It wraps
	// ErrNotFound: errors.Is(err, ErrNotFound) holds for it too, so a
	// caller that does not tell the two apart need not know of it.
	ErrRevoked = fmt.Errorf("storage: revoked: %w", ErrNotFound)
)

// Store is the persistence contract. Implementations must be safe for
// concurrent use by many goroutines and, where they are shared by several
// processes, must cache nothing that would let a deleted user or a revoked
// token keep working.
type Store interface {
	// CreateOrg stores a new organization, and records a's event with it
	// (nil: none; see Audit events). It returns ErrAlreadyExists when an
	// organization with the same ID exists.
	CreateOrg(ctx context.Context, o Org, a *Audit) error
	// GetOrg returns the organization with the given ID, or ErrNotFound.
	GetOrg(ctx context.Context, id string) (Org, error)

	// CreateUser stores a new user. It returns ErrNotFound when u.Org does
	// not exist, ErrAlreadyExists when the org already has a user with the
	// same FoldedUsername (or the same ID), and otherwise ErrLimitExceeded
	// when the org already holds lim.Max users. A zero lim.Max means no
	// limit. A user counts from its creation until DeleteUser removes it.
	// Two concurrent calls for one folded username: exactly one succeeds.
	// Concurrent calls never leave the org holding more than lim.Max
	// users, whether they run in one process or in several sharing the
	// store, provided every user of the org was created under that same
	// lim.Max. It records a's event with the user (nil: none).
	CreateUser(ctx context.Context, u User, lim UserLimit, a *Audit) error
	// GetUser returns the user of org whose FoldedUsername is folded, or
	// ErrNotFound.
	GetUser(ctx context.Context, org, folded string) (User, error)
	// SetPrivileges replaces the Privileges of the user userID of org with
	// to, only if the stored ones equal from (the same elements in the
	// same order; nil and empty are equal), atomically: a compare-and-set,
	// so that of two changes made from one read, one wins and the other
	// is told, never lost. It returns ErrNotFound when no such user
	// exists (a user created anew under the same username is another
	// user), and ErrConflict when the stored privileges differ from
	// from; either way it writes nothing and records no event. It records
	// a's event with the change (nil: none). The rest of the user, its
	// instance configuration included, is left as it is.
	SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *Audit) error
	// SetInstances replaces the instance configuration of the user userID
	// of org, atomically (a concurrent reader sees the old or the new
	// configuration, never a mix). It returns ErrNotFound when no such
	// user exists: a user created anew under the same username is another
	// user. It records a's event with the change (nil: none).
	SetInstances(ctx context.Context, org, userID string, c InstanceConfig, a *Audit) error
	// DeleteUser removes the user userID of org, together with its
	// tokens, Duckling activity and embed sessions, and returns the
	// removed record. Once it returns, and even if the process dies
	// part-way through, none of those records can be read or used again
	// and the username can be created anew. It returns ErrNotFound when no
	// such user exists: a user created anew under the same username is
	// another user, which it leaves alone. It records a's event with the
	// deletion (nil: none).
	DeleteUser(ctx context.Context, org, userID string, a *Audit) (User, error)
	// ListUsers returns users of org ordered by FoldedUsername, with the
	// page and total described in UserQuery.
	ListUsers(ctx context.Context, org string, q UserQuery) (UserPage, error)

	// CreateToken stores a new token for the user t.UserID of t.Org. It
	// returns ErrNotFound when that user does not exist (so a token never
	// outlives a concurrent DeleteUser), ErrAlreadyExists when a token with
	// the same Digest or ID exists, and ErrLimitExceeded when the user
	// already holds lim.Max tokens that are live at lim.LiveAt (tokens with a
	// zero ExpiresAt, or ExpiresAt after LiveAt). A zero lim.Max means no
	// limit. The store may delete tokens of the user that are no longer live
	// at lim.LiveAt, and so free their Digest and ID (the stores of this
	// module free a digest that only such a token of t's user holds,
	// redisstore once the token's keys expire, by Redis's clock; a store
	// that keeps it answers ErrAlreadyExists, and the Service then refuses
	// the value as in use). It records a's event with the token (nil:
	// none).
	CreateToken(ctx context.Context, t Token, lim TokenLimit, a *Audit) error
	// ReadAccess reads what an authenticated request needs, in one round
	// trip where the store allows: the credential of q.Digest (the token
	// and its user) and, when q.Username is not empty, the user of the
	// token's org whose FoldedUsername it is (the request's target), with,
	// when q.Tokens is set, the target's tokens live at q.LiveAt. It
	// returns ErrRevoked when no token has the digest but a tombstone of
	// it lasts beyond q.LiveAt (see Revocation), found in the same round
	// trip where the store allows and otherwise with one more only when
	// no token has the digest, and with it an Access whose
	// Credential.Token holds the revoked token's Org, UserID and ID (the
	// tombstone's; every other field zero), so that a caller can tell
	// whose token it was; ErrNotFound when neither has it, or the
	// token's user is gone; a missing target is reported by
	// Access.TargetFound, not by an error. The credential's expiry is not
	// checked.
	ReadAccess(ctx context.Context, q AccessQuery) (Access, error)
	// ListTokens returns the tokens of the user userID of org that are live
	// at liveAt, ordered by CreatedAt, then ID. A user without tokens yields
	// none (a nil or empty slice) and no error.
	ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]Token, error)
	// DeleteToken removes the token id of the user userID of org if it is
	// live at r.At, and keeps in the same atomic step a tombstone of its
	// digest (see Revocation). It returns ErrNotFound otherwise. Once it
	// returns, ReadAccess no longer finds the token, and answers
	// ErrRevoked for its digest while the tombstone lasts. It records a's
	// event with the deletion (nil: none). The Service also calls it, with
	// a nil, for a token the user is not found to hold (a deletion it
	// answers NOT_FOUND, a failed creation whose token is not listed): a
	// store that writes a token in steps removes there what a creation or
	// deletion cut short left of it (redisstore on a Cluster); any other
	// store just returns ErrNotFound.
	DeleteToken(ctx context.Context, org, userID, id string, r Revocation, a *Audit) error

	// SetDuckling records the latest activity report of one Duckling,
	// replacing any earlier one for the same (Org, UserID, ID). It returns
	// ErrNotFound when the user does not exist.
	SetDuckling(ctx context.Context, d Duckling) error
	// ListActivity returns every user of org that has at least one Duckling
	// record, with those records, ordered by FoldedUsername; each user's
	// Ducklings are in no particular order.
	ListActivity(ctx context.Context, org string) ([]Activity, error)

	// PutDive creates or replaces the Dive with d's Org and ID, and
	// records a's event with it (nil: none). It returns ErrNotFound when
	// d.Org does not exist.
	PutDive(ctx context.Context, d Dive, a *Audit) error
	// CreateDive stores d unless d.Org holds a Dive with d.ID, and records
	// a's event with it (nil: none). It returns ErrAlreadyExists when one
	// exists and ErrNotFound when d.Org does not exist; failing, it stores
	// nothing and records no event. Of concurrent calls for one Dive, from
	// one process or several sharing the store, exactly one succeeds.
	CreateDive(ctx context.Context, d Dive, a *Audit) error
	// GetDive returns the Dive id of org, or ErrNotFound.
	GetDive(ctx context.Context, org, id string) (Dive, error)
	// GetEmbedTarget reads, together, the Dive diveID of org and the user
	// of org whose FoldedUsername is folded: what minting an embed session
	// needs, in one round trip where the store allows. A missing record is
	// reported by its Found flag, not by an error; errors are failures of
	// the store.
	GetEmbedTarget(ctx context.Context, org, diveID, folded string) (EmbedTarget, error)

	// CreateEmbedSession stores a new embed session. It returns ErrNotFound
	// when the user s.UserID of s.Org does not exist, ErrAlreadyExists
	// when a session with the same Digest exists, and ErrLimitExceeded when
	// the user already holds lim.Max sessions that are live at lim.LiveAt
	// (ExpiresAt after LiveAt); failing, it stores nothing and records no
	// event. A lim.Max of zero or less means no limit. Concurrent calls
	// never leave the user holding more than lim.Max live sessions, unless
	// the adapter documents otherwise (mongostore). The store may delete
	// sessions of the user that are not live at lim.LiveAt. It records
	// a's event with the session (nil: none).
	CreateEmbedSession(ctx context.Context, s EmbedSession, lim SessionLimit, a *Audit) error
	// EmbedSessionByDigest returns the session with the given digest, or
	// ErrNotFound (also when its user is gone). Expiry is not checked.
	EmbedSessionByDigest(ctx context.Context, digest Digest) (EmbedSession, error)

	// MarkSeeded records keys (opaque to the store) as loaded into org
	// from a fixture; keys recorded before are kept as they are. Marks
	// are never removed: they outlive the records they name, so that
	// loading a fixture again does not bring back what was deleted since.
	// The org need not exist. Concurrent calls for one org, from one
	// process or several sharing the store, all succeed.
	MarkSeeded(ctx context.Context, org string, keys []string) error
	// SeedMarks returns every key MarkSeeded recorded for org, in no
	// particular order; none for an org without marks.
	SeedMarks(ctx context.Context, org string) ([]string, error)

	// AddFeedback stores one feedback submission. It returns
	// ErrAlreadyExists when f.ID is taken. A store may bound how many
	// submissions it keeps, dropping the oldest.
	AddFeedback(ctx context.Context, f Feedback) error

	// ListEvents returns the audit events of org that match q, newest
	// first: ordered by Seq, descending. See EventQuery.
	ListEvents(ctx context.Context, org string, q EventQuery) (EventPage, error)

	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
}

// Event is one audit event: an administrative change, who made it and
// when. It never holds a token or session value, digest or secret.
type Event struct {
	// ID is unique (a UUID).
	ID  string
	Org string
	// Seq orders the events of an org; the store assigns it (whatever
	// the caller sets is ignored) and ListEvents returns it. It is
	// unique within the org, and no event holds 0: the events of an org
	// recorded after its first one with a Seq number up from 1; a store
	// that kept events before it assigned sequences may give those
	// negative ones, below every other (see the store's documentation).
	Seq int64
	// At is when the change was made, to the millisecond.
	At time.Time
	// ActorID and ActorUsername name the user who made the change;
	// ActorUsername is "system" and ActorID empty for a change made by the
	// Go API on no user's behalf.
	ActorID       string
	ActorUsername string
	// ActorTokenID is the id of the token the actor presented, when any.
	ActorTokenID string
	// Action is a stable dotted name, such as "token.create".
	Action string
	// TargetKind ("org", "user", "token", "dive", "embed_session"),
	// TargetID and TargetUsername name what the change acts on.
	TargetKind     string
	TargetID       string
	TargetUsername string
	// RequestID is the id of the HTTP request that made the change, when
	// one did.
	RequestID string
	// Before and After are JSON documents of a value the change replaced
	// (an instance configuration), or nil.
	Before []byte
	After  []byte
}

// Audit is what a mutating method records with its change; see the Audit
// events section above.
type Audit struct {
	Event Event
	// DropBefore: events of the org older than this are dropped.
	DropBefore time.Time
	// MaxPerOrg bounds the events kept for the org; zero means no bound.
	MaxPerOrg int
}

// EventQuery selects a page of audit events, newest first.
type EventQuery struct {
	// BeforeSeq, when not zero, starts the page after the event of that
	// Seq: at the first event whose Seq is lower. That event need not
	// exist. A query without it reads the first page of a walk: the
	// newest events.
	BeforeSeq int64
	// Limit is the page size, at least 1; the store returns at most
	// Limit events.
	Limit int
	// The filters: an empty string or zero time matches every event; a
	// string matches only exactly (byte for byte, case included), as
	// Matches says.
	Action         string
	ActorID        string
	ActorUsername  string
	TargetKind     string
	TargetID       string
	TargetUsername string
	// Since keeps events at or after it; Until events before it.
	Since time.Time
	Until time.Time
	// SettleBefore, when not zero, is for a store that writes an event and
	// its change in two steps (mongostore): as it lists, it first settles
	// a bounded number of the org's events still unconfirmed, confirming
	// at once those whose change was made, whatever their age, and
	// dropping those whose change was not made if they were recorded
	// before this instant (their writer is long done or gone; a younger
	// one's writer may still be about to make it). Other stores ignore it.
	SettleBefore time.Time
	// Into is where the page goes (see UserQuery.Into).
	Into []Event
}

// Matches reports whether e passes q's filters (not its cursor): a helper
// for adapters that filter as they read.
func (q EventQuery) Matches(e Event) bool {
	return (q.Action == "" || e.Action == q.Action) &&
		(q.ActorID == "" || e.ActorID == q.ActorID) &&
		(q.ActorUsername == "" || e.ActorUsername == q.ActorUsername) &&
		(q.TargetKind == "" || e.TargetKind == q.TargetKind) &&
		(q.TargetID == "" || e.TargetID == q.TargetID) &&
		(q.TargetUsername == "" || e.TargetUsername == q.TargetUsername) &&
		(q.Since.IsZero() || !e.At.Before(q.Since)) &&
		(q.Until.IsZero() || e.At.Before(q.Until))
}

// EventPage is one page of audit events.
type EventPage struct {
	Events []Event
	// More reports whether matching events follow the last one returned.
	More bool
}

// Digest is a SHA-256 digest. Secrets (token values, embed session values)
// are stored only as digests.
type Digest [32]byte

// Org is an organization.
type Org struct {
	ID        string
	CreatedAt time.Time
}

// User is a user of an organization, human or service account.
type User struct {
	ID  string
	Org string
	// Username is the spelling given at creation.
	Username string
	// FoldedUsername is the case-folded username: the unique key within the
	// org and the sort key of listings.
	FoldedUsername   string
	Description      string
	IsServiceAccount bool
	// Role is "Admin" or "Member".
	Role       string
	Privileges []string
	Email      string
	FirstName  string
	LastName   string
	CreatedAt  time.Time
	Instances  InstanceConfig
}

// InstanceConfig is a user's compute instance configuration as set; a zero
// cooldown means "the default of the size".
type InstanceConfig struct {
	ReadWrite   InstanceSide
	ReadScaling InstanceSide
}

// InstanceSide is the configuration of one instance kind. FlockSize is used
// only on the read-scaling side.
type InstanceSide struct {
	Size            string
	FlockSize       int
	CooldownSeconds int
}

// UserQuery selects a page of users. Users are ordered by FoldedUsername.
type UserQuery struct {
	// After, when not empty, starts the page at the first user whose
	// FoldedUsername sorts after it (byte-wise); Offset is then ignored.
	After string
	// Offset skips that many matching users from the start.
	Offset int
	// Limit is the page size, at least 1; the store returns at most
	// Limit users.
	Limit int
	// ServiceAccount, when not nil, keeps only users whose
	// IsServiceAccount equals it.
	ServiceAccount *bool
	// Into is where the page goes: UserPage.Users is Into with the page
	// appended, as append gives it. A caller that passes an empty slice
	// with room (a page it has done with, cut to length 0) spares
	// allocating a new one; nil is fine.
	Into []User
}

// UserPage is one page of a user listing.
type UserPage struct {
	Users []User
	// More reports whether matching users follow the last one returned.
	More bool
	// Total counts all users that match the ServiceAccount filter.
	Total int
}

// UserLimit bounds the users of an organization; see Store.CreateUser.
type UserLimit struct {
	// Max is the bound; zero or less means none.
	Max int
}

// Token is an access token. Its value is never stored, only its Digest.
type Token struct {
	ID          string
	Org         string
	UserID      string
	Digest      Digest
	Name        string
	Description string
	// Type is "read_write" or "read_scaling".
	Type      string
	CreatedAt time.Time
	// ExpiresAt is zero for a token that never expires.
	ExpiresAt time.Time
}

// LiveAt reports whether t has not expired at the instant at.
func (t Token) LiveAt(at time.Time) bool {
	return t.ExpiresAt.IsZero() || at.Before(t.ExpiresAt)
}

// TokenLimit bounds the live tokens of a user; see Store.CreateToken.
type TokenLimit struct {
	// Max is the bound; zero or less means none.
	Max    int
	LiveAt time.Time
}

// SessionLimit bounds the live embed sessions of a user; see
// Store.CreateEmbedSession.
type SessionLimit struct {
	Max    int
	LiveAt time.Time
}

// Revocation is what DeleteToken is told about a revocation.
//
// The tombstone DeleteToken keeps holds the token's digest (never a
// value), org, user id, token id and r.At. It lasts until the token's
// ExpiresAt, or until r.KeepUntil for a token without expiry: ReadAccess
// reports it (ErrRevoked) only for a LiveAt before that instant. The store
// removes tombstones past their time (by key TTL, or in a bounded amount
// of work on later writes, or in its cleanup), so they never pile up
// without bound; and an org keeps at most MaxPerOrg of them (see
// there). CreateToken of a token with the digest of a tombstone removes
// the tombstone. DeleteUser neither makes its tokens' tombstones nor
// removes those of tokens revoked before: a token of a deleted user reads
// as ErrNotFound, unless it was revoked before the deletion.
type Revocation struct {
	// At is the instant of the revocation: the token must be live at At.
	At time.Time
	// KeepUntil is how long the tombstone of a token without expiry
	// lasts.
	KeepUntil time.Time
	// MaxPerOrg bounds the tombstones kept for the token's org; zero
	// means no bound. Beyond it, the revocation drops those of the org's
	// tombstones that end first (the new one among them, if it ends
	// first), so that however fast tokens are created and revoked, what
	// an org's revocations keep stays bounded. A store may count towards
	// the bound tombstones that a CreateToken with their digest removed
	// since, and so keep fewer.
	MaxPerOrg int
}

// Until returns when the tombstone of t, revoked under r, stops counting.
func (r Revocation) Until(t Token) time.Time {
	if t.ExpiresAt.IsZero() {
		return r.KeepUntil
	}
	return t.ExpiresAt
}

// Credential is a token together with the user it authenticates.
type Credential struct {
	Token Token
	User  User
}

// AccessQuery says what ReadAccess reads.
type AccessQuery struct {
	// Digest is the digest of the token the request presents.
	Digest Digest
	// Username, when not empty, is the FoldedUsername of the user of the
	// token's org that the request acts on.
	Username string
	// Tokens asks, with Username, for that user's tokens live at LiveAt.
	Tokens bool
	LiveAt time.Time
	// Into is where the tokens go: Access.Tokens is Into with them
	// appended, as append gives it (see UserQuery.Into), when the tokens
	// were asked for and the target found (otherwise Access.Tokens is
	// nil, whatever Into holds).
	Into []Token
}

// Access is what ReadAccess reads.
type Access struct {
	// Credential is the token of the digest and its user.
	Credential Credential
	// Target is the user AccessQuery.Username names; it is zero unless
	// TargetFound.
	Target      User
	TargetFound bool
	// Tokens are Target's tokens live at AccessQuery.LiveAt, ordered by
	// CreatedAt, then ID, when the query asked for them and the target
	// was found; nil otherwise.
	Tokens []Token
}

// Duckling is the latest activity report of one running instance of a user.
type Duckling struct {
	Org    string
	UserID string
	// ID is "rw" or "rs.N".
	ID string
	// Active is true for a report of activity, false for a report of
	// idleness.
	Active bool
	// At is when the report was made.
	At time.Time
}

// Activity is a user together with its Duckling reports.
type Activity struct {
	User      User
	Ducklings []Duckling
}

// Dive is a saved interactive view.
type Dive struct {
	ID                string
	Org               string
	Title             string
	Version           int
	RequiredResources []Resource
}

// EmbedTarget is the result of Store.GetEmbedTarget. Dive and User are
// zero unless their Found flag is set.
type EmbedTarget struct {
	Dive      Dive
	DiveFound bool
	User      User
	UserFound bool
}

// Resource is a database a Dive needs.
type Resource struct {
	URL   string
	Alias string
}

// EmbedSession is a minted Dive embed session. Its value is never stored,
// only its Digest.
type EmbedSession struct {
	Digest    Digest
	Org       string
	DiveID    string
	Version   int
	UserID    string
	Username  string
	Resources []Resource
	// InitialState is a JSON object, or nil.
	InitialState []byte
	AffinityKey  string
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

// Feedback is one page-feedback submission.
type Feedback struct {
	ID        string
	PagePath  string
	Text      string
	PageTitle string
	Source    string
	CreatedAt time.Time
}
