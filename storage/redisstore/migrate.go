package redisstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/internal/casefold"
	"github.com/orgadmin/orgadmin/storage"
)

// Earlier versions keyed a user by another fold of its username (the
// smallest lower-case member of each case orbit) than this one
// (casefold.Fold, the Unicode simple case folding). Both folds give every
// name of a case orbit one key, so a key stored by an earlier version is
// re-keyed under casefold.Fold of itself, no username needed, and never
// meets another user's key. Migrate does that, an org at a time.

// migratedKey is the key, after the prefix, that says every org of the
// store is keyed by casefold.Fold. It lives in a slot of its own.
const migratedKey = "migrated:casefold"

// Migrate re-keys the users an earlier version of this package stored
// under its fold of their usernames (which gave some letters, such as
// Greek mu and final sigma or Cherokee, another key) under the fold of
// this version, Unicode's simple case folding. An upgrade from such a
// version must call it once before the store serves any request (the
// example server does, at start-up): until then, a user stored under an
// earlier key is not found by its username, and a new user could take
// its name. Every process of
// the earlier version must be stopped first: one still running writes
// under the earlier keys again.
//
// Migrate is safe to run from several processes at once, and again: each
// org is re-keyed by one Lua script, atomically, which moves a user only
// while its earlier key is still held and its new key is free, and skips
// a user already moved. Once every org is done it writes a marker under
// the Store's prefix, after which a run is one GET. A run stopped
// part-way (an error, a canceled ctx, a crash) leaves every org either
// re-keyed whole or untouched, and no marker: the next run completes it.
// Should a process of an earlier version write to the store again after
// the migration (a rollback), delete the marker, "<prefix>migrated:casefold",
// so that the next run looks at every org again.
//
// It finds the orgs by SCAN of their record keys (on a Cluster, on every
// master), then, for each, reads the keys of its users (HKEYS) and, when
// some are stale, runs the script: each org's step is bounded by
// Options.Timeout, not the whole migration: an org whose script outlasts
// it (one with very many stale users) fails the run, though Redis
// completes the script; a run with a longer Timeout completes the rest.
// Without a stale key, an org costs that one read. The Store's in-process cache of where the records
// of a token are forgets the tokens of every user moved.
//
// Migrate fails with an error naming the org and the key, wrapping
// storage.ErrAlreadyExists, when a user cannot be moved because another
// user holds its new key: the two folds rule that out, unless a process
// served, or one of the earlier version ran, before the migration. That
// org is then left as it was, and no marker is written. Otherwise it
// fails with the context's error, or Redis's, wrapped.
func (s *Store) Migrate(ctx context.Context) error {
	marker := s.prefix + migratedKey
	done, err := s.migrated(ctx, marker)
	if err != nil || done {
		return err
	}
	orgs, err := s.scanOrgs(ctx)
	if err != nil {
		return err
	}
	for _, org := range orgs {
		if err := s.migrateOrg(ctx, org); err != nil {
			return err
		}
		if err := s.stepped("migrate: org done"); err != nil {
			return err
		}
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	if err := s.c.Set(ctx, marker, "1", 0).Err(); err != nil {
		return failed("migrate: mark", err)
	}
	return nil
}

// migrated reports whether marker is set.
func (s *Store) migrated(ctx context.Context, marker string) (bool, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := s.c.Get(ctx, marker).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, failed("migrate: read marker", err)
	}
	return true, nil
}

// scanOrgs returns the ids of the orgs the store holds: those of the
// record keys, "<prefix>{o:<org>}:org", that SCAN finds (on every master
// of a Cluster, where they are spread over the slots), each page bounded
// by the Store's timeout.
func (s *Store) scanOrgs(ctx context.Context) ([]string, error) {
	var (
		mu   sync.Mutex
		orgs []string
	)
	match := globEscape(s.prefix) + "{o:*}:org"
	scan := func(ctx context.Context, c *redis.Client) error {
		var cursor uint64
		for {
			pctx, cancel := s.op(ctx)
			keys, next, err := c.Scan(pctx, cursor, match, 1000).Result()
			cancel()
			if err != nil {
				return err
			}
			mu.Lock()
			for _, k := range keys {
				if org, ok := s.orgOfKey(k); ok {
					orgs = append(orgs, org)
				}
			}
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	var err error
	switch c := s.c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		return nil, failed("migrate: find orgs", err)
	}
	return orgs, nil
}

// orgOfKey returns the org whose record key k is. The SCAN pattern also
// matches keys of an org's own that end in "}:org" (a "*" matches a '}'),
// which no org id, free of braces, gives.
func (s *Store) orgOfKey(k string) (string, bool) {
	org, ok := strings.CutPrefix(k, s.prefix+"{o:")
	if !ok {
		return "", false
	}
	if org, ok = strings.CutSuffix(org, "}:org"); !ok || org == "" || strings.ContainsAny(org, "{}") {
		return "", false
	}
	return org, true
}

// globEscape escapes the characters of s that a SCAN pattern gives a
// meaning to.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// migrateOrg re-keys the stale users of org, in one step bounded by the
// Store's timeout: the keys of its users, then, when some are stale, the
// script that moves them all.
func (s *Store) migrateOrg(ctx context.Context, org string) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	keys, err := s.c.HKeys(ctx, s.orgBase(org)+"users").Result()
	if err != nil {
		return failed(fmt.Sprintf("migrate: org %q: read users", org), err)
	}
	args := []any{single(s.single), s.prefix, org}
	for _, k := range keys {
		if casefold.Stale(k) {
			args = append(args, k, casefold.Fold(k))
		}
	}
	if len(args) == 3 {
		return nil
	}
	if err := s.stepped("migrate: keys read"); err != nil {
		return err
	}
	v, err := s.run(ctx, migrateOrgScript, org, args...).Slice()
	if err != nil {
		return failed(fmt.Sprintf("migrate: org %q", org), err)
	}
	if len(v) == 3 && v[0] == "CONFLICT" {
		return fmt.Errorf("redisstore: migrate: org %q: user key %q cannot move to %q, which another user holds: %w",
			org, str(v[1]), str(v[2]), storage.ErrAlreadyExists)
	}
	if len(v) != 2 {
		return fmt.Errorf("redisstore: migrate: org %q: unexpected reply of %d values", org, len(v))
	}
	digests, _ := v[1].([]any)
	for _, x := range digests {
		var d storage.Digest
		if n, err := hex.Decode(d[:], []byte(str(x))); err == nil && n == len(d) {
			s.locs.Forget(d)
		}
	}
	return nil
}

// migrateOrgScript re-keys users of an org: ARGV[4], ARGV[6], ... are
// their keys as stored, ARGV[5], ARGV[7], ... their new keys. A user is
// moved when its key is still held and its new key free; skipped when
// its key is no longer held (moved, or deleted, since it was read); and
// the script returns {'CONFLICT', key, new key}, having written nothing,
// when both are held (or two keys would move to one). It moves every
// structure that holds the key (see the layout in scripts.go): the users
// and inst fields, the uid value, name:<key>, the member of recs (where
// recs exists: where it does not, the next listing builds it), those of
// ix:sa, ix:hu and ix:all and of active where the user has one, and, with
// single = "1", the pointers of the user's tokens that hold it (a
// tombstone holds none). It reads and decodes everything before it
// writes anything, so that no error leaves an org half moved. It returns
// {users moved, digests (hex) of the tokens of every user now under its
// new key}, whose remembered locations name the earlier key.
var migrateOrgScript = redis.NewScript(orgBase + `
-- ARGV: single, prefix, org, then key, new key for each user
local single, P, org = ARGV[1] == '1', ARGV[2], ARGV[3]
local moves, taken, digests = {}, {}, {}
local function tokens(id)
  local ts = {}
  for _, v in ipairs(redis.call('HVALS', b..'tok:'..id)) do
    local t = cjson.decode(v)
    ts[#ts+1] = t
    digests[#digests+1] = t.d
  end
  return ts
end
for j = 4, #ARGV, 2 do
  local old, new = ARGV[j], ARGV[j+1]
  local u = redis.call('HGET', b..'users', old)
  local there = redis.call('HEXISTS', b..'users', new) == 1
  if u then
    if there or taken[new] then return {'CONFLICT', old, new} end
    taken[new] = true
    local id = userID(u)
    moves[#moves+1] = {old = old, new = new, u = u, i = redis.call('HGET', b..'inst', old), id = id, tokens = tokens(id)}
  elseif there then
    tokens(userID(redis.call('HGET', b..'users', new)))
  end
end
local r = b..'recs'
local hasRecs = redis.call('EXISTS', r) == 1
for _, m in ipairs(moves) do
  local old, new, id = m.old, m.new, m.id
  redis.call('HDEL', b..'users', old)
  redis.call('HSET', b..'users', new, m.u)
  if m.i then
    redis.call('HDEL', b..'inst', old)
    redis.call('HSET', b..'inst', new, m.i)
  end
  redis.call('HSET', b..'uid', id, new)
  local rec = m.u..'\n'..(m.i or '')
  redis.call('DEL', b..'name:'..old)
  redis.call('SET', b..'name:'..new, rec)
  if hasRecs then
    redis.call('ZREMRANGEBYLEX', r, '['..old..'\0', '('..old..'\1')
    redis.call('ZADD', r, 0, new..'\0'..rec)
  end
  for _, ix in ipairs({'ix:sa', 'ix:hu', 'ix:all'}) do
    if redis.call('ZREM', b..ix, old) == 1 then redis.call('ZADD', b..ix, 0, new) end
  end
  if redis.call('ZREM', b..'active', old..'\0'..id) == 1 then
    redis.call('ZADD', b..'active', 0, new..'\0'..id)
  end
  if single then
    local was = org..'\n'..id..'\n'..old..'\n'
    for _, t in ipairs(m.tokens) do
      local k = P..'tok:'..t.d
      if redis.call('GET', k) == was..t.id then
        redis.call('SET', k, org..'\n'..id..'\n'..new..'\n'..t.id, 'KEEPTTL')
      end
    end
  end
end
return {#moves, digests}
`)
