// Package orgadmin is the organization-administration service of a hosted
// analytical-database platform: service accounts, users, per-user compute
// instance ("Duckling") configuration, active accounts, bearer access tokens
// and Dive embed sessions.
//
// A Service holds every rule of the API and runs on any storage.Store (see
// the storage/memstore, storage/redisstore, storage/mongostore and
// storage/sqlstore packages).
// The httpserver package serves it as the standard /v1 REST API; Go programs
// can also call it directly.
//
// The operations of the API take an Auth first: Bearer(token), the access
// token a request presents, or a Caller that only the Service makes
// (Authenticate, ActAs, ActAsOrg). Each makes its checks in the order
// the API answers them: UNAUTHORIZED, then FORBIDDEN for what the caller's
// role decides, then BAD_REQUEST with every problem of the request, then
// NOT_FOUND, then FORBIDDEN for what depends on the target.
//
// The username an operation acts on (a path parameter of the API) is
// malformed, a BAD_REQUEST, when it is not 1 to 255 characters of valid
// UTF-8, as the specification bounds it; a name that breaks the username
// rule (ValidUsername) otherwise, such as "1bad", names no user: NOT_FOUND.
// Creating a user checks the whole rule: a BAD_REQUEST.
//
// Every operation returns an *Error on failure; its Code says what kind
// (BAD_REQUEST with Issues that list every problem found, UNAUTHORIZED,
// FORBIDDEN, NOT_FOUND, INTERNAL_SERVER_ERROR, or CANCELED when the
// caller's context was canceled during a store call). Classify an error with
// ErrorCode or errors.Is and the sentinels (ErrNotFound, ...), which see
// through wrapping, and get at its issues with errors.As.
//
// Every change an operation makes is recorded, atomically with it, as an
// audit event that Admins read with AuditEvents (and streamed to
// Config.AuditLog): who, when, what, on which target, through which
// request.
//
// Durations are time.Duration (whole seconds on the wire), enumerations
// are defined types with constants, and an input field whose absence
// differs from its zero value is an Optional, set with Some.
package orgadmin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/orgadmin/orgadmin/storage"
)

// Role is a user's role in its organization.
type Role string

// The roles. An Admin holds every privilege; a Member only those granted.
const (
	RoleAdmin  Role = "Admin"
	RoleMember Role = "Member"
)

// PrivilegeViewAllMembers allows listing the users of the organization.
const PrivilegeViewAllMembers = "member_management.view_all_members"

// TokenType is the kind of an access token.
type TokenType string

// The token types. Read-scaling tokens authenticate but may call no /v1
// operation.
const (
	TokenReadWrite   TokenType = "read_write"
	TokenReadScaling TokenType = "read_scaling"
)

// Config configures a Service. The zero value of every field is its
// documented default.
type Config struct {
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Rand is the source of token values, session values and ids. Nil means
	// crypto/rand.Reader.
	Rand io.Reader
	// MaxTokensPerUser bounds the live tokens of one user. Zero or a
	// negative value means 1000.
	MaxTokensPerUser int
	// MaxUsersPerOrg bounds the users of one organization, human users and
	// service accounts alike: creating one more is a BAD_REQUEST. Zero
	// means 100 000; a negative value means no limit. Services sharing a
	// store should use the same limit: the store keeps it under concurrent
	// creation only among creations made under it.
	MaxUsersPerOrg int
	// DefaultInstances is the instance configuration of a new user. The
	// zero value means read_write "standard" and read_scaling "standard"
	// with flock_size 4. It must satisfy the configuration rules.
	DefaultInstances InstanceConfig
	// EmbedSessionTTL is how long an embed session lives. Zero or a
	// negative value means 24h.
	EmbedSessionTTL time.Duration
	// MaxEmbedSessionsPerUser bounds the live embed sessions of one
	// service account: creating one more is a BAD_REQUEST; expired
	// sessions do not count. Zero means 10 000
	// (DefaultMaxEmbedSessionsPerUser); a negative value means no limit.
	// Services sharing a store should use the same limit.
	MaxEmbedSessionsPerUser int
	// DucklingLease is how long an activity report keeps a Duckling active
	// without renewal. Zero or a negative value means 10 minutes.
	DucklingLease time.Duration
	// AuditRetention is how long audit events are kept: each change drops
	// the events of its org older than that. Zero or a negative value
	// means 90 days (DefaultAuditRetention).
	AuditRetention time.Duration
	// MaxAuditEventsPerOrg bounds the audit events kept for one
	// organization: each change drops the oldest beyond it. Zero means
	// 100 000 (DefaultMaxAuditEventsPerOrg); a negative value means no
	// bound but the retention.
	MaxAuditEventsPerOrg int
	// RevokedTokenRetention is how long the store remembers the digest of
	// an invalidated token that never expires, so that presenting it again
	// is told apart (ErrRevokedToken) from a token never issued; a token
	// with an expiry is remembered until it would have expired. Zero or a
	// negative value means 30 days (DefaultRevokedTokenRetention).
	RevokedTokenRetention time.Duration
	// MaxRevokedTokensPerOrg bounds the revoked tokens remembered for one
	// organization: each revocation forgets, beyond it, those that would
	// be forgotten first (a forgotten token is refused as unknown,
	// ErrUnknownToken, rather than as revoked), so that however fast a
	// caller creates and revokes tokens, what the store keeps of them
	// stays bounded. Zero means 100 000 (DefaultMaxRevokedTokensPerOrg);
	// a negative value means no bound but the retention.
	MaxRevokedTokensPerOrg int
	// AuditLog, when not nil, receives one record per audit event, at
	// level Info with the message "audit", once the change and its event
	// are stored: for shipping the trail elsewhere (a SIEM).
	AuditLog *slog.Logger
}

// DefaultRevokedTokenRetention is Config.RevokedTokenRetention's default.
const DefaultRevokedTokenRetention = 30 * 24 * time.Hour

// DefaultMaxRevokedTokensPerOrg is Config.MaxRevokedTokensPerOrg's
// default.
const DefaultMaxRevokedTokensPerOrg = 100_000

// DefaultMaxUsersPerOrg is the limit of users of an organization when
// Config.MaxUsersPerOrg is zero.
const DefaultMaxUsersPerOrg = 100_000

// DefaultMaxEmbedSessionsPerUser is the limit of live embed sessions of a
// service account when Config.MaxEmbedSessionsPerUser is zero.
const DefaultMaxEmbedSessionsPerUser = 10_000

// Service implements the organization-administration API on a Store. It is
// safe for concurrent use and caches nothing: every call reads the store, so
// several Services (in several processes) may share one store.
type Service struct {
	store       storage.Store
	now         func() time.Time
	rand        io.Reader
	maxTokens   int
	maxUsers    int // 0: no limit
	maxSessions int // 0: no limit
	defaults    storage.InstanceConfig
	sessionTTL  time.Duration
	lease       time.Duration

	auditRetention time.Duration
	maxAuditEvents int // 0: no bound
	auditLog       *slog.Logger

	revokedRetention time.Duration
	maxRevoked       int // 0: no bound

	idMu   sync.Mutex
	lastID uint64 // the time and sequence of the last id minted
}

// New returns a Service on store. It panics if store is nil, or if
// cfg.DefaultInstances is set and breaks the configuration rules, as
// those are programming errors (found here rather than at the first
// call).
func New(store storage.Store, cfg Config) *Service {
	if store == nil {
		panic("orgadmin: New: nil store")
	}
	s := &Service{
		store:       store,
		now:         cfg.Now,
		rand:        cfg.Rand,
		maxTokens:   cfg.MaxTokensPerUser,
		maxUsers:    cfg.MaxUsersPerOrg,
		maxSessions: cfg.MaxEmbedSessionsPerUser,
		sessionTTL:  cfg.EmbedSessionTTL,
		lease:       cfg.DucklingLease,

		auditRetention: cfg.AuditRetention,
		maxAuditEvents: cfg.MaxAuditEventsPerOrg,
		auditLog:       cfg.AuditLog,

		revokedRetention: cfg.RevokedTokenRetention,
		maxRevoked:       cfg.MaxRevokedTokensPerOrg,
	}
	if s.revokedRetention <= 0 {
		s.revokedRetention = DefaultRevokedTokenRetention
	}
	if s.auditRetention <= 0 {
		s.auditRetention = DefaultAuditRetention
	}
	switch {
	case s.maxRevoked == 0:
		s.maxRevoked = DefaultMaxRevokedTokensPerOrg
	case s.maxRevoked < 0:
		s.maxRevoked = 0
	}
	switch {
	case s.maxAuditEvents == 0:
		s.maxAuditEvents = DefaultMaxAuditEventsPerOrg
	case s.maxAuditEvents < 0:
		s.maxAuditEvents = 0
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.maxTokens <= 0 {
		s.maxTokens = 1000
	}
	switch {
	case s.maxUsers == 0:
		s.maxUsers = DefaultMaxUsersPerOrg
	case s.maxUsers < 0:
		s.maxUsers = 0
	}
	switch {
	case s.maxSessions == 0:
		s.maxSessions = DefaultMaxEmbedSessionsPerUser
	case s.maxSessions < 0:
		s.maxSessions = 0
	}
	if s.sessionTTL <= 0 {
		s.sessionTTL = 24 * time.Hour
	}
	if s.lease <= 0 {
		s.lease = 10 * time.Minute
	}
	def := cfg.DefaultInstances
	if def == (InstanceConfig{}) {
		def = InstanceConfig{
			ReadWrite:   InstanceSide{Size: SizeStandard},
			ReadScaling: InstanceSide{Size: SizeStandard, FlockSize: 4},
		}
	}
	var is issues
	def.check(&is)
	if err := is.err(); err != nil {
		panic("orgadmin: Config.DefaultInstances: " + err.Error())
	}
	s.defaults = def.record()
	return s
}

// clock returns the current time in UTC, truncated to the millisecond: the
// precision of every time the API stores or shows.
func (s *Service) clock() time.Time {
	return s.now().UTC().Truncate(time.Millisecond)
}

// newID returns a new UUID of version 7: the millisecond of the Service's
// clock, then a sequence, then random bits from the Service's source.
// The ids one Service mints increase, in their text form too, in the
// order it mints them, even while its clock stands still (a test's fake
// clock) or steps back: each is at least the previous one plus one. So
// records ordered by creation time, then id (tokens), keep the order of
// their creation within a Service while its clock stands still; after a
// step back, a record's earlier time comes first.
func (s *Service) newID() (string, error) {
	var id uuid.UUID
	if err := s.readRandom(id[:]); err != nil {
		return "", &Error{Code: CodeInternal, Err: fmt.Errorf("new id: %w", err)}
	}
	ms := uint64(max(s.now().UnixMilli(), 0)) & (1<<48 - 1)
	s.idMu.Lock()
	t := max(ms<<12, s.lastID+1) // the millisecond, then a 12-bit sequence
	s.lastID = t
	s.idMu.Unlock()
	ms, seq := t>>12, t&0xfff
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i)) // #nosec G115 -- one byte of the 48-bit millisecond, kept on purpose
	}
	id[6] = 0x70 | byte(seq>>8) // #nosec G115 -- version 7, then the sequence's top 4 bits (seq < 4096)
	id[7] = byte(seq)           // #nosec G115 -- the sequence's low byte, kept on purpose
	id[8] = id[8]&0x3f | 0x80   // RFC 9562 variant
	return id.String(), nil
}

// readRandom fills b from the Service's source of randomness. b stays
// where the caller has it (on its stack): the default source,
// crypto/rand, is read in place, and any other through a buffer of its
// own, since an io.Reader may keep the slice it is given.
func (s *Service) readRandom(b []byte) error {
	if s.rand == rand.Reader {
		_, err := rand.Read(b)
		return err
	}
	buf := make([]byte, len(b))
	if _, err := io.ReadFull(s.rand, buf); err != nil {
		return err
	}
	copy(b, buf)
	return nil
}

// Ping reports whether the store answers.
func (s *Service) Ping(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return internal(ctx, "ping", err)
	}
	return nil
}

// storeErr turns a store failure into an *Error: ErrNotFound becomes
// NOT_FOUND naming what, anything else INTERNAL_SERVER_ERROR.
func (s *Service) storeErr(ctx context.Context, op string, err error, what string, path ...any) error {
	if errors.Is(err, storage.ErrNotFound) {
		return notFound(what, path...)
	}
	return internal(ctx, op, err)
}

// Optional is a field that may be left unset: an input field whose
// absence differs from its zero value (a TTL of zero is too short; no TTL
// means the token never expires). Set it with Some; the zero Optional is
// unset.
type Optional[T any] struct {
	// Value is the value, when Set.
	Value T
	// Set says whether there is a value.
	Set bool
}

// Some returns an Optional set to v.
func Some[T any](v T) Optional[T] { return Optional[T]{Value: v, Set: true} }

// Get returns the value and whether it is set.
func (o Optional[T]) Get() (T, bool) { return o.Value, o.Set }

// Or returns the value when it is set, and def otherwise.
func (o Optional[T]) Or(def T) T {
	if o.Set {
		return o.Value
	}
	return def
}

// recycler keeps the arrays that store reads append their records to
// (storage.UserQuery.Into, storage.AccessQuery.Into) for the next read.
// An operation turns the records it reads into its result and is then
// done with them; reading the next records into the same array spares
// the garbage collector most of what a listing allocates (BENCHMARKS.md,
// "Listings into reused arrays").
type recycler[T any] struct{ pool sync.Pool }

// maxRecycled bounds the records of an array kept for the next read.
const maxRecycled = 1024

// records of users and of tokens, as the listings read them.
var (
	userRecords  recycler[storage.User]
	tokenRecords recycler[storage.Token]
)

// get returns an array to read records into (an empty slice; nil when
// none is kept), with the holder to give back to put.
func (r *recycler[T]) get() *[]T {
	if h, ok := r.pool.Get().(*[]T); ok {
		return h
	}
	return new([]T)
}

// put keeps, in holder h, the array of recs, the records last read
// (into the array of get's slice or, when they outgrew it, another),
// cleared so that it keeps no record alive.
func (r *recycler[T]) put(h *[]T, recs []T) {
	if cap(recs) == 0 {
		recs = *h
	}
	if cap(recs) == 0 || cap(recs) > maxRecycled {
		return
	}
	clear(recs[:cap(recs)])
	*h = recs[:0]
	r.pool.Put(h)
}
