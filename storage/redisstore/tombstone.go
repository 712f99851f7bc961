package redisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// A revoked token's digest pointer, tok:<hex>, is not removed but becomes
// its tombstone (storage.Revocation):
//
//	"\0rev\n<until ms>\n<revoked at ms>\n<org>\n<uid>\n<token id>"
//
// with a key TTL of its remaining life plus the expiry grace, so Redis
// drops it by itself. ReadAccess reads it where it reads the pointer, in
// the same command, so telling a revoked token from an unknown one costs
// no round trip; a token created with the digest replaces it, as it would
// a missing pointer. The leading NUL tells it from a pointer, whose org id
// never starts with one.

// tombstonePrefix starts every tombstone.
const tombstonePrefix = "\x00rev\n"

// isTombstone reports whether the value of a digest pointer is a tombstone.
func isTombstone(v string) bool { return strings.HasPrefix(v, tombstonePrefix) }

// tombstone returns the value of the tombstone of the token id of the user
// uid of org, revoked at at, lasting until until.
func tombstone(org, uid, id string, at, until time.Time) string {
	return tombstonePrefix + strconv.FormatInt(millis(until), 10) + "\n" + strconv.FormatInt(millis(at), 10) +
		"\n" + org + "\n" + uid + "\n" + id
}

// tombstoneOf returns "<org>\n<uid>\n<token id>", the token the
// tombstone v is of; "" when v is no tombstone.
func tombstoneOf(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, tombstonePrefix), "\n", 3)
	if !isTombstone(v) || len(parts) != 3 {
		return ""
	}
	return unmark(parts[2])
}

// revokedAt returns storage.ErrRevoked, with the org, user id and token
// id of the revoked token, when the tombstone v lasts beyond liveAt, and
// redis.Nil (no token) when it does not.
func revokedAt(v string, liveAt time.Time) (accessRecords, error) {
	until, _, ok := strings.Cut(strings.TrimPrefix(v, tombstonePrefix), "\n")
	ms, err := strconv.ParseInt(until, 10, 64)
	if !ok || err != nil {
		return accessRecords{}, fmt.Errorf("corrupt token tombstone")
	}
	if liveAt.UnixMilli() >= ms {
		return accessRecords{}, redis.Nil
	}
	parts := strings.SplitN(tombstoneOf(v), "\n", 3)
	if len(parts) != 3 {
		return accessRecords{}, fmt.Errorf("corrupt token tombstone")
	}
	return accessRecords{org: parts[0], uid: parts[1], tid: parts[2]}, storage.ErrRevoked
}

// claimScript sets KEYS[1] to ARGV[1] (for ARGV[2] ms, none when 0) if it
// holds a tombstone: a token created anew with a revoked digest. It
// returns the tombstone and its time to live in ms (-1: none), which
// unclaimScript puts back should the creation be refused; 0 when it
// found no tombstone.
var claimScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v or string.byte(v, 1) ~= 0 then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
if tonumber(ARGV[2]) > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
else
  redis.call('SET', KEYS[1], ARGV[1])
end
return {v, ttl}
`)

// unclaimScript sets KEYS[1] back to the tombstone ARGV[2] (for ARGV[3]
// ms, none when -1) if it still holds ARGV[1], the value of the creation
// that claimed it and was refused. A tombstone whose time ran out
// meanwhile is not put back: the key is deleted.
var unclaimScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
elseif ttl == -1 then
  redis.call('SET', KEYS[1], ARGV[2])
else
  redis.call('DEL', KEYS[1])
end
return 1
`)

// claimedTombstone is a tombstone a reservation took the key of: what
// to put back, for how long (ms; -1: no expiry), should the creation be
// refused.
type claimedTombstone struct {
	value string
	ttl   int64
}
