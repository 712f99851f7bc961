// Package orgadmin is the organization-administration service of a hosted
// analytical-database platform: service accounts, users, per-user compute
// instance ("Duckling") configuration, active accounts, bearer access tokens
// and Dive embed sessions.
//
// A Service holds every rule of the API and runs on any storage.Store (see
// the storage/memstore, storage/redisstore and storage/mongostore packages).
// The httpserver package serves it as the standard /v1 REST API; Go programs
// can also call it directly.
//
// Every operation returns an *Error on failure; its Code says what kind
// (BAD_REQUEST with Issues that list every problem found, UNAUTHORIZED,
// FORBIDDEN, NOT_FOUND, INTERNAL_SERVER_ERROR).
package orgadmin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
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
	// MaxTokensPerUser bounds the live tokens of one user. Zero means 1000.
	MaxTokensPerUser int
	// DefaultInstances is the instance configuration of a new user. The
	// zero value means read_write "standard" and read_scaling "standard"
	// with flock_size 4. It must satisfy the configuration rules.
	DefaultInstances InstanceConfig
	// EmbedSessionTTL is how long an embed session lives. Zero means 24h.
	EmbedSessionTTL time.Duration
	// DucklingLease is how long an activity report keeps a Duckling active
	// without renewal. Zero means 10 minutes.
	DucklingLease time.Duration
}

// Service implements the organization-administration API on a Store. It is
// safe for concurrent use and caches nothing: every call reads the store, so
// several Services (in several processes) may share one store.
type Service struct {
	store      storage.Store
	now        func() time.Time
	rand       io.Reader
	maxTokens  int
	defaults   storage.InstanceConfig
	sessionTTL time.Duration
	lease      time.Duration
}

// New returns a Service on store. It panics if cfg.DefaultInstances is set
// and breaks the configuration rules, as that is a programming error.
func New(store storage.Store, cfg Config) *Service {
	s := &Service{
		store:      store,
		now:        cfg.Now,
		rand:       cfg.Rand,
		maxTokens:  cfg.MaxTokensPerUser,
		sessionTTL: cfg.EmbedSessionTTL,
		lease:      cfg.DucklingLease,
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.maxTokens == 0 {
		s.maxTokens = 1000
	}
	if s.sessionTTL == 0 {
		s.sessionTTL = 24 * time.Hour
	}
	if s.lease == 0 {
		s.lease = 10 * time.Minute
	}
	def := cfg.DefaultInstances
	if def == (InstanceConfig{}) {
		def = InstanceConfig{
			ReadWrite:   &InstanceSide{InstanceSize: SizeStandard},
			ReadScaling: &InstanceSide{InstanceSize: SizeStandard, FlockSize: Ptr(4)},
		}
	}
	c, err := def.toRecord(nil)
	if err != nil {
		panic("orgadmin: Config.DefaultInstances: " + err.Error())
	}
	s.defaults = c
	return s
}

// Store returns the store the Service runs on.
func (s *Service) Store() storage.Store { return s.store }

// clock returns the current time in UTC, truncated to the millisecond: the
// precision of every time the API stores or shows.
func (s *Service) clock() time.Time {
	return s.now().UTC().Truncate(time.Millisecond)
}

// newID returns a random (version 4) UUID from the Service's source.
func (s *Service) newID() (string, error) {
	id, err := uuid.NewRandomFromReader(s.rand)
	if err != nil {
		return "", internal("new id", err)
	}
	return id.String(), nil
}

// Ping reports whether the store answers.
func (s *Service) Ping(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return internal("ping", err)
	}
	return nil
}

// Caller is an authenticated principal: the user a bearer token belongs to.
type Caller struct {
	Org              string
	UserID           string
	Username         string
	Role             Role
	Privileges       []string
	IsServiceAccount bool
	TokenID          string
	TokenType        TokenType

	folded string
}

// has reports whether the caller holds privilege p (an Admin holds all).
func (c Caller) has(p string) bool {
	if c.Role == RoleAdmin {
		return true
	}
	for _, q := range c.Privileges {
		if q == p {
			return true
		}
	}
	return false
}

// isSelf reports whether the folded path username names the caller.
func (c Caller) isSelf(folded string) bool { return c.folded == folded }

// BearerToken extracts the token from an Authorization header value of the
// form "Bearer <token>" (the scheme is case-insensitive). It reports false
// for any other form.
func BearerToken(header string) (string, bool) {
	const scheme = "bearer"
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) || header[len(scheme)] != ' ' {
		return "", false
	}
	tok := strings.Trim(header[len(scheme):], " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// maxTokenLen bounds the token values Authenticate will hash.
const maxTokenLen = 512

// digestOf returns the SHA-256 of a token or session value. A value of up
// to maxTokenLen bytes is hashed from a copy on the stack: []byte(value)
// would allocate for any value longer than 32 bytes, on every request.
func digestOf(value string) [sha256.Size]byte {
	var buf [maxTokenLen]byte
	if len(value) <= len(buf) {
		return sha256.Sum256(append(buf[:0], value...))
	}
	return sha256.Sum256([]byte(value))
}

// Authenticate returns the caller a token value belongs to. It fails with
// UNAUTHORIZED when the token is unknown, invalidated, expired or belongs to
// a deleted user, and with INTERNAL_SERVER_ERROR when the store fails.
// Read-scaling tokens authenticate; Authorize refuses them.
func (s *Service) Authenticate(ctx context.Context, token string) (Caller, error) {
	if len(token) == 0 || len(token) > maxTokenLen {
		return Caller{}, ErrUnauthorized
	}
	cred, err := s.store.TokenByDigest(ctx, digestOf(token))
	return s.callerOfCredential(cred, err, s.now())
}

// callerOfCredential is the Caller of a credential the store read (with
// err, the store's answer) for a token presented at now.
func (s *Service) callerOfCredential(cred storage.Credential, err error, now time.Time) (Caller, error) {
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Caller{}, ErrUnauthorized
		}
		return Caller{}, internal("authenticate", err)
	}
	t, u := cred.Token, cred.User
	if !t.LiveAt(now) || t.UserID != u.ID || t.Org != u.Org {
		return Caller{}, ErrUnauthorized
	}
	c := callerOf(u, t.ID)
	c.TokenType = TokenType(t.Type)
	return c, nil
}

// ActAs returns the Caller of the user of org named username, as if it had
// presented one of its read_write tokens, for Go programs that act on
// behalf of a user they have authenticated themselves. It fails with
// NOT_FOUND when the user does not exist.
func (s *Service) ActAs(ctx context.Context, org, username string) (Caller, error) {
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return Caller{}, err
	}
	return callerOf(u, ""), nil
}

// callerOf is the Caller of user u presenting the read_write token tokenID.
func callerOf(u storage.User, tokenID string) Caller {
	return Caller{
		Org:              u.Org,
		UserID:           u.ID,
		Username:         u.Username,
		Role:             Role(u.Role),
		Privileges:       u.Privileges,
		IsServiceAccount: u.IsServiceAccount,
		TokenID:          tokenID,
		TokenType:        TokenReadWrite,
		folded:           u.FoldedUsername,
	}
}

// Op names an API operation for Authorize.
type Op int

// The operations of the /v1 API.
const (
	OpGetInstances Op = iota + 1
	OpSetInstances
	OpGetActiveAccounts
	OpCreateServiceAccount
	OpListUsers
	OpDeleteUser
	OpCreateToken
	OpListTokens
	OpDeleteToken
	OpCreateEmbedSession
)

// Authorize decides what the caller's role alone decides about op on the
// user named target (a path username, or "" where op has none): it returns
// FORBIDDEN when no target could make the call allowed, and nil otherwise.
// Every operation calls it first; an HTTP layer may call it before decoding
// a body so that a 403 comes before a 400. Checks that depend on the target
// record come later, in the operation.
func (s *Service) Authorize(c Caller, op Op, target string) error {
	if c.TokenType != TokenReadWrite {
		return forbidden("read_scaling tokens may not call the API")
	}
	admin := c.Role == RoleAdmin
	self := target != "" && c.isSelf(FoldUsername(target))
	ok := false
	switch op {
	case OpGetInstances, OpSetInstances, OpCreateToken, OpListTokens, OpDeleteToken:
		ok = admin || self
	case OpGetActiveAccounts, OpCreateServiceAccount, OpCreateEmbedSession, OpDeleteUser:
		ok = admin
	case OpListUsers:
		ok = c.has(PrivilegeViewAllMembers)
	}
	if !ok {
		return forbidden("the caller may not perform this operation")
	}
	return nil
}

// resolveUser returns the user of the caller's org named by a path username.
// It fails with BAD_REQUEST for a malformed name and NOT_FOUND for a missing
// user; a name that breaks the username pattern cannot exist.
func (s *Service) resolveUser(ctx context.Context, org, name string) (storage.User, error) {
	folded, canExist, err := pathUsername(name)
	if err != nil {
		return storage.User{}, err
	}
	if !canExist {
		return storage.User{}, notFound("user", "username")
	}
	u, err := s.store.GetUser(ctx, org, folded)
	if err != nil {
		return storage.User{}, s.storeErr("get user", err, "user", "username")
	}
	return u, nil
}

// userIDOf returns the id of the user named username in the caller's org.
// When the name is the caller's own, it is the id read when the caller
// authenticated, which saves a store round trip on the commonest requests;
// otherwise it is read as resolveUser reads it, and fails the same way.
func (s *Service) userIDOf(ctx context.Context, c Caller, username string) (string, error) {
	folded, canExist, err := pathUsername(username)
	if err != nil {
		return "", err
	}
	if canExist && c.folded != "" && c.UserID != "" && folded == c.folded {
		return c.UserID, nil
	}
	u, err := s.resolveUser(ctx, c.Org, username)
	if err != nil {
		return "", err
	}
	return u.ID, nil
}

// storeErr turns a store failure into an *Error: ErrNotFound becomes
// NOT_FOUND naming what, anything else INTERNAL_SERVER_ERROR.
func (s *Service) storeErr(op string, err error, what string, path ...any) error {
	if errors.Is(err, storage.ErrNotFound) {
		return notFound(what, path...)
	}
	return internal(op, err)
}

// Ptr returns a pointer to v, for the optional fields of inputs.
func Ptr[T any](v T) *T { return &v }

// formatTime is the wire form of every time: RFC 3339, UTC, milliseconds.
const formatTime = "2006-01-02T15:04:05.000Z"

// FormatTime formats t as the API shows times: RFC 3339 in UTC with
// millisecond precision.
func FormatTime(t time.Time) string {
	return string(AppendTime(make([]byte, 0, len(formatTime)), t))
}

// AppendTime appends t to b as FormatTime formats it, for encoders that
// write an answer into one buffer.
func AppendTime(b []byte, t time.Time) []byte {
	sec := t.Unix()
	if sec < minFormatSec || sec > maxFormatSec {
		return t.UTC().AppendFormat(b, formatTime)
	}
	// Every answer carries these, and time.Format reads its layout and
	// converts the instant anew for each part: the fixed form is written
	// directly from one conversion of the day (the civil-from-days
	// algorithm of H. Hinnant), as time.Format would write it.
	days := floorDiv(sec, 86400)
	clock := int(sec - days*86400)
	z := days + 719468 // days since 0000-03-01
	era := floorDiv(z, 146097)
	doe := int(z - era*146097)
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day := doy - (153*mp+2)/5 + 1
	month := mp + 3
	if month > 12 {
		month -= 12
	}
	year := yoe + int(era)*400
	if month <= 2 {
		year++
	}
	ms := t.Nanosecond() / 1e6
	f := [len(formatTime)]byte{
		byte('0' + year/1000), byte('0' + year/100%10), byte('0' + year/10%10), byte('0' + year%10), '-',
		byte('0' + month/10), byte('0' + month%10), '-', byte('0' + day/10), byte('0' + day%10), 'T',
		byte('0' + clock/36000), byte('0' + clock/3600%10), ':',
		byte('0' + clock/600%6), byte('0' + clock/60%10), ':',
		byte('0' + clock%60/10), byte('0' + clock%10), '.',
		byte('0' + ms/100), byte('0' + ms/10%10), byte('0' + ms%10), 'Z',
	}
	return append(b, f[:]...)
}

// The instants AppendTime writes directly: years 0000 to 9999, UTC.
const (
	minFormatSec = -62167219200 // 0000-01-01T00:00:00Z
	maxFormatSec = 253402300799 // 9999-12-31T23:59:59Z
)

// floorDiv is a/b rounded down, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}
