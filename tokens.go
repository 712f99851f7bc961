package orgadmin

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Token is an access token as the API shows it. Value is set only in the
// result of CreateToken and SeedToken, and nowhere else.
type Token struct {
	Value       string
	ID          string
	Name        string
	Description string
	// ExpireAt is zero for a token that never expires.
	ExpireAt  time.Time
	CreatedAt time.Time
	Type      TokenType
}

// ReadOnly reports whether the token is read-only: exactly the read_scaling
// tokens are.
func (t Token) ReadOnly() bool { return t.Type == TokenReadScaling }

func tokenFromRecord(t storage.Token) Token {
	var out Token
	setToken(&out, &t)
	return out
}

// setToken sets every field of *dst from the record t (no Value: a
// record has none), field by field, as setUser does.
func setToken(dst *Token, t *storage.Token) {
	dst.Value, dst.ID, dst.Name, dst.Description = "", t.ID, t.Name, t.Description
	dst.ExpireAt, dst.CreatedAt, dst.Type = t.ExpiresAt, t.CreatedAt, TokenType(t.Type)
}

// CreateTokenInput is the body of create token.
type CreateTokenInput struct {
	// Name is 1 to 255 characters.
	Name string
	// TTL is the token's lifetime: a whole number of seconds from
	// MinTokenTTL (5 minutes) to MaxTokenTTL (365 days), such as
	// orgadmin.Some(time.Hour). Unset means the token never expires. A
	// TTL out of range or not a whole number of seconds is a BAD_REQUEST
	// whose issue is at "ttl".
	TTL Optional[time.Duration]
	// Description is at most 1000 characters; "" means none.
	Description string
	// Type is TokenReadWrite (the default, when unset) or
	// TokenReadScaling.
	Type Optional[TokenType]
	// DecodeIssues are the problems found while decoding the input from
	// its wire form (a field of the wrong JSON type, say, which is then
	// left unset). The operation reports them with every other problem of
	// the request, in its order of checks. Go callers leave it nil.
	DecodeIssues []Issue
}

func (in CreateTokenInput) check(is *issues) {
	is.checkString(in.Name, 1, MaxTokenNameLen, "name")
	if ttl, ok := in.TTL.Get(); ok {
		is.checkSeconds(ttl, int64(MinTokenTTL/time.Second), int64(MaxTokenTTL/time.Second), "ttl")
	}
	is.checkString(in.Description, 0, MaxDescriptionLen, "description")
	if typ, ok := in.Type.Get(); ok {
		checkEnum(is, typ, []TokenType{TokenReadWrite, TokenReadScaling}, "token_type")
	}
}

// problems returns every problem of in.
func (in CreateTokenInput) problems() issues {
	var is issues
	in.check(&is)
	return is.withDecoded(in.DecodeIssues)
}

// CreateToken mints an access token for the user named username in the
// caller's org and returns it with its value, which is shown here only. A
// user may create tokens for themself; an Admin also for service accounts,
// never for another human user. It fails with FORBIDDEN when the caller may
// not, BAD_REQUEST when the input breaks a rule or the user holds the
// maximum number of live tokens, and NOT_FOUND when the user does not
// exist.
func (s *Service) CreateToken(ctx context.Context, a Auth, username string, in CreateTokenInput) (Token, error) {
	t := pathTarget(username)
	var c call
	if err := s.begin(ctx, &c, a, opCreateToken, &t, readUser, in.problems()); err != nil {
		return Token{}, err
	}
	u, ok := c.target()
	if !ok {
		return Token{}, notFound("user", "username")
	}
	if u.ID != c.userID && !u.IsServiceAccount {
		return Token{}, forbidden("tokens of a human user can only be created by that user")
	}
	value, err := s.newSecret(tokenPrefix)
	if err != nil {
		return Token{}, internal(ctx, "mint token", err)
	}
	return s.insertToken(ctx, u, value, in, actorOf(c.Caller), ActionTokenCreate)
}

// insertToken stores a token of value for u, as described by in (already
// validated).
func (s *Service) insertToken(ctx context.Context, u *storage.User, value string, in CreateTokenInput, who actor, action string) (Token, error) {
	id, err := s.newID()
	if err != nil {
		return Token{}, err
	}
	aud, ev, err := s.audited(ctx, u.Org, who, change{action: action, kind: TargetToken, targetID: id, targetUsername: u.Username})
	if err != nil {
		return Token{}, err
	}
	now := ev.At
	rec := storage.Token{
		ID:          id,
		Org:         u.Org,
		UserID:      u.ID,
		Digest:      sha256.Sum256([]byte(value)),
		Name:        in.Name,
		Description: in.Description,
		Type:        string(in.Type.Or(TokenReadWrite)),
		CreatedAt:   now,
	}
	if ttl, ok := in.TTL.Get(); ok {
		rec.ExpiresAt = now.Add(ttl)
	}
	switch err := s.store.CreateToken(ctx, rec, storage.TokenLimit{Max: s.maxTokens, LiveAt: now}, aud); {
	case errors.Is(err, storage.ErrLimitExceeded):
		return Token{}, badRequest(Issue{Message: "The user holds the maximum number of tokens", Path: Path{}, Code: IssueTooBig})
	case errors.Is(err, storage.ErrAlreadyExists):
		return Token{}, badRequest(Issue{Message: "Token value already in use", Path: NewPath("value"), Code: IssueAlreadyExists})
	case errors.Is(err, storage.ErrNotFound):
		return Token{}, notFound("user", "username")
	case err != nil:
		// The store failed, perhaps after it stored the token (an answer
		// lost on its way back). Its value is never shown, so such a token
		// could only hold a place under the limit: take it out again, by
		// its id, which no one else has.
		s.withdrawToken(ctx, rec, ev, u.Username, who)
		return Token{}, internal(ctx, "create token", err)
	}
	s.emit(ctx, ev)
	t := tokenFromRecord(rec)
	t.Value = value
	return t, nil
}

// withdrawTimeout bounds withdrawToken, which runs after its caller's
// context may have ended.
const withdrawTimeout = 5 * time.Second

// withdrawToken deletes rec, a token whose creation failed and may have
// been stored all the same. It first looks for the token among its
// user's. When it finds the token, its deletion is an audit event of the
// same actor, after the token's creation's own, created: both go to
// Config.AuditLog, as both are in the trail. When the token is not
// listed, it was never a token, and its deletion takes out, with no
// event, whatever of it a store that writes a token in steps (a Redis
// Cluster) may have written: an event would record a change that never
// was, which a store that can leave an interrupted deletion's event
// pending (mongostore) would count as made, the token being absent, and
// the creation with it. It is best effort: when the token cannot be
// looked for, or the deletion fails, a token stored stays listed, for
// its user or an Admin to revoke.
func (s *Service) withdrawToken(ctx context.Context, rec storage.Token, created storage.Event, username string, who actor) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	toks, err := s.store.ListTokens(ctx, rec.Org, rec.UserID, rec.CreatedAt)
	switch {
	case err != nil:
		return // the store fails still: a token stored stays listed
	case !slices.ContainsFunc(toks, func(t storage.Token) bool { return t.ID == rec.ID }):
		_ = s.store.DeleteToken(ctx, rec.Org, rec.UserID, rec.ID, s.revocation(rec.CreatedAt), nil)
		return
	}
	aud, ev, err := s.audited(ctx, rec.Org, who, change{action: ActionTokenDelete, kind: TargetToken, targetID: rec.ID, targetUsername: username})
	if err != nil {
		return
	}
	if s.store.DeleteToken(ctx, rec.Org, rec.UserID, rec.ID, s.revocation(rec.CreatedAt), aud) == nil {
		s.emit(ctx, created)
		s.emit(ctx, ev)
	}
}

// revocation is the storage.Revocation of a token revoked at at: its
// tombstone lasts until it would have expired, or revokedRetention, and
// its org keeps at most maxRevoked of them.
func (s *Service) revocation(at time.Time) storage.Revocation {
	return storage.Revocation{At: at, KeepUntil: at.Add(s.revokedRetention), MaxPerOrg: s.maxRevoked}
}

// ListTokens returns the live tokens (neither expired nor invalidated) of
// the user named username in the caller's org, ordered by creation time then
// id, without their values. A user may list their own tokens; an Admin
// those of any user. It fails with FORBIDDEN, BAD_REQUEST for a malformed
// username, and NOT_FOUND.
func (s *Service) ListTokens(ctx context.Context, a Auth, username string) ([]Token, error) {
	t := pathTarget(username)
	recs := tokenRecords.get()
	c := call{access: storage.Access{Tokens: *recs}}
	defer func() { tokenRecords.put(recs, c.access.Tokens) }()
	if err := s.begin(ctx, &c, a, opListTokens, &t, readTokens, nil); err != nil {
		return nil, err
	}
	if _, ok := c.target(); !ok {
		return nil, notFound("user", "username")
	}
	return tokensFromRecords(c.access.Tokens), nil
}

func tokensFromRecords(recs []storage.Token) []Token {
	out := make([]Token, len(recs))
	for i := range recs {
		setToken(&out[i], &recs[i])
	}
	return out
}

// maxTokenIDLen bounds token ids in paths; longer ones are a BAD_REQUEST.
const maxTokenIDLen = 255

// DeleteToken invalidates the token tokenID (its UUID, in either case) of
// the user named username in the caller's org; from then on it
// authenticates nowhere. It fails like ListTokens, with BAD_REQUEST for a
// tokenID that is empty or longer than 255 characters, and with NOT_FOUND
// when the user has no such live token.
func (s *Service) DeleteToken(ctx context.Context, a Auth, username, tokenID string) error {
	var is issues
	is.checkString(tokenID, 1, maxTokenIDLen, "token_id")
	if id, ok := canonicalUUID(tokenID); ok {
		tokenID = id // a UUID is the same in upper case (RFC 9562)
	}
	t := pathTarget(username)
	recs := tokenRecords.get()
	c := call{access: storage.Access{Tokens: *recs}}
	defer func() { tokenRecords.put(recs, c.access.Tokens) }()
	if err := s.begin(ctx, &c, a, opDeleteToken, &t, readTokens, is); err != nil {
		return err
	}
	u, ok := c.target()
	if !ok {
		return notFound("user", "username")
	}
	// Only a token read live is deleted with an event (the store checks
	// again): a store that cannot tell an interrupted deletion from one
	// made (mongostore counts one made when the token is absent) would
	// otherwise record the deletion of a token that never was. Another
	// id is still deleted, without one: a store that writes a token in
	// steps (a Redis Cluster) removes what of it a call cut short left.
	if !slices.ContainsFunc(c.access.Tokens, func(r storage.Token) bool { return r.ID == tokenID }) {
		_ = s.store.DeleteToken(ctx, c.org, u.ID, tokenID, s.revocation(s.now()), nil)
		return notFound("token", "token_id")
	}
	aud, ev, err := s.audited(ctx, c.org, actorOf(c.Caller), change{action: ActionTokenDelete, kind: TargetToken, targetID: tokenID, targetUsername: u.Username})
	if err != nil {
		return err
	}
	if err := s.store.DeleteToken(ctx, c.org, u.ID, tokenID, s.revocation(s.now()), aud); err != nil {
		return s.storeErr(ctx, "delete token", err, "token", "token_id")
	}
	s.emit(ctx, ev)
	return nil
}

// SeedTokenInput describes a token with a chosen value, for bootstrap and
// fixtures.
type SeedTokenInput struct {
	CreateTokenInput
	// Value is 16 to 512 printable ASCII characters other than the space,
	// which a bearer credential cannot hold (RFC 6750).
	Value string
}

// Bounds of seeded token values.
const (
	MinSeedTokenLen = 16
	MaxSeedTokenLen = maxTokenLen // 512
)

func (in SeedTokenInput) check(is *issues) {
	in.CreateTokenInput.check(is)
	if n := len(in.Value); n < MinSeedTokenLen || n > MaxSeedTokenLen || strings.IndexFunc(in.Value, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		is.add(IssueInvalidString, "Token value must be 16 to 512 printable ASCII characters, without spaces", "value")
	}
}

// SeedToken stores a token with the given value for the user of org named
// username, through the Go API only. Seeding a value the user already holds
// changes nothing and returns that token. A value whose token has expired
// is no longer held: it is stored anew where the store has freed it (every
// store of this module does; redisstore once the token's keys expire, by
// Redis's clock), and refused as in use otherwise. It fails with
// BAD_REQUEST when in breaks a rule, or the value belongs to another user
// or was revoked from another user (while the store remembers the
// revocation: a revoked, perhaps leaked, credential is handed to no one
// else), and NOT_FOUND when the user does not exist.
func (s *Service) SeedToken(ctx context.Context, org, username string, in SeedTokenInput) (Token, error) {
	return s.seedToken(ctx, org, username, in, false)
}

// seedToken is SeedToken; revokedChecked says that the caller has refused
// a value revoked from another user already (ApplySeed and Bootstrap
// check every value before they write), which saves a store read.
func (s *Service) seedToken(ctx context.Context, org, username string, in SeedTokenInput, revokedChecked bool) (Token, error) {
	var is issues
	in.check(&is)
	if err := is.err(); err != nil {
		return Token{}, err
	}
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return Token{}, err
	}
	if !revokedChecked {
		switch a, err := s.store.ReadAccess(ctx, storage.AccessQuery{Digest: digestOf(in.Value), LiveAt: s.clock()}); {
		case errors.Is(err, storage.ErrRevoked):
			if revokedFromAnother(a, org, u.ID) {
				return Token{}, badRequest(revokedValueIssue("value"))
			}
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return Token{}, internal(ctx, "check token", err)
		}
	}
	for attempt := 1; ; attempt++ {
		t, err := s.insertToken(ctx, &u, in.Value, in.CreateTokenInput, system, ActionTokenSeed)
		if ErrorCode(err) != CodeBadRequest {
			return t, err
		}
		a, lerr := s.store.ReadAccess(ctx, storage.AccessQuery{Digest: sha256.Sum256([]byte(in.Value))})
		switch {
		case lerr == nil && a.Credential.Token.UserID == u.ID && a.Credential.Token.LiveAt(s.clock()):
			t = tokenFromRecord(a.Credential.Token)
			t.Value = in.Value
			return t, nil
		case taken(err) && errors.Is(lerr, storage.ErrNotFound) && attempt < seedTokenAttempts:
			// The value is held by a creation still under way (another
			// process seeding it; a Redis Cluster reserves the value
			// before it stores the token): try again a little later, to
			// find its token or, should that creation fail, to store
			// this one.
			select {
			case <-ctx.Done():
				return t, err
			case <-time.After(time.Duration(attempt) * seedTokenBackoff):
			}
			continue
		}
		return t, err
	}
}

// revokedFromAnother reports whether a, what ReadAccess returned with
// ErrRevoked, is the tombstone of a token of another user than userID of
// org ("": a user not made yet, so another).
func revokedFromAnother(a storage.Access, org, userID string) bool {
	t := a.Credential.Token
	return userID == "" || t.Org != org || t.UserID != userID
}

// revokedValueIssue is the refusal of a token value revoked from another
// user, at path.
func revokedValueIssue(path string) Issue {
	return Issue{Message: "Token value was revoked from another user", Path: NewPath(path), Code: IssueAlreadyExists}
}

// SeedToken tries a value that a creation under way holds
// seedTokenAttempts times, waiting seedTokenBackoff longer before each
// try: about half a second in all, time enough for a creation that is not
// stuck.
const (
	seedTokenAttempts = 10
	seedTokenBackoff  = 10 * time.Millisecond
)

// Prefixes of minted secrets, so that a leaked one can be recognised.
const (
	tokenPrefix   = "oat_"
	sessionPrefix = "oas_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newSecret returns prefix + 43 base62 characters carrying 256 random bits
// + a 6-character base62 CRC-32 of the random part, a checksum with which
// scanners can tell a real secret from a look-alike without asking us.
func (s *Service) newSecret(prefix string) (string, error) {
	var buf [32]byte
	if err := s.readRandom(buf[:]); err != nil {
		return "", err
	}
	var out [len(tokenPrefix) + secretBodyLen + secretSumLen]byte
	n := copy(out[:], prefix)
	body := out[n : n+secretBodyLen]
	encodeBase62(body, buf[:])
	putChecksum(out[n+secretBodyLen:], body)
	return string(out[:]), nil
}

// Lengths of the parts of a secret after its prefix.
const (
	secretBodyLen = 43 // ceil(256 / log2(62))
	secretSumLen  = 6  // ceil(32 / log2(62))
)

// ValidSecretChecksum reports whether s has the shape and checksum of a
// token or session value minted by this package.
func ValidSecretChecksum(s string) bool {
	for _, p := range []string{tokenPrefix, sessionPrefix} {
		if rest, ok := strings.CutPrefix(s, p); ok && len(rest) == secretBodyLen+secretSumLen {
			var sum [secretSumLen]byte
			putChecksum(sum[:], []byte(rest[:secretBodyLen]))
			return string(sum[:]) == rest[secretBodyLen:]
		}
	}
	return false
}

// putChecksum writes the base62 CRC-32 of body into dst.
func putChecksum(dst, body []byte) {
	var be [4]byte
	binary.BigEndian.PutUint32(be[:], crc32.ChecksumIEEE(body))
	encodeBase62(dst, be[:])
}

// encodeBase62 writes the big-endian number src in base62 into dst,
// left-padded with '0'; dst must be long enough to hold it.
func encodeBase62(dst, src []byte) {
	// Work on 32-bit limbs, most significant first, dividing by 62 once per
	// output digit.
	limbs := make([]uint32, (len(src)+3)/4)
	for i, b := range src {
		pos := len(src) - 1 - i // byte position from the least significant end
		limbs[len(limbs)-1-pos/4] |= uint32(b) << (8 * (pos % 4))
	}
	// Each pass divides by 62^5, the largest power of 62 below 1<<32,
	// and writes the remainder's five digits: a fifth of the passes over
	// the limbs that one digit per pass takes. Limbs that have come down
	// to zero at the top are skipped.
	const pow = 62 * 62 * 62 * 62 * 62
	for i := len(dst) - 1; i >= 0; {
		for len(limbs) > 0 && limbs[0] == 0 {
			limbs = limbs[1:]
		}
		var rem uint64
		for j := range limbs {
			cur := rem<<32 | uint64(limbs[j])
			limbs[j] = uint32(cur / pow) // #nosec G115 -- rem < pow, so cur < pow<<32 and cur/pow < 1<<32
			rem = cur % pow
		}
		for k := 0; k < 5 && i >= 0; k, i = k+1, i-1 {
			dst[i] = base62[rem%62]
			rem /= 62
		}
	}
}
