package orgadmin

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"

	"github.com/orgadmin/orgadmin/storage"
)

// Caller is an authenticated principal: the user a bearer token belongs
// to. Only the Service makes one (Authenticate, ActAs, ActAsOrg); its
// fields are read through its methods. A Caller built any other way, such
// as the zero Caller{}, is nobody: every operation refuses it with
// UNAUTHORIZED. A Caller is checked again by every operation it is given
// to: it stops working when its token is invalidated or expires, or its
// user is deleted.
type Caller struct {
	org              string
	userID           string
	username         string
	role             Role
	privileges       []string
	isServiceAccount bool
	tokenID          string
	tokenType        TokenType
	folded           string
	minted           bool // made by the Service
	// digest is the SHA-256 of the token Authenticate was given, and
	// hasDigest says there is one: each operation authenticates it again,
	// so a Caller outlives neither its token nor its user.
	digest    storage.Digest
	hasDigest bool
}

// Why an operation fails with UNAUTHORIZED: errors.Is finds one of these
// in its error. They are for logs and metrics; the answer is the same
// whatever the reason, and says nothing of it.
var (
	// ErrNoCredential: the request carries no token (over HTTP: no
	// Authorization header, several, or one that is not "Bearer <token>").
	ErrNoCredential = errors.New("no credential")
	// ErrUnknownToken: no live record has the token. It was never issued,
	// or its user was deleted, or it was invalidated so long ago that the
	// store has forgotten it (see ErrRevokedToken).
	ErrUnknownToken = errors.New("unknown token")
	// ErrRevokedToken: the token was invalidated (DeleteToken, or a
	// bootstrap replacing it). The store remembers its digest until it
	// would have expired, or for Config.RevokedTokenRetention when it
	// never expires; afterwards it is ErrUnknownToken.
	ErrRevokedToken = errors.New("revoked token")
	// ErrExpiredToken: the token is known, and its expiry has passed.
	ErrExpiredToken = errors.New("expired token")
	// ErrCallerNotIssued: a Caller passed to an operation was not made by
	// a Service (Authenticate, ActAs, ActAsOrg), such as Caller{}. (A
	// Caller another Service made is checked again against this one's
	// store: see Auth.)
	ErrCallerNotIssued = errors.New("caller not issued by the service")
	// ErrCallerGone: the user of a Caller that ActAs made was deleted
	// since (and perhaps created anew: a new user is another user).
	ErrCallerGone = errors.New("caller's user deleted")
)

// unauthorized is an UNAUTHORIZED error for the reason why.
func unauthorized(why error) *Error {
	return &Error{Code: CodeUnauthorized, Err: why}
}

// Org returns the id of the caller's organization.
func (c Caller) Org() string { return c.org }

// UserID returns the id of the caller's user; "" for a Caller of
// ActAsOrg.
func (c Caller) UserID() string { return c.userID }

// Username returns the caller's username, spelled as stored; "" for a
// Caller of ActAsOrg.
func (c Caller) Username() string { return c.username }

// Role returns the caller's role.
func (c Caller) Role() Role { return c.role }

// Privileges returns a copy of the privileges granted to the caller
// beyond its role.
func (c Caller) Privileges() []string { return slices.Clone(c.privileges) }

// IsServiceAccount reports whether the caller is a service account.
func (c Caller) IsServiceAccount() bool { return c.isServiceAccount }

// TokenID returns the id of the token the caller presented; "" for a
// Caller of ActAs or ActAsOrg.
func (c Caller) TokenID() string { return c.tokenID }

// TokenType returns the type of the token the caller presented
// (TokenReadWrite for a Caller of ActAs or ActAsOrg).
func (c Caller) TokenType() TokenType { return c.tokenType }

// valid reports whether the Service made c.
func (c Caller) valid() bool { return c.minted }

// Auth says who calls an operation: Bearer(token), the access token a
// request presents, which the operation authenticates in the same store
// read as the rest of what it needs; or a Caller that Authenticate, ActAs
// or ActAsOrg returned. A Caller is checked again against the store of
// the Service it is passed to, also when another Service made it: one of
// Authenticate by its token's digest (ErrUnknownToken where that store
// does not hold the token), one of ActAs by its user's id (ErrCallerGone
// where that is not the user of its name). One of ActAsOrg reads
// nothing: it is its org's Admin rights in any Service, so hand it only
// to code you would hand the Service.
type Auth interface{ isAuth() }

// Bearer is an access token presented as the credential of an operation,
// as in the header "Authorization: Bearer <token>". An operation called
// with an unknown, invalidated or expired token, or with a token of a
// deleted user, fails with UNAUTHORIZED.
type Bearer string

func (Bearer) isAuth() {}
func (Caller) isAuth() {}

// has reports whether the caller holds privilege p (an Admin holds all).
func (c Caller) has(p string) bool {
	return c.role == RoleAdmin || slices.Contains(c.privileges, p)
}

// isSelf reports whether the folded username names the caller.
func (c Caller) isSelf(folded string) bool { return c.folded == folded }

// maxTokenLen bounds the token values the Service hashes.
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
// Read-scaling tokens authenticate; the operations refuse them.
//
// The Caller keeps the token's digest (never its value), and every
// operation given it authenticates that digest again, in the store read it
// makes anyway: once the token is invalidated or expires, or its user is
// deleted, the Caller is UNAUTHORIZED, as the token is.
func (s *Service) Authenticate(ctx context.Context, token string) (Caller, error) {
	var a storage.Access
	c, err := s.authenticate(ctx, token, storage.AccessQuery{}, &a)
	if err != nil {
		return Caller{}, err
	}
	c.digest, c.hasDigest = a.Credential.Token.Digest, true
	return c, nil
}

// authenticate reads into a the credential of token and, with it, what q
// asks of the request's target (authenticate sets q's Digest and LiveAt),
// and returns the caller. (The records are read into the caller's a, not
// returned: they are large, and this runs on every request.)
func (s *Service) authenticate(ctx context.Context, token string, q storage.AccessQuery, a *storage.Access) (Caller, error) {
	if len(token) == 0 {
		return Caller{}, unauthorized(ErrNoCredential)
	}
	if len(token) > maxTokenLen {
		return Caller{}, unauthorized(ErrUnknownToken)
	}
	return s.authenticateDigest(ctx, digestOf(token), q, a)
}

// authenticateDigest is authenticate for the token whose digest is d.
func (s *Service) authenticateDigest(ctx context.Context, d storage.Digest, q storage.AccessQuery, a *storage.Access) (Caller, error) {
	now := s.now()
	q.Digest, q.LiveAt = d, now
	var err error
	*a, err = s.store.ReadAccess(ctx, q)
	if errors.Is(err, storage.ErrRevoked) {
		return Caller{}, unauthorized(ErrRevokedToken)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return Caller{}, unauthorized(ErrUnknownToken)
	}
	if err != nil {
		return Caller{}, internal(ctx, "authenticate", err)
	}
	t, u := &a.Credential.Token, &a.Credential.User
	if t.UserID != u.ID || t.Org != u.Org {
		return Caller{}, unauthorized(ErrUnknownToken)
	}
	if !t.LiveAt(now) {
		return Caller{}, unauthorized(ErrExpiredToken)
	}
	if a.TargetFound && a.Target.Org != u.Org {
		// Never another org's user, whatever the store answers.
		a.Target, a.TargetFound, a.Tokens = storage.User{}, false, nil
	}
	c := callerOf(u, t.ID)
	c.tokenType = TokenType(t.Type)
	return c, nil
}

// ActAs returns the Caller of the user of org named username, as if it had
// presented one of its read_write tokens, for Go programs that act on
// behalf of a user they have authenticated themselves. It fails with
// BAD_REQUEST for a malformed username (see the package doc), and with
// NOT_FOUND when the user does not exist.
//
// Every operation given the Caller reads its user again: once the user is
// deleted the Caller is UNAUTHORIZED (ErrCallerGone), and a privilege
// granted since counts.
func (s *Service) ActAs(ctx context.Context, org, username string) (Caller, error) {
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return Caller{}, err
	}
	return callerOf(&u, ""), nil
}

// ActAsOrg returns a Caller with the rights of an Admin of org that is
// no user of it: for Go programs that administer or inspect an
// organization as the platform (a test fake, a maintenance job), where
// no Admin is at hand. It reads nothing: an org that does not exist has
// no users, tokens or Dives to find. It is no credential, and like a
// human Admin it may not create tokens for human users.
func (s *Service) ActAsOrg(org string) Caller {
	return Caller{org: org, role: RoleAdmin, tokenType: TokenReadWrite, minted: true}
}

// callerOf is the Caller of user u presenting the read_write token tokenID.
func callerOf(u *storage.User, tokenID string) Caller {
	return Caller{
		org:              u.Org,
		userID:           u.ID,
		username:         u.Username,
		role:             Role(u.Role),
		privileges:       u.Privileges,
		isServiceAccount: u.IsServiceAccount,
		tokenID:          tokenID,
		tokenType:        TokenReadWrite,
		folded:           u.FoldedUsername,
		minted:           true,
	}
}

// op is an operation of the /v1 API.
type op int

const (
	opGetInstances op = iota + 1
	opSetInstances
	opGetActiveAccounts
	opCreateServiceAccount
	opListUsers
	opDeleteUser
	opCreateToken
	opListTokens
	opDeleteToken
	opCreateEmbedSession
	opAuditEvents
)

// authorize decides what the caller's role alone decides about o on the
// user t names (nil where o names none): it returns FORBIDDEN when no
// target could make the call allowed, and nil otherwise. What depends on
// the target record is decided later, by the operation.
func authorize(c Caller, o op, t *target) error {
	if c.tokenType != TokenReadWrite {
		return forbidden("read_scaling tokens may not call the API")
	}
	admin := c.role == RoleAdmin
	self := t != nil && t.folded != "" && c.isSelf(t.folded)
	ok := false
	switch o {
	case opGetInstances, opSetInstances, opCreateToken, opListTokens, opDeleteToken:
		ok = admin || self
	case opGetActiveAccounts, opCreateServiceAccount, opCreateEmbedSession, opDeleteUser, opAuditEvents:
		ok = admin
	case opListUsers:
		ok = c.has(PrivilegeViewAllMembers)
	}
	if !ok {
		return forbidden("the caller may not perform this operation")
	}
	return nil
}

// target is the user a request's path names.
type target struct {
	// folded is the name's folded key; "" when the name is malformed.
	folded string
	// issues are the problems of a name that is not 1 to 255 code points
	// of valid UTF-8 (a BAD_REQUEST).
	issues issues
	// canExist is false for a name that breaks the username pattern, or is
	// malformed: no user can have it (NOT_FOUND).
	canExist bool
}

// pathTarget parses, once, the username a request's path names.
func pathTarget(name string) target {
	var t target
	if !stringFits(name, 1, MaxUsernameLen) {
		t.issues.checkString(name, 1, MaxUsernameLen, "username")
		return t
	}
	t.folded, t.canExist = FoldUsername(name), usernamePattern(name)
	return t
}

// read says what an operation reads of its target with the caller's
// credential.
type read int

const (
	// readNone: nothing; the operation's own store call finds the target.
	readNone read = iota
	// readUser: the target's record.
	readUser
	// readTokens: the target's record and its live tokens.
	readTokens
)

// call is an operation under way: its caller, and what was read of its
// target.
type call struct {
	Caller
	// access is what was read with a bearer token: the credential, and
	// the target (access.Target, when access.TargetFound) with its tokens.
	// An operation that reads tokens may set access.Tokens, before begin,
	// to an empty slice whose array the store reads them into.
	access storage.Access
}

// target returns the user the operation acts on, as read with the
// caller's credential, and whether it was found.
func (c *call) target() (*storage.User, bool) {
	return &c.access.Target, c.access.TargetFound
}

// begin makes the checks every operation makes first, in the order the API
// answers them (see the package doc): it authenticates a (UNAUTHORIZED), decides what
// the caller's role alone decides about o on the user t names
// (FORBIDDEN), then reports the problems of the request (BAD_REQUEST): those
// of the path username and is, all at once. With the credential, in the
// same store read, it reads into c what r asks of t. The rest of the order
// is the operation's: NOT_FOUND for a missing target, then FORBIDDEN for
// what depends on it. An operation without a target whose input can be
// large (a body of many items) checks it after begin, with nil here: the
// order is the same, and a request refused before BAD_REQUEST does not
// pay for checking its input.
func (s *Service) begin(ctx context.Context, c *call, a Auth, o op, t *target, r read, is issues) error {
	want := t != nil && t.canExist && r != readNone
	// What is read with a credential: the target, with its tokens when r
	// asks for them, into the array the operation gave.
	var q storage.AccessQuery
	if want {
		q.Username, q.Tokens = t.folded, r == readTokens
	}
	if q.Tokens {
		q.Into = c.access.Tokens[:0]
	}
	switch a := a.(type) {
	case Bearer:
		var err error
		if c.Caller, err = s.authenticate(ctx, string(a), q, &c.access); err != nil {
			return err
		}
		want = false
	case Caller:
		if !a.valid() {
			return unauthorized(ErrCallerNotIssued)
		}
		if a.hasDigest { // Authenticate's: the token is read again
			var err error
			if c.Caller, err = s.authenticateDigest(ctx, a.digest, q, &c.access); err != nil {
				return err
			}
			c.digest, c.hasDigest = a.digest, true
			want = false
			break
		}
		c.Caller = a
		if a.userID != "" { // ActAs's: its user must still be the same
			if err := s.refreshCaller(ctx, &c.Caller); err != nil {
				return err
			}
		}
	default:
		return unauthorized(ErrNoCredential)
	}
	if err := authorize(c.Caller, o, t); err != nil {
		return err
	}
	if t != nil && len(t.issues) > 0 {
		is = append(append(issues{}, t.issues...), is...)
	}
	if err := is.err(); err != nil {
		return err
	}
	if want {
		// A Caller needs no credential read: its target is read now that
		// the checks allow it.
		return s.readTarget(ctx, &c.access, c.org, t.folded, r == readTokens)
	}
	return nil
}

// refreshCaller reads c's user again: UNAUTHORIZED (ErrCallerGone) when it
// was deleted since, else c with the user's role and privileges as they
// are now.
func (s *Service) refreshCaller(ctx context.Context, c *Caller) error {
	u, err := s.store.GetUser(ctx, c.org, c.folded)
	if errors.Is(err, storage.ErrNotFound) || err == nil && u.ID != c.userID {
		return unauthorized(ErrCallerGone)
	}
	if err != nil {
		return internal(ctx, "get user", err)
	}
	c.role, c.privileges, c.isServiceAccount = Role(u.Role), u.Privileges, u.IsServiceAccount
	return nil
}

// readTarget reads into a the user of org whose folded username is folded
// and, when tokens is set, its live tokens. A missing user is not found.
func (s *Service) readTarget(ctx context.Context, a *storage.Access, org, folded string, tokens bool) error {
	u, err := s.store.GetUser(ctx, org, folded)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return internal(ctx, "get user", err)
	}
	if tokens {
		if a.Tokens, err = s.store.ListTokens(ctx, org, u.ID, s.now()); err != nil {
			return internal(ctx, "list tokens", err)
		}
	}
	a.Target, a.TargetFound = u, true
	return nil
}

// resolveUser returns the user of org named by a username given through
// the Go API. It fails with BAD_REQUEST for a malformed name and NOT_FOUND
// for a missing user; a name that breaks the username pattern cannot
// exist.
func (s *Service) resolveUser(ctx context.Context, org, name string) (storage.User, error) {
	t := pathTarget(name)
	if err := t.issues.err(); err != nil {
		return storage.User{}, err
	}
	if !t.canExist {
		return storage.User{}, notFound("user", "username")
	}
	u, err := s.store.GetUser(ctx, org, t.folded)
	if err != nil {
		return storage.User{}, s.storeErr(ctx, "get user", err, "user", "username")
	}
	return u, nil
}
