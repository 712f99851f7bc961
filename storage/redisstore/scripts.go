package redisstore

import "github.com/redis/go-redis/v9"

// The Lua scripts below keep every multi-key change atomic. An org-scoped
// script gets the org's record key as KEYS[1] ("<prefix>{o:<org>}:org"),
// which routes it to the org's slot on a Cluster, and derives the other keys
// of the org from it: they share its hash tag, so no CROSSSLOT is possible.
//
// The org's keys, after the base "<prefix>{o:<org>}:":
//
//	org            the org record
//	users          hash: folded username -> user record
//	inst           hash: folded username -> instance configuration
//	uid            hash: user id -> folded username
//	name:<folded>  the user's record and instance configuration joined by
//	               a newline: the users and inst fields of one user in one
//	               string, which a remembered token location reads with
//	               the pointer in one MGET, for the caller and for the
//	               user a request names; every script that changes those
//	               fields rewrites it (the authentication and credential
//	               scripts write it where an earlier version did not)
//	user:<uid>     the same, keyed by user id, as written by earlier
//	               versions: removed with its user
//	recs           sorted set (score 0) of "<folded>\0<user>\n<inst>": every
//	               user with its records, in the order of folded
//	               usernames (which hold no NUL byte), listed BYLEX or by
//	               rank: a page of all users is one ZRANGE, read without
//	               a script (users.go); every script that changes the
//	               users or inst fields replaces the member
//	ix:sa ix:hu    sorted sets (score 0) of folded usernames: service
//	               accounts, humans; listed BYLEX
//	ix:all         the folded usernames of every user, as written by
//	               earlier versions: removed when recs is built from the
//	               hashes (migrateRecsScript)
//	tok:<uid>      hash: token id -> token record (with its digest)
//	trec:<tid>     the record of the live token tid (expiring with its
//	               pointer), which a remembered token location reads in
//	               the MGET of name:<folded>: written and removed with
//	               the token's record (the authentication and credential
//	               scripts write it where an earlier version did not)
//	toks:<uid>     the same records joined by newlines (which JSON never
//	               holds raw), absent when there are none: what a listing
//	               reads, since a script passes one string far more cheaply
//	               than many; every script that changes tok:<uid> rewrites it
//	sesz:<uid>     sorted set of the user's embed session digests, scored
//	               by expiry (ms): pruned up to the instant a creation
//	               counts live sessions at, and counted, by
//	               createSessionScript (expires with its last record)
//	sess:<uid>     set of the user's embed session digests, as written by
//	               earlier versions: moved into sesz:<uid> by the user's
//	               next session creation; a user deletion reads both
//	ses:<uid>:<hex>  embed session record (expires)
//	duck:<uid>     hash: Duckling id -> activity report
//	active         sorted set (score 0) of "<folded>\0<uid>" with reports
//	dives          hash: Dive id -> Dive record
//	seeded         set of seed marks (MarkSeeded)
//	events         sorted set of audit events, scored by Seq (events.go)
//	eseq           the Seq of the org's last audit event
//	etrim          the DropBefore (15-digit ms) up to which the head of
//	               events was last found trimmed (events.go)
//
// Global keys (their own slots), after "<prefix>":
//
//	tok:<hex>      token digest -> "<org>\n<uid>\n<token id>" on a Cluster,
//	               "<org>\n<uid>\n<folded username>\n<token id>" on a
//	               single server (a user's folded username never changes)
//	               or, once the token is revoked, its tombstone
//	               "\0rev\n<until ms>\n<revoked at ms>\n<org>\n<uid>\n<token id>"
//	               (tombstone.go), which expires at <until>
//	tid:<id>       token id -> digest hex (keeps ids unique in the store)
//	ses:<hex>      session digest -> "<org>\n<uid>"
//	{fb}:h {fb}:q  feedback records and their order
//	migrated:casefold  set once every org's users are keyed by
//	               casefold.Fold (migrate.go)
//
// The org's keys are the truth; a global key only points at them. On a
// single server the scripts write both in one step (single = "1"). On a
// Cluster the global keys are written first and removed last (see
// tokens.go), so a crash leaves at most a pointer to nothing, which never
// authenticates; and each value a Cluster writes to tok:, tid: and ses:
// is followed by the mark of the creation that reserved it,
// "\0<nonce>\0<creation ms>" ("\0<nonce>" as earlier versions wrote it),
// which readers cut off (unmark), and by which a creation tells a dead
// reservation of a digest, which it takes over (takeOver).

// orgBase is the Lua prelude that derives the org's key base from KEYS[1],
// with userIDFunc.
const orgBase = userIDFunc + `
local b = string.sub(KEYS[1], 1, -4)
`

// userIDFunc defines userID(u), the id of the user record u. encode
// writes the id first, so a pattern finds it far more cheaply than
// cjson.decode of the whole record, which reads any other form.
const userIDFunc = `
local function userID(u)
  return string.match(u, '^{"id":"([^"\\]*)"') or cjson.decode(u).id
end
`

// relist defines relist(b, uid), which rewrites toks:<uid> from tok:<uid>
// after records left the hash.
const relist = `
local function relist(b, uid)
  local recs = redis.call('HVALS', b..'tok:'..uid)
  if #recs == 0 then
    redis.call('DEL', b..'toks:'..uid)
  else
    redis.call('SET', b..'toks:'..uid, table.concat(recs, '\n'))
  end
end
`

// setRec defines setRec(b, f, rec), which replaces the member of the
// folded username f in recs by one holding rec ("<user>\n<inst>").
const setRec = `
local function setRec(b, f, rec)
  redis.call('ZREMRANGEBYLEX', b..'recs', '['..f..'\0', '('..f..'\1')
  redis.call('ZADD', b..'recs', 0, f..'\0'..rec)
end
`

// createUserScript adds a user to its org unless the org holds max users
// (max 0: no limit), counted by the users hash, which holds exactly the
// org's users: the check and the write are one step.
var createUserScript = redis.NewScript(orgBase + auditScript + `
-- ARGV: folded, id, user, inst, kind ("sa" or "hu"), max
if redis.call('EXISTS', KEYS[1]) == 0 then return 'NOTFOUND' end
if redis.call('HEXISTS', b..'users', ARGV[1]) == 1 or redis.call('HEXISTS', b..'uid', ARGV[2]) == 1 then
  return 'EXISTS'
end
local max = tonumber(ARGV[6])
if max > 0 and redis.call('HLEN', b..'users') >= max then return 'LIMIT' end
redis.call('HSET', b..'users', ARGV[1], ARGV[3])
redis.call('HSET', b..'inst', ARGV[1], ARGV[4])
local rec = ARGV[3]..'\n'..ARGV[4]
redis.call('SET', b..'name:'..ARGV[1], rec)
redis.call('HSET', b..'uid', ARGV[2], ARGV[1])
redis.call('ZADD', b..'recs', 0, ARGV[1]..'\0'..rec)
redis.call('ZADD', b..'ix:'..ARGV[5], 0, ARGV[1])
audit(b, 7)
return 'OK'
`)

var getUserScript = redis.NewScript(orgBase + `
-- ARGV: folded
local u = redis.call('HGET', b..'users', ARGV[1])
if not u then return false end
return {u, redis.call('HGET', b..'inst', ARGV[1])}
`)

// userByIDScript returns {folded username, user record} of the user id
// ARGV[1], or nil.
var userByIDScript = redis.NewScript(orgBase + `
local f = redis.call('HGET', b..'uid', ARGV[1])
if not f then return false end
return {f, redis.call('HGET', b..'users', f)}
`)

// setPrivilegesScript replaces the record of the user id ARGV[1] with
// ARGV[3] if it is still ARGV[2], the record the caller read: a
// compare-and-set of the whole record, of which only the privileges
// change once the user is created.
var setPrivilegesScript = redis.NewScript(orgBase + setRec + auditScript + `
-- ARGV: id, record read, new record
local f = redis.call('HGET', b..'uid', ARGV[1])
if not f then return 'NOTFOUND' end
if redis.call('HGET', b..'users', f) ~= ARGV[2] then return 'CONFLICT' end
redis.call('HSET', b..'users', f, ARGV[3])
local rec = ARGV[3]..'\n'..(redis.call('HGET', b..'inst', f) or '')
redis.call('SET', b..'name:'..f, rec)
setRec(b, f, rec)
audit(b, 4)
return 'OK'
`)

var setInstancesScript = redis.NewScript(orgBase + setRec + auditScript + `
-- ARGV: id, inst
local f = redis.call('HGET', b..'uid', ARGV[1])
if not f then return 'NOTFOUND' end
local u = redis.call('HGET', b..'users', f)
redis.call('HSET', b..'inst', f, ARGV[2])
local rec = u..'\n'..ARGV[2]
redis.call('SET', b..'name:'..f, rec)
setRec(b, f, rec)
audit(b, 3)
return 'OK'
`)

// deleteUserScript removes the user of an id and everything of it in the
// org's slot at once and returns {user, inst, global keys (without
// prefix), folded username}. With single = "1" it removes those global
// keys too, and returns none.
var deleteUserScript = redis.NewScript(orgBase + auditScript + `
-- ARGV: id, single, prefix
local id = ARGV[1]
local f = redis.call('HGET', b..'uid', id)
if not f then return false end
local u = redis.call('HGET', b..'users', f)
if not u then return false end
local i = redis.call('HGET', b..'inst', f)
local gone = {}
local tk = b..'tok:'..id
for _, v in ipairs(redis.call('HVALS', tk)) do
  local t = cjson.decode(v)
  gone[#gone+1] = 'tok:'..t.d
  gone[#gone+1] = 'tid:'..t.id
  redis.call('DEL', b..'trec:'..t.id)
end
local ss, zs = b..'sess:'..id, b..'sesz:'..id
local seen = {}
for _, hs in ipairs({redis.call('SMEMBERS', ss), redis.call('ZRANGE', zs, 0, -1)}) do
  for _, h in ipairs(hs) do
    if not seen[h] then
      seen[h] = true
      redis.call('DEL', b..'ses:'..id..':'..h)
      gone[#gone+1] = 'ses:'..h
    end
  end
end
redis.call('DEL', tk, b..'toks:'..id, b..'name:'..f, b..'user:'..id, ss, zs, b..'duck:'..id)
redis.call('ZREM', b..'active', f..'\0'..id)
redis.call('HDEL', b..'users', f)
redis.call('HDEL', b..'inst', f)
redis.call('HDEL', b..'uid', id)
redis.call('ZREMRANGEBYLEX', b..'recs', '['..f..'\0', '('..f..'\1')
redis.call('ZREM', b..'ix:sa', f)
redis.call('ZREM', b..'ix:hu', f)
if ARGV[2] == '1' then
  for _, k in ipairs(gone) do redis.call('DEL', ARGV[3]..k) end
  gone = {}
end
audit(b, 4)
return {u, i or '', gone, f}
`)

// listUsersScript returns {total, names, users, insts} for one page of
// service accounts or humans (ARGV[1], "sa" or "hu"): by keyset (after
// the folded username ARGV[2], BYLEX) or by rank (ARGV[3] to ARGV[4]),
// at most ARGV[5] users. Both cost O(log N + page), however deep. A page
// of all users reads recs instead, without a script (users.go).
var listUsersScript = redis.NewScript(orgBase + `
-- ARGV: index, after, first rank, last rank, count
-- (the ranks are computed by the caller: Lua numbers lose large integers)
local ix = b..'ix:'..ARGV[1]
local names
if ARGV[2] ~= '' then
  names = redis.call('ZRANGE', ix, '('..ARGV[2], '+', 'BYLEX', 'LIMIT', 0, ARGV[5])
else
  names = redis.call('ZRANGE', ix, ARGV[3], ARGV[4])
end
local total = redis.call('ZCARD', ix)
if #names == 0 then return {total, {}, {}, {}} end
return {total, names, redis.call('HMGET', b..'users', unpack(names)), redis.call('HMGET', b..'inst', unpack(names))}
`)

// migrateRecsScript builds recs from the users and inst hashes, which
// are the truth, and removes ix:all, which recs replaces: what a listing
// of all users does once when it finds recs not counting the users, as in
// an org written by an earlier version. It returns how many users recs
// holds.
var migrateRecsScript = redis.NewScript(orgBase + `
local r = b..'recs'
redis.call('DEL', r, b..'ix:all')
local us = redis.call('HGETALL', b..'users')
for j = 1, #us, 2 do
  local f = us[j]
  local i = redis.call('HGET', b..'inst', f) or ''
  redis.call('ZADD', r, 0, f..'\0'..us[j+1]..'\n'..i)
end
return #us / 2
`)

// tokenRecord defines credential(b, uid, tid), which reads the token tid
// of the user uid with that user: {token, user, inst, folded username}, or
// false. The Cluster's script uses it; a single server's authentication
// finds the folded username in the pointer instead.
const tokenRecord = `
local function credential(b, uid, tid)
  local t = redis.call('HGET', b..'tok:'..uid, tid)
  if not t then return false end
  local f = redis.call('HGET', b..'uid', uid)
  if not f then return false end
  return {t, redis.call('HGET', b..'users', f), redis.call('HGET', b..'inst', f), f}
end
`

// targetRecords defines target(b, target, tokens), which reads the user
// of the org whose folded username is target, other than the caller:
// {user, inst, its toks:<uid> (” for none) when tokens is '1', else
// false}, or {false, false, false} when there is no such user.
const targetRecords = `
local function target(b, name, tokens)
  local u = redis.call('HGET', b..'users', name)
  if not u then return {false, false, false} end
  local recs = false
  if tokens == '1' then
    recs = redis.call('GET', b..'toks:'..userID(u)) or ''
  end
  return {u, redis.call('HGET', b..'inst', name) or '', recs}
end
`

// credentialScript is the second step of authentication on a Cluster,
// after the pointer: the credential, and the target ARGV[3] with its token
// records when ARGV[4] is '1'. It returns {token, user, inst, folded,
// target user, target inst, target records}: the target's user and inst
// are false when ARGV[3] is empty, names the caller or names no user; its
// records (the caller's, when ARGV[3] names the caller) are false unless
// ARGV[4] asks for them. Like the authentication script, with mirror
// '1', it writes the records that plain reads find by name and by token
// id where an earlier version did not; the token's, to end with its
// pointer (which lives in another slot, so its expiry is counted from the
// token's).
var credentialScript = redis.NewScript(orgBase + tokenRecord + targetRecords + mirrorRecords + `
-- ARGV: uid, tid, target folded ('' for none), tokens ('1' or '0'), the instant (ms) a key of a token that expires then would end, mirror ('1' or '0')
local c = credential(b, ARGV[1], ARGV[2])
if not c then return false end
c[5], c[6], c[7] = false, false, false
if ARGV[3] == c[4] then
  if ARGV[4] == '1' then c[7] = redis.call('GET', b..'toks:'..ARGV[1]) or '' end
elseif ARGV[3] ~= '' then
  local t = target(b, ARGV[3], ARGV[4])
  c[5], c[6], c[7] = t[1], t[2], t[3]
end
if ARGV[6] == '1' then
  local life = 0
  if redis.call('EXISTS', b..'trec:'..ARGV[2]) == 0 then
    local e = cjson.decode(c[1]).e
    if e ~= 0 then life = math.max(e - tonumber(ARGV[5]), 1) end
  end
  mirror(b, c[4], c[2], c[3], ARGV[2], c[1], life)
  if c[5] and ARGV[4] ~= '1' then mirror(b, ARGV[3], c[5], c[6]) end
end
return c
`)

// mirrorRecords defines mirror(b, f, user, inst[, tid, token, life]),
// which writes name:<f> from a user's record and instance configuration,
// and trec:<tid> from a token's record (for life ms; 0 for no end), where
// data written by an earlier version lacks them, so that plain reads find
// them from then on.
const mirrorRecords = `
local function mirror(b, f, u, i, tid, t, life)
  if redis.call('EXISTS', b..'name:'..f) == 0 then
    redis.call('SET', b..'name:'..f, u..'\n'..(i or ''))
  end
  if tid and t and redis.call('EXISTS', b..'trec:'..tid) == 0 then
    if life > 0 then
      redis.call('SET', b..'trec:'..tid, t, 'PX', life)
    else
      redis.call('SET', b..'trec:'..tid, t)
    end
  end
end
`

// authenticateScript is authentication on a single server: the digest's
// pointer and the records it points at, in one round trip, with the
// target ARGV[2] when it is not empty (and its token records when ARGV[3]
// is '1'). KEYS[1] is the pointer; the org's keys are derived from its
// value. It returns the flat array {org, uid, token id, folded, user,
// inst, token, target user, target inst, target records, pointer}: token
// is false when the caller lists its own tokens (its record is among
// them); the target's user and inst are false when the target is the
// caller or there is none, and its records false unless asked for. With
// mirror '1' (the Store does not know where the token's records are, or
// its plain reads missed one), it writes the records that plain reads find
// by name and by token id (name:<f>, trec:<tid>) where data written by an
// earlier version lacks them: the caller's, and the target's unless the
// request lists the target's tokens (which always runs this script). Each
// redis.call, and each string passed between Redis and Lua, costs more
// than the command it runs, so the script makes as few as it can and
// passes the records as one string. Once the Store knows where a token's records are, it
// reads them without the script (credentialAt) unless the request lists
// another user's tokens.
var authenticateScript = redis.NewScript(userIDFunc + targetRecords + mirrorRecords + `
-- ARGV: prefix, target folded ('' for none), tokens ('1' or '0'), mirror ('1' or '0')
local v = redis.call('GET', KEYS[1])
if not v then return false end
if string.byte(v, 1) == 0 then return {v} end
local org, uid, f, tid = string.match(v, '^([^\n]*)\n([^\n]*)\n([^\n]*)\n(.*)$')
local b
if org then
  b = ARGV[1]..'{o:'..org..'}:'
else
  org, uid, tid = string.match(v, '^([^\n]*)\n([^\n]*)\n(.*)$')
  if not org then return false end
  b = ARGV[1]..'{o:'..org..'}:'
  f = redis.call('HGET', b..'uid', uid)
  if not f then return false end
end
local u = redis.call('HGET', b..'users', f)
if not u then return false end
local i = redis.call('HGET', b..'inst', f)
local t, tu, ti, recs = false, false, false, false
if ARGV[2] == f and ARGV[3] == '1' then
  recs = redis.call('GET', b..'toks:'..uid) or ''
else
  t = redis.call('HGET', b..'tok:'..uid, tid)
  if not t then return false end
  if ARGV[2] ~= '' and ARGV[2] ~= f then
    local r = target(b, ARGV[2], ARGV[3])
    tu, ti, recs = r[1], r[2], r[3]
  end
end
if ARGV[4] == '1' then
  local life = redis.call('PTTL', KEYS[1]) -- -1: none
  if life < 0 then life = 0 elseif life == 0 then life = 1 end
  mirror(b, f, u, i, tid, t or redis.call('HGET', b..'tok:'..uid, tid), life)
  if tu and ARGV[3] ~= '1' then mirror(b, ARGV[2], tu, ti) end
end
return {org, uid, tid, f, u, i or '', t, tu, ti, recs, v}
`)

// createTokenScript adds a token to its user, counting the user's live
// tokens against the limit and dropping those no longer live when the
// count is at the limit (or, without one, now and then).
var createTokenScript = redis.NewScript(orgBase + relist + auditScript + `
-- ARGV: uid, tid, token, max, liveAt (ms), single, prefix, hex, org, ttl (ms, 0 = none)
local P = ARGV[7]
local single = ARGV[6] == '1'
if single then
  local pv = redis.call('GET', P..'tok:'..ARGV[8])
  if (pv and string.byte(pv, 1) ~= 0) or redis.call('EXISTS', P..'tid:'..ARGV[2]) == 1 then
    return 'EXISTS'
  end
end
local f = redis.call('HGET', b..'uid', ARGV[1])
if not f then return 'NOTFOUND' end
local tk = b..'tok:'..ARGV[1]
if redis.call('HEXISTS', tk, ARGV[2]) == 1 then return 'EXISTS' end
local max = tonumber(ARGV[4])
local n = redis.call('HLEN', tk)
local dropped = false
local gone = {}
if (max > 0 and n >= max) or n % 1024 == 1023 then
  local live = tonumber(ARGV[5])
  local all = redis.call('HGETALL', tk)
  for j = 1, #all, 2 do
    local t = cjson.decode(all[j+1])
    if t.e ~= 0 and t.e <= live then
      redis.call('HDEL', tk, all[j])
      redis.call('DEL', b..'trec:'..t.id)
      n = n - 1
      dropped = true
      if single then
        redis.call('DEL', P..'tok:'..t.d, P..'tid:'..t.id)
      else
        table.insert(gone, t.id)
      end
    end
  end
end
if max > 0 and n >= max then
  if dropped then relist(b, ARGV[1]) end
  if #gone > 0 then return {'LIMIT', gone} end
  return 'LIMIT'
end
redis.call('HSET', tk, ARGV[2], ARGV[3])
if dropped then
  relist(b, ARGV[1])
elseif n == 0 then
  redis.call('SET', b..'toks:'..ARGV[1], ARGV[3])
else
  redis.call('APPEND', b..'toks:'..ARGV[1], '\n'..ARGV[3])
end
local ttl = tonumber(ARGV[10])
if ttl > 0 then
  redis.call('SET', b..'trec:'..ARGV[2], ARGV[3], 'PX', ttl)
else
  redis.call('SET', b..'trec:'..ARGV[2], ARGV[3])
end
if single then
  local pointer = ARGV[9]..'\n'..ARGV[1]..'\n'..f..'\n'..ARGV[2]
  if ttl > 0 then
    redis.call('SET', P..'tok:'..ARGV[8], pointer, 'PX', ttl)
    redis.call('SET', P..'tid:'..ARGV[2], ARGV[8], 'PX', ttl)
  else
    redis.call('SET', P..'tok:'..ARGV[8], pointer)
    redis.call('SET', P..'tid:'..ARGV[2], ARGV[8])
  end
end
audit(b, 11)
if #gone > 0 then return {'OK', gone} end
return 'OK'
`)

// deleteTokenScript removes a live token and returns {status, digest hex,
// expiry (ms, 0 for none), digests (hex) of the tombstones the org's bound
// drops}; {'NOTFOUND', 'absent'} when its user holds no token of that id,
// expired or not. With single = "1" it also replaces the token's pointer
// with its tombstone (of the org ARGV[6]; see tombstone.go), removes its
// id's pointer, and deletes the tombstones the bound drops itself (and
// returns none).
var deleteTokenScript = redis.NewScript(orgBase + relist + boundRevoked + tombstoneOrg + auditScript + `
-- ARGV: uid, tid, liveAt (ms), single, prefix, org, tombstone life (ms) of a token without expiry, grace (ms),
-- tombstones kept per org (0: no bound)
local tk = b..'tok:'..ARGV[1]
local v = redis.call('HGET', tk, ARGV[2])
if not v then return {'NOTFOUND', 'absent'} end
local t = cjson.decode(v)
local at = tonumber(ARGV[3])
if t.e ~= 0 and t.e <= at then return {'NOTFOUND'} end
redis.call('HDEL', tk, ARGV[2])
redis.call('DEL', b..'trec:'..ARGV[2])
relist(b, ARGV[1])
local ttl = tonumber(ARGV[7])
local upto = at + ttl
if t.e ~= 0 then
  upto, ttl = t.e, t.e - at
end
local gone = {}
if ttl > 0 and tonumber(ARGV[9]) > 0 then
  gone = boundRevoked(b, t.d, upto, at, tonumber(ARGV[9]), tonumber(ARGV[8]))
end
if ARGV[4] == '1' then
  local P = ARGV[5]
  if ttl > 0 then
    local tomb = '\0rev\n'..string.format('%d', upto)..'\n'..ARGV[3]..'\n'..ARGV[6]..'\n'..ARGV[1]..'\n'..ARGV[2]
    redis.call('SET', P..'tok:'..t.d, tomb, 'PX', ttl + tonumber(ARGV[8]))
  else
    redis.call('DEL', P..'tok:'..t.d)
  end
  redis.call('DEL', P..'tid:'..t.id)
  for _, d in ipairs(gone) do
    local k = P..'tok:'..d
    if tombstoneOrg(redis.call('GET', k)) == ARGV[6] then redis.call('DEL', k) end
  end
  gone = {}
end
audit(b, 10)
return {'OK', t.d, t.e, gone}
`)

// boundRevoked defines boundRevoked(b, d, upto, at, max, grace): it adds
// the digest d (hex), whose tombstone ends at upto (ms), to the org's
// sorted set of its tombstones' digests by their ends, drops those that
// ended at at, and then those that end first beyond max of them, and
// returns the digests dropped: their tombstones are the caller's to
// delete (tombstoneOrg tells whether one is still the org's). The set
// expires once the last of them ends.
const boundRevoked = `
local function boundRevoked(b, d, upto, at, max, grace)
  local k = b..'revoked'
  redis.call('ZREMRANGEBYSCORE', k, '-inf', at)
  redis.call('ZADD', k, upto, d)
  local gone = {}
  local n = redis.call('ZCARD', k) - max
  if n > 0 then
    local popped = redis.call('ZPOPMIN', k, n)
    for i = 1, #popped, 2 do gone[#gone + 1] = popped[i] end
  end
  local last = redis.call('ZRANGE', k, -1, -1, 'WITHSCORES')
  if #last == 2 then
    redis.call('PEXPIRE', k, math.max(tonumber(last[2]) - at, 1) + grace)
  end
  return gone
end
`

// tombstoneOrg defines tombstoneOrg(v): the org of the tombstone v (see
// tombstone.go); false when v is none.
const tombstoneOrg = `
local function tombstoneOrg(v)
  if not v or string.byte(v, 1) ~= 0 then return false end
  return string.match(v, '^.rev\n[^\n]*\n[^\n]*\n([^\n]*)\n') or false
end
`

// releaseScript deletes KEYS[1] if it still holds ARGV[1]: the undo of a
// global key this process reserved.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// tombstoneScript sets KEYS[1], a digest's pointer on a Cluster, to
// ARGV[2] (for ARGV[3] ms; deletes it when 0) unless it points at another
// token than ARGV[1] ("<org>\n<uid>\n<id>"): it may be missing, hold a
// tombstone, or point at that token, marked or not. It returns 1 when it
// wrote.
var tombstoneScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.byte(v, 1) ~= 0 then
  local cut = string.find(v, '\0', 1, true)
  if cut then v = string.sub(v, 1, cut - 1) end
  if v ~= ARGV[1] then return 0 end
end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
return 1
`)

// dropTombstoneScript deletes KEYS[1], a digest's pointer on a Cluster, if
// it holds a tombstone of the org ARGV[1]: one that the org's bound of
// tombstones dropped (see boundRevoked).
var dropTombstoneScript = redis.NewScript(tombstoneOrg + `
if tombstoneOrg(redis.call('GET', KEYS[1])) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// takeOverScript sets KEYS[1] to ARGV[2] (for ARGV[3] ms, none when 0) if
// it still holds ARGV[1], a dead reservation (takeOver), or holds nothing
// any more (the reservation was removed or expired since it was read),
// and returns 1; 1 too when it holds ARGV[2] already (the answer of a
// first run was lost), else 0.
var takeOverScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[2] then return 1 end
if v and v ~= ARGV[1] then return 0 end
if tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1
`)

// dropUserTokenScript deletes KEYS[1], a digest's pointer on a Cluster, if
// it names a token of the user ARGV[1] ("<org>\n<uid>\n"), marked or not;
// a tombstone, or a pointer to another user's token, stays.
var dropUserTokenScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// dropIDScript deletes KEYS[1], a token id's pointer, if it names the
// digest ARGV[1]: holds it, marked or not.
var dropIDScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and (v == ARGV[1] or string.sub(v, 1, #ARGV[1] + 1) == ARGV[1]..'\0') then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

var setDucklingScript = redis.NewScript(orgBase + `
-- ARGV: uid, duckling id, report
local f = redis.call('HGET', b..'uid', ARGV[1])
if not f then return 'NOTFOUND' end
redis.call('HSET', b..'duck:'..ARGV[1], ARGV[2], ARGV[3])
redis.call('ZADD', b..'active', 0, f..'\0'..ARGV[1])
return 'OK'
`)

// listActivityScript returns {user, inst, {id, report, ...}, folded} for every
// user with Duckling reports, ordered by folded username.
var listActivityScript = redis.NewScript(orgBase + `
local out = {}
for _, m in ipairs(redis.call('ZRANGE', b..'active', 0, -1)) do
  local f, id = string.match(m, '^([^%z]*)%z(.*)$')
  local u = redis.call('HGET', b..'users', f)
  if u then
    out[#out+1] = {u, redis.call('HGET', b..'inst', f), redis.call('HGETALL', b..'duck:'..id), f}
  end
end
return out
`)

var putDiveScript = redis.NewScript(orgBase + auditScript + `
-- ARGV: id, dive
if redis.call('EXISTS', KEYS[1]) == 0 then return 'NOTFOUND' end
redis.call('HSET', b..'dives', ARGV[1], ARGV[2])
audit(b, 3)
return 'OK'
`)

// createDiveScript is putDiveScript for a Dive the org does not hold.
var createDiveScript = redis.NewScript(orgBase + auditScript + `
-- ARGV: id, dive
if redis.call('EXISTS', KEYS[1]) == 0 then return 'NOTFOUND' end
if redis.call('HSETNX', b..'dives', ARGV[1], ARGV[2]) == 0 then return 'EXISTS' end
audit(b, 3)
return 'OK'
`)

// embedTargetScript returns {dive, user, inst}, each false when missing.
var embedTargetScript = redis.NewScript(orgBase + `
-- ARGV: dive id, folded
return {redis.call('HGET', b..'dives', ARGV[1]), redis.call('HGET', b..'users', ARGV[2]), redis.call('HGET', b..'inst', ARGV[2])}
`)

// createSessionScript stores a session of a user that exists, unless the
// user holds max live sessions (max 0: no limit). The user's sessions are
// listed in sesz:<uid>, scored by expiry: those not live at liveAt (a score
// up to it) go, records and all, and ZCARD counts the rest, in O(log N)
// but for the sessions it drops, each once. A set sess:<uid> written by an
// earlier version is moved into sesz:<uid> first, each member scored by
// the expiry its record holds (a member whose record Redis dropped is
// left out), and removed. sesz:<uid> expires with the last of the
// records it lists: each creation extends its life to the new record's
// (and a move to that of the records moved), so the list of a user who
// stops creating sessions does not stay.
var createSessionScript = redis.NewScript(orgBase + auditScript + `
-- ARGV: uid, hex, session, ttl (ms), single, prefix, pointer, expires (ms), max, liveAt (ms)
local single = ARGV[5] == '1'
if single and redis.call('EXISTS', ARGV[6]..'ses:'..ARGV[2]) == 1 then return 'EXISTS' end
if redis.call('HEXISTS', b..'uid', ARGV[1]) == 0 then return 'NOTFOUND' end
local sk = b..'ses:'..ARGV[1]..':'
if redis.call('EXISTS', sk..ARGV[2]) == 1 then return 'EXISTS' end
local zs = b..'sesz:'..ARGV[1]
local old = b..'sess:'..ARGV[1]
if redis.call('EXISTS', old) == 1 then
  local last = 0
  for _, h in ipairs(redis.call('SMEMBERS', old)) do
    local r = redis.call('GET', sk..h)
    if r then
      local e = string.match(r, ',"e":(%-?%d+)}$') or string.format('%d', cjson.decode(r).e)
      redis.call('ZADD', zs, e, h)
      last = math.max(last, redis.call('PTTL', sk..h))
    end
  end
  redis.call('DEL', old)
  if last > redis.call('PTTL', zs) then redis.call('PEXPIRE', zs, last) end
end
local dead = redis.call('ZRANGEBYSCORE', zs, '-inf', ARGV[10])
local gone = {}
if #dead > 0 then
  for _, h in ipairs(dead) do
    redis.call('DEL', sk..h)
    if single then redis.call('DEL', ARGV[6]..'ses:'..h) end
  end
  redis.call('ZREMRANGEBYSCORE', zs, '-inf', ARGV[10])
  if not single then gone = dead end
end
local max = tonumber(ARGV[9])
if max > 0 and redis.call('ZCARD', zs) >= max then
  if #gone > 0 then return {'LIMIT', gone} end
  return 'LIMIT'
end
redis.call('SET', sk..ARGV[2], ARGV[3], 'PX', ARGV[4])
redis.call('ZADD', zs, ARGV[8], ARGV[2])
if redis.call('PTTL', zs) < tonumber(ARGV[4]) then redis.call('PEXPIRE', zs, ARGV[4]) end
if single then redis.call('SET', ARGV[6]..'ses:'..ARGV[2], ARGV[7], 'PX', ARGV[4]) end
audit(b, 11)
if #gone > 0 then return {'OK', gone} end
return 'OK'
`)

// sessionScript is a session lookup on a single server, in one round trip:
// {org, session}, or false.
var sessionScript = redis.NewScript(`
-- KEYS[1]: the digest's pointer. ARGV: prefix, hex
local v = redis.call('GET', KEYS[1])
if not v then return false end
local org, uid = string.match(v, '^([^\n]*)\n(.*)$')
if not org then return false end
local rec = redis.call('GET', ARGV[1]..'{o:'..org..'}:ses:'..uid..':'..ARGV[2])
if not rec then return false end
return {org, rec}
`)

var addFeedbackScript = redis.NewScript(`
-- KEYS: records, order. ARGV: id, record, max
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 'EXISTS' end
redis.call('RPUSH', KEYS[2], ARGV[1])
while redis.call('LLEN', KEYS[2]) > tonumber(ARGV[3]) do
  redis.call('HDEL', KEYS[1], redis.call('LPOP', KEYS[2]))
end
return 'OK'
`)
