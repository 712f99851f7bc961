package redisstore

import (
	"context"
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
	pointer := t.Org + "\n" + t.UserID + "\n" + t.ID
	var ttl int64
	if !t.ExpiresAt.IsZero() {
		ttl = s.ttl(t.CreatedAt, t.ExpiresAt)
	}
	args := []any{t.UserID, t.ID, encode(toTokenDoc(t)), lim.Max, millis(lim.LiveAt), single(s.single), s.prefix, hex, pointer, ttl}
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
func (s *Store) reserve(ctx context.Context, keys map[string]string, life time.Duration) error {
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
	taken := false
	for _, c := range cmds {
		taken = taken || !c.Val()
	}
	if !taken {
		return nil
	}
	got := make(map[string]string)
	for k, c := range cmds {
		if c.Val() {
			got[k] = keys[k]
		}
	}
	s.release(ctx, got)
	return storage.ErrAlreadyExists
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
	ctx, cancel := s.op(ctx)
	defer cancel()
	hex := hexDigest(d)
	var org string
	var v []any
	var err error
	if s.single {
		v, err = authenticateScript.Run(ctx, s.c, []string{s.prefix + "tok:" + hex}, s.prefix).Slice()
		if err == nil {
			org, v = str(v[0]), v[1:]
		}
	} else {
		var pointer string
		pointer, err = s.c.Get(ctx, s.prefix+"tok:"+hex).Result()
		if err == nil {
			parts := strings.SplitN(pointer, "\n", 3)
			if len(parts) != 3 {
				return storage.Credential{}, fmt.Errorf("redisstore: corrupt token pointer")
			}
			org = parts[0]
			v, err = s.run(ctx, credentialScript, org, parts[1], parts[2]).Slice()
		}
	}
	if errors.Is(err, redis.Nil) {
		return storage.Credential{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.Credential{}, failed("token by digest", err)
	}
	u, err := userFrom(org, str(v[3]), str(v[1]), str(v[2]))
	if err != nil {
		return storage.Credential{}, err
	}
	t, err := tokenFrom(org, u.ID, str(v[0]))
	if err != nil {
		return storage.Credential{}, err
	}
	if t.Digest != d {
		return storage.Credential{}, storage.ErrNotFound
	}
	return storage.Credential{Token: t, User: u}, nil
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	all, err := s.c.HVals(ctx, s.orgBase(org)+"tok:"+userID).Result()
	if err != nil {
		return nil, failed("list tokens", err)
	}
	out := make([]storage.Token, 0, len(all))
	for _, raw := range all {
		t, err := tokenFrom(org, userID, raw)
		if err != nil {
			return nil, err
		}
		if t.LiveAt(liveAt) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b storage.Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
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
