package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// CreateToken implements storage.Store.
//
// On a Cluster the token's pointer keys (digest and id) are reserved
// first, then the script adds the token to its user in the org's slot. A
// stop between the two leaves pointers to a token that does not exist:
// they never authenticate, and they expire with the token.
func (s *Store) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	hex := hexDigest(t.Digest)
	// The Cluster's pointer; a single server's script writes its own, with
	// the folded username it reads.
	pointer := t.Org + "\n" + t.UserID + "\n" + t.ID
	var ttl int64
	if !t.ExpiresAt.IsZero() {
		ttl = s.ttl(t.CreatedAt, t.ExpiresAt)
	}
	args := []any{t.UserID, t.ID, encode(toTokenDoc(t)), lim.Max, millis(lim.LiveAt), single(s.single), s.prefix, hex, t.Org, ttl}
	if s.single {
		v, err := s.run(ctx, createTokenScript, t.Org, args...).Result()
		return status("create token", v, err)
	}

	keys := map[string]string{s.prefix + "tok:" + hex: pointer, s.prefix + "tid:" + t.ID: hex}
	if err := s.reserve(ctx, keys, time.Duration(ttl)*time.Millisecond); err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	if err := s.stepped("create token: reserved"); err != nil {
		return err
	}
	v, err := s.run(ctx, createTokenScript, t.Org, args...).Result()
	if err = status("create token", v, err); err != nil && isRefusal(err) {
		s.release(ctx, keys)
	}
	return err
}

// reserve sets each key to its value if none of them exists, with the
// given lifetime (none when 0). It returns ErrAlreadyExists, having undone
// its own writes, when one exists.
//
// Each value gets a mark of this call (in keys itself, which release then
// matches): go-redis resends a pipeline whose answer was lost, and a key
// that holds this call's mark is this call's own, not another's.
func (s *Store) reserve(ctx context.Context, keys map[string]string, life time.Duration) error {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	for k, v := range keys {
		keys[k] = v + markSep + hex.EncodeToString(nonce[:])
	}
	cmds := make(map[string]*redis.BoolCmd, len(keys))
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range keys {
			cmds[k] = p.SetNX(ctx, k, v, life)
		}
		return nil
	})
	if err != nil {
		return failed("reserve", err)
	}
	held := make(map[string]*redis.StringCmd)
	for k, c := range cmds {
		if !c.Val() {
			held[k] = nil
		}
	}
	if len(held) == 0 {
		return nil
	}
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k := range held {
			held[k] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return failed("reserve", err)
	}
	taken := false
	for k, c := range held {
		taken = taken || c.Val() != keys[k]
	}
	if !taken {
		return nil
	}
	got := make(map[string]string)
	for k := range cmds {
		if _, ok := held[k]; !ok {
			got[k] = keys[k]
		}
	}
	s.release(ctx, got)
	return storage.ErrAlreadyExists
}

// markSep separates a reserved value from the mark of the call that
// reserved it.
const markSep = "\x00"

// unmark returns a reserved value without its mark.
func unmark(v string) string {
	v, _, _ = strings.Cut(v, markSep)
	return v
}

// release deletes the keys that still hold the values this process wrote.
// It is best effort: a pointer left behind points at nothing.
func (s *Store) release(ctx context.Context, keys map[string]string) {
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range keys {
			releaseScript.Eval(ctx, p, []string{k}, v)
		}
		return nil
	})
}

// isRefusal reports whether err is one of the contract's sentinels, the
// answers after which the script has certainly written nothing.
func isRefusal(err error) bool {
	return errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrAlreadyExists) ||
		errors.Is(err, storage.ErrLimitExceeded)
}

// TokenByDigest implements storage.Store. On a single server it is one
// round trip; on a Cluster two: the pointer, then the org's records.
func (s *Store) TokenByDigest(ctx context.Context, d storage.Digest) (storage.Credential, error) {
	cred, _, err := s.credential(ctx, d, "", time.Time{}, nil)
	return cred, err
}

// CredentialTokens implements storage.CredentialTokensReader, in as many
// round trips as TokenByDigest: the tokens come with the credential. The
// Version it reports is that of the decoded list it keeps (lists.go).
func (s *Store) CredentialTokens(ctx context.Context, d storage.Digest, folded string, liveAt time.Time, skip func(uint64) bool) (storage.Credential, storage.UserTokens, error) {
	if folded == "" {
		// No user has an empty name; "" asks the scripts for no tokens.
		cred, err := s.TokenByDigest(ctx, d)
		return cred, storage.UserTokens{}, err
	}
	return s.credential(ctx, d, folded, liveAt, skip)
}

// credential reads the credential of digest d and, when target is not
// empty, the tokens live at liveAt of the user of its org whose folded
// username is target (none when skip, if not nil, says so of their
// Version; see storage.CredentialTokensReader).
func (s *Store) credential(ctx context.Context, d storage.Digest, target string, liveAt time.Time, skip func(uint64) bool) (storage.Credential, storage.UserTokens, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var h [2 * len(d)]byte
	hex.Encode(h[:], d[:])
	key := s.prefix + "tok:" + string(h[:]) // one allocation: the key
	// The parts of the answer: the caller's ids, records, token record (""
	// when it is among the listed ones) and the listed user's id and
	// records (nil when there is none).
	var org, uid, tid, folded, user, inst, token string
	var listedID, listed any
	var fresh *location // read by the script: remembered once it checks out
	if s.single {
		loc, known := s.locs.Get(d)
		if known && target != "" && target != loc.folded {
			known = false // another user's tokens: the script finds them
		}
		if known {
			var recs string
			var err error
			user, inst, recs, err = s.credentialAt(ctx, key, loc, target != "")
			switch {
			case errors.Is(err, errMoved):
				s.locs.Forget(d)
				known = false
			case errors.Is(err, storage.ErrNotFound):
				s.locs.Forget(d)
				return storage.Credential{}, storage.UserTokens{}, err
			case err != nil:
				return credentialErr(err)
			default:
				org, uid, tid, folded = loc.org, loc.uid, loc.tid, loc.folded
				if target != "" {
					listedID, listed = uid, recs
				} else {
					token = recs
				}
			}
		}
		if !known {
			v, err := authenticateScript.Run(ctx, s.c, []string{key}, s.prefix, target).Slice()
			if err != nil {
				return credentialErr(err)
			}
			org, uid, tid, folded, user, inst, token = str(v[0]), str(v[1]), str(v[2]), str(v[3]), str(v[4]), str(v[5]), str(v[6])
			listedID, listed = v[7], v[8]
			if n, _ := v[10].(int64); n == 1 {
				// Remembered only where the plain reads find user:<uid>.
				loc := s.newLocation(str(v[9]), org, uid, folded, tid)
				fresh = &loc
			}
		}
	} else {
		pointer, err := s.c.Get(ctx, key).Result()
		if err != nil {
			return credentialErr(err)
		}
		parts := strings.SplitN(unmark(pointer), "\n", 3)
		if len(parts) != 3 {
			return storage.Credential{}, storage.UserTokens{}, fmt.Errorf("redisstore: corrupt token pointer")
		}
		org, uid, tid = parts[0], parts[1], parts[2]
		script, args := credentialScript, []any{uid, tid}
		if target != "" {
			script, args = credentialTokensScript, append(args, target)
		}
		v, err := s.run(ctx, script, org, args...).Slice()
		if err != nil {
			return credentialErr(err)
		}
		token, user, inst, folded = str(v[0]), str(v[1]), str(v[2]), str(v[3])
		if len(v) > 5 {
			listedID, listed = v[4], v[5]
		}
	}
	u, err := userFrom(org, folded, user, inst)
	if err != nil {
		return storage.Credential{}, storage.UserTokens{}, err
	}
	if u.ID != uid {
		// The name now belongs to a user created after the token's.
		return storage.Credential{}, storage.UserTokens{}, storage.ErrNotFound
	}
	var ut storage.UserTokens
	if id, ok := listedID.(string); ok {
		ut.Found = true
		if ut.Tokens, ut.Version, err = s.decodedTokens(org, id, str(listed)); err != nil {
			return storage.Credential{}, storage.UserTokens{}, err
		}
	}
	var t storage.Token
	if token != "" {
		if t, err = tokenFrom(org, uid, token); err != nil {
			return storage.Credential{}, storage.UserTokens{}, err
		}
	} else if i := slices.IndexFunc(ut.Tokens, func(t storage.Token) bool { return t.ID == tid }); i >= 0 {
		t = ut.Tokens[i]
	}
	if t.Digest != d {
		return storage.Credential{}, storage.UserTokens{}, storage.ErrNotFound
	}
	if fresh != nil {
		s.locs.Put(d, *fresh)
	}
	if ut.Version != 0 && skip != nil && skip(ut.Version) {
		ut.Tokens = nil
	} else if ut.Found {
		ut.Tokens = liveTokens(ut.Tokens, liveAt)
	}
	return storage.Credential{Token: t, User: u}, ut, nil
}

// credentialErr is the answer to a failed credential read: ErrNotFound
// when there is no such credential.
func credentialErr(err error) (storage.Credential, storage.UserTokens, error) {
	if errors.Is(err, redis.Nil) {
		return storage.Credential{}, storage.UserTokens{}, storage.ErrNotFound
	}
	return storage.Credential{}, storage.UserTokens{}, failed("token by digest", err)
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	recs, err := s.c.Get(ctx, s.orgBase(org)+"toks:"+userID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, failed("list tokens", err)
	}
	out, _, err := s.decodedTokens(org, userID, recs)
	if err != nil {
		return nil, err
	}
	return liveTokens(out, liveAt), nil
}

// decodeTokens decodes recs, the toks:<uid> value of the user userID of
// org (its token records joined by newlines; "" for none).
func decodeTokens(org, userID, recs string) ([]storage.Token, error) {
	if recs == "" {
		return []storage.Token{}, nil
	}
	out := make([]storage.Token, 0, strings.Count(recs, "\n")+1)
	for rec := range strings.SplitSeq(recs, "\n") {
		t, err := tokenFrom(org, userID, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// byCreation orders tokens by creation, then id.
func byCreation(a, b storage.Token) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// DeleteToken implements storage.Store. The token leaves its user's records
// first, which ends its use at once; on a Cluster its pointer keys are
// removed afterwards.
func (s *Store) DeleteToken(ctx context.Context, org, userID, id string, liveAt time.Time) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	v, err := s.run(ctx, deleteTokenScript, org, userID, id, millis(liveAt), single(s.single), s.prefix).Slice()
	if err != nil {
		return failed("delete token", err)
	}
	if err := status("delete token", v[0], nil); err != nil || s.single {
		return err
	}
	if err := s.stepped("delete token: pointers"); err != nil {
		return nil
	}
	_ = s.delKeys(ctx, []string{s.prefix + "tok:" + str(v[1]), s.prefix + "tid:" + id})
	return nil
}
