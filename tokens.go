package orgadmin

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"sync"
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
	return Token{
		ID:          t.ID,
		Name:        t.Name,
		Description: t.Description,
		ExpireAt:    t.ExpiresAt,
		CreatedAt:   t.CreatedAt,
		Type:        TokenType(t.Type),
	}
}

// CreateTokenInput is the body of create token.
type CreateTokenInput struct {
	// Name is 1 to 255 characters.
	Name string
	// TTL is the lifetime in seconds, 300 to 31536000; nil means the token
	// never expires.
	TTL *int
	// Description is at most 1000 characters.
	Description *string
	// TokenType is "read_write" (the default) or "read_scaling".
	TokenType *string
}

// ValidateCreateToken returns a BAD_REQUEST error listing every problem of
// in, or nil.
func ValidateCreateToken(in CreateTokenInput) error {
	var is issues
	in.check(&is)
	return is.err()
}

func (in CreateTokenInput) check(is *issues) {
	is.checkString(in.Name, 1, MaxTokenNameLen, "name")
	if in.TTL != nil {
		is.checkRange(int64(*in.TTL), MinTokenTTL, MaxTokenTTL, "ttl")
	}
	is.checkOptString(in.Description, 0, MaxDescriptionLen, "description")
	if in.TokenType != nil {
		is.checkEnum(*in.TokenType, []string{string(TokenReadWrite), string(TokenReadScaling)}, "token_type")
	}
}

// CreateToken mints an access token for the user named username in the
// caller's org and returns it with its value, which is shown here only. A
// user may create tokens for themself; an Admin also for service accounts,
// never for another human user. It fails with FORBIDDEN when the caller may
// not, BAD_REQUEST when the input breaks a rule or the user holds the
// maximum number of live tokens, and NOT_FOUND when the user does not
// exist.
func (s *Service) CreateToken(ctx context.Context, c Caller, username string, in CreateTokenInput) (Token, error) {
	if err := s.Authorize(c, OpCreateToken, username); err != nil {
		return Token{}, err
	}
	_, canExist, err := pathUsername(username)
	if err != nil {
		return Token{}, err
	}
	if err := ValidateCreateToken(in); err != nil {
		return Token{}, err
	}
	if !canExist {
		return Token{}, notFound("user", "username")
	}
	u, err := s.resolveUser(ctx, c.Org, username)
	if err != nil {
		return Token{}, err
	}
	if u.ID != c.UserID && !u.IsServiceAccount {
		return Token{}, forbidden("tokens of a human user can only be created by that user")
	}
	value, err := newSecret(s.rand, tokenPrefix)
	if err != nil {
		return Token{}, internal("mint token", err)
	}
	return s.insertToken(ctx, u, value, in)
}

// insertToken stores a token of value for u, as described by in (already
// validated).
func (s *Service) insertToken(ctx context.Context, u storage.User, value string, in CreateTokenInput) (Token, error) {
	id, err := s.newID()
	if err != nil {
		return Token{}, err
	}
	now := s.clock()
	rec := storage.Token{
		ID:          id,
		Org:         u.Org,
		UserID:      u.ID,
		Digest:      sha256.Sum256([]byte(value)),
		Name:        in.Name,
		Description: deref(in.Description),
		Type:        string(TokenReadWrite),
		CreatedAt:   now,
	}
	if in.TokenType != nil {
		rec.Type = *in.TokenType
	}
	if in.TTL != nil {
		rec.ExpiresAt = now.Add(time.Duration(*in.TTL) * time.Second)
	}
	switch err := s.store.CreateToken(ctx, rec, storage.TokenLimit{Max: s.maxTokens, LiveAt: now}); {
	case errors.Is(err, storage.ErrLimitExceeded):
		return Token{}, badRequest(Issue{Message: "The user holds the maximum number of tokens", Path: []any{}, Code: IssueTooBig})
	case errors.Is(err, storage.ErrAlreadyExists):
		return Token{}, badRequest(Issue{Message: "Token value already in use", Path: []any{"value"}, Code: IssueConflict})
	case err != nil:
		return Token{}, s.storeErr("create token", err, "user", "username")
	}
	t := tokenFromRecord(rec)
	t.Value = value
	return t, nil
}

// ListTokens returns the live tokens (neither expired nor invalidated) of
// the user named username in the caller's org, ordered by creation time then
// id, without their values. A user may list their own tokens; an Admin
// those of any user. It fails with FORBIDDEN, BAD_REQUEST for a malformed
// username, and NOT_FOUND.
func (s *Service) ListTokens(ctx context.Context, c Caller, username string) ([]Token, error) {
	if err := s.Authorize(c, OpListTokens, username); err != nil {
		return nil, err
	}
	userID, err := s.userIDOf(ctx, c, username)
	if err != nil {
		return nil, err
	}
	recs, err := s.store.ListTokens(ctx, c.Org, userID, s.now())
	if err != nil {
		return nil, internal("list tokens", err)
	}
	return tokensFromRecords(recs), nil
}

// AuthenticateListTokens is Authenticate(token) followed by ListTokens of
// username, with the same results and errors. On a store that reads a
// credential and a user's tokens together (storage.CredentialTokensReader,
// such as Redis on a single server) it takes one round trip instead of two:
// the commonest authenticated read of the API, served at the cost of
// authentication alone.
func (s *Service) AuthenticateListTokens(ctx context.Context, token, username string) (Caller, []Token, error) {
	c, l, err := s.AuthenticateListing(ctx, token, username, nil)
	return c, l.Tokens, err
}

// A ListingStamp names the answer of a token listing: the store's version
// of the user's token records (storage.UserTokens.Version), and the
// instants From (when it was read) to Until (the first expiry among the
// tokens listed; zero when none expires) over which those records give
// that answer. The zero stamp names no listing.
type ListingStamp struct {
	Version     uint64
	From, Until time.Time
}

// holds reports whether st's listing is the answer, at the instant t, of
// the token records of version v.
func (st ListingStamp) holds(v uint64, t time.Time) bool {
	return st.Version != 0 && st.Version == v && !t.Before(st.From) &&
		(st.Until.IsZero() || t.Before(st.Until))
}

// A Listing is what AuthenticateListing answers.
type Listing struct {
	// Tokens are what AuthenticateListTokens returns; nil when Known.
	Tokens []Token
	// Stamp names the listing. It is zero when the store does not version
	// token records; such a listing cannot be kept.
	Stamp ListingStamp
	// Known reports that the answer is the listing of the stamp the
	// caller's known function returned: the listing the caller keeps.
	// Tokens is then nil.
	Known bool
}

// AuthenticateListing is AuthenticateListTokens for callers that keep what
// they make of a listing under its stamp (the HTTP handler keeps encoded
// answers), so that an unchanged listing is neither read nor made again.
// Every call authenticates and authorizes as AuthenticateListTokens does,
// with the same errors.
//
// known, when not nil, is called at most once, while the store reads,
// with the version of the listed user's token records; it returns the
// stamp of the listing the caller keeps under that version, if any, and
// must not call the Service. When that listing is the answer at this
// instant, the Listing is Known. Stores that do not version token records
// never call known.
func (s *Service) AuthenticateListing(ctx context.Context, token, username string, known func(version uint64) (ListingStamp, bool)) (Caller, Listing, error) {
	r, ok := s.store.(storage.CredentialTokensReader)
	folded, canExist, err := pathUsername(username)
	if !ok || err != nil || !canExist || len(token) == 0 || len(token) > maxTokenLen {
		// The two steps give these answers in the order DESIGN §2 wants.
		c, err := s.Authenticate(ctx, token)
		if err != nil {
			return Caller{}, Listing{}, err
		}
		ts, err := s.ListTokens(ctx, c, username)
		return c, Listing{Tokens: ts}, err
	}
	now := s.now()
	var kept ListingStamp
	var skip func(uint64) bool
	var p *listingProbe
	if known != nil {
		p = listingProbes.Get().(*listingProbe)
		p.known, p.now, p.kept = known, now, ListingStamp{}
		skip = p.skip
	}
	cred, ut, err := r.CredentialTokens(ctx, digestOf(token), folded, now, skip)
	if p != nil {
		kept = p.kept
		p.release()
	}
	c, err := s.callerOfCredential(cred, err, now)
	if err != nil {
		return Caller{}, Listing{}, err
	}
	if err := s.Authorize(c, OpListTokens, username); err != nil {
		return c, Listing{}, err
	}
	if !ut.Found {
		return c, Listing{}, notFound("user", "username")
	}
	if kept.Version != 0 && ut.Tokens == nil {
		// The store called skip, with ut.Version, and it said true.
		return c, Listing{Stamp: kept, Known: true}, nil
	}
	l := Listing{Tokens: tokensFromRecords(ut.Tokens)}
	if ut.Version != 0 {
		l.Stamp = ListingStamp{Version: ut.Version, From: now, Until: firstExpiry(l.Tokens)}
	}
	return c, l, nil
}

// listingProbe is the skip function AuthenticateListing hands the store:
// it asks known for the stamp of the listing kept under the version the
// store read, and keeps it when it holds at now. Probes are pooled, each
// with its skip made once, so that a listing allocates no closure: the
// store calls skip during CredentialTokens only (storage contract).
type listingProbe struct {
	known func(version uint64) (ListingStamp, bool)
	now   time.Time
	kept  ListingStamp
	skip  func(version uint64) bool // p.check
}

var listingProbes = sync.Pool{New: func() any {
	p := new(listingProbe)
	p.skip = p.check
	return p
}}

func (p *listingProbe) check(v uint64) bool {
	st, ok := p.known(v)
	if ok && st.holds(v, p.now) {
		p.kept = st
		return true
	}
	return false
}

// release forgets what p was given and puts it back in the pool.
func (p *listingProbe) release() {
	*p = listingProbe{skip: p.skip}
	listingProbes.Put(p)
}

// firstExpiry returns the earliest ExpireAt of ts, zero when none expires.
func firstExpiry(ts []Token) time.Time {
	var first time.Time
	for _, t := range ts {
		if !t.ExpireAt.IsZero() && (first.IsZero() || t.ExpireAt.Before(first)) {
			first = t.ExpireAt
		}
	}
	return first
}

func tokensFromRecords(recs []storage.Token) []Token {
	out := make([]Token, len(recs))
	for i, t := range recs {
		out[i] = tokenFromRecord(t)
	}
	return out
}

// maxTokenIDLen bounds token ids in paths; longer ones are a BAD_REQUEST.
const maxTokenIDLen = 255

// DeleteToken invalidates the token tokenID of the user named username in
// the caller's org; from then on it authenticates nowhere. It fails like
// ListTokens, and with NOT_FOUND when the user has no such live token.
func (s *Service) DeleteToken(ctx context.Context, c Caller, username, tokenID string) error {
	if err := s.Authorize(c, OpDeleteToken, username); err != nil {
		return err
	}
	var is issues
	is.checkString(tokenID, 1, maxTokenIDLen, "token_id")
	if err := is.err(); err != nil {
		return err
	}
	userID, err := s.userIDOf(ctx, c, username)
	if err != nil {
		return err
	}
	if err := s.store.DeleteToken(ctx, c.Org, userID, tokenID, s.now()); err != nil {
		return s.storeErr("delete token", err, "token", "token_id")
	}
	return nil
}

// SeedTokenInput describes a token with a chosen value, for bootstrap and
// fixtures.
type SeedTokenInput struct {
	CreateTokenInput
	// Value is 16 to 512 printable ASCII characters.
	Value string
}

// Bounds of seeded token values.
const (
	MinSeedTokenLen = 16
	MaxSeedTokenLen = maxTokenLen
)

func (in SeedTokenInput) check(is *issues) {
	in.CreateTokenInput.check(is)
	if n := len(in.Value); n < MinSeedTokenLen || n > MaxSeedTokenLen || strings.IndexFunc(in.Value, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		is.add(IssueInvalidString, "Token value must be 16 to 512 printable ASCII characters", "value")
	}
}

// SeedToken stores a token with the given value for the user of org named
// username, through the Go API only. Seeding a value the user already holds
// changes nothing and returns that token. It fails with BAD_REQUEST when in
// breaks a rule or the value belongs to another user, and NOT_FOUND when the
// user does not exist.
func (s *Service) SeedToken(ctx context.Context, org, username string, in SeedTokenInput) (Token, error) {
	var is issues
	in.check(&is)
	if err := is.err(); err != nil {
		return Token{}, err
	}
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return Token{}, err
	}
	t, err := s.insertToken(ctx, u, in.Value, in.CreateTokenInput)
	if ErrorCode(err) == CodeBadRequest {
		cred, lerr := s.store.TokenByDigest(ctx, sha256.Sum256([]byte(in.Value)))
		if lerr == nil && cred.Token.UserID == u.ID {
			t = tokenFromRecord(cred.Token)
			t.Value = in.Value
			return t, nil
		}
	}
	return t, err
}

// Prefixes of minted secrets, so that a leaked one can be recognised.
const (
	tokenPrefix   = "oat_"
	sessionPrefix = "oas_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newSecret returns prefix + 43 base62 characters carrying 256 random bits
// + a 6-character base62 CRC-32 of the random part, a checksum with which
// scanners can tell a real secret from a look-alike without asking us.
func newSecret(r io.Reader, prefix string) (string, error) {
	var buf [32]byte
	if _, err := io.ReadFull(r, buf[:]); err != nil {
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
	for i := len(dst) - 1; i >= 0; i-- {
		var rem uint64
		for j := range limbs {
			cur := rem<<32 | uint64(limbs[j])
			limbs[j] = uint32(cur / 62) // #nosec G115 -- rem < 62, so cur < 62<<32 and cur/62 < 1<<32
			rem = cur % 62
		}
		dst[i] = base62[rem]
	}
}
