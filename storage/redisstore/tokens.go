package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// they never authenticate, they expire with the token, and deleting the
// token by its id (as the Service withdraws a creation that failed)
// removes them. A process that dies there withdraws nothing: a creation
// of the same value (a seeded one, such as a bootstrap token given again)
// then takes the digest's pointer over, and removes the dead token's id
// pointer, once that reservation is older than the reservation grace (1
// minute, or 10 times Options.Timeout when that is longer), told by the
// two tokens' CreatedAt, and while the token it names does not exist in
// its org; within the grace it is ErrAlreadyExists, as is a token that
// exists, however old. A Store cannot tell a dead creation from a live
// one but by that age: servers whose clocks differ by more than the grace
// could take over the reservation of a creation under way, whose token
// would then never authenticate. A reservation written by an earlier
// version, whose mark holds no time, is never taken over. A creation
// that meets a reservation makes two round trips more than one that
// meets none (three when the reservation is past the grace and its token
// exists), and four when it takes it over. A creation whose script drops
// the user's tokens no longer live removes their pointer keys after it,
// in three round trips more (best effort, as the undo of a reservation),
// so that a dropped token's value and id are free again, as they are on
// a single server, whose script removes them itself.
func (s *Store) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
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
	args := withAudit(a, t.UserID, t.ID, encode(toTokenDoc(t)), lim.Max, millis(lim.LiveAt), single(s.single), s.prefix, hex, t.Org, ttl)
	if s.single {
		v, err := s.run(ctx, createTokenScript, t.Org, args...).Result()
		return status("create token", v, err)
	}

	digestKey := s.prefix + "tok:" + hex
	keys := map[string]string{digestKey: pointer, s.prefix + "tid:" + t.ID: hex}
	claimed, err := s.reserve(ctx, keys, time.Duration(ttl)*time.Millisecond, t.CreatedAt, digestKey)
	if err != nil {
		return fmt.Errorf("create token: %w", err)
	}
	if err := s.stepped("create token: reserved"); err != nil {
		return err
	}
	v, err := s.run(ctx, createTokenScript, t.Org, args...).Result()
	v, gone := dropped(v)
	if err = status("create token", v, err); err != nil && (isRefusal(err) || moving(err)) {
		undo, cancel := s.finishing(ctx)
		s.unreserve(undo, keys, claimed)
		cancel()
	}
	if len(gone) > 0 {
		// The tokens the script dropped as expired are gone: their
		// pointers go too, so that their values and ids are free.
		s.dropPointers(ctx, t.Org, t.UserID, gone...)
	}
	return err
}

// dropped splits the reply of a creation's script on a Cluster: its
// status, and the ids (of tokens) or digests (of sessions, in hex) of the
// records it dropped as no longer live, whose pointer keys are the
// caller's to remove. A reply without them is the status alone.
func dropped(v any) (any, []string) {
	r, ok := v.([]any)
	if !ok || len(r) != 2 {
		return v, nil
	}
	list, _ := r[1].([]any)
	gone := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			gone = append(gone, s)
		}
	}
	return r[0], gone
}

// reserve sets each key to its value if none of them exists, with the
// given lifetime (none when 0). It returns ErrAlreadyExists, having undone
// its own writes, when one exists, unless that one is orphan (a token's
// digest key; "" for none) and holds a dead reservation, which it takes
// over (takeOver). A key that holds a tombstone is claimed (the token is
// created anew with a revoked digest); reserve returns those it claimed,
// for unreserve to put back should the creation be refused: a refused
// creation leaves the digest revoked.
//
// Each value gets a mark of this call (in keys itself, which release then
// matches): go-redis resends a pipeline whose answer was lost, and a key
// that holds this call's mark is this call's own, not another's. The mark
// also holds at, the creation time of what is reserved (the caller's
// clock, which the Store never reads itself): how old a reservation is
// that another call finds.
func (s *Store) reserve(ctx context.Context, keys map[string]string, life time.Duration, at time.Time, orphan string) (map[string]claimedTombstone, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	mark := markSep + hex.EncodeToString(nonce[:]) + markSep + strconv.FormatInt(millis(at), 10)
	for k, v := range keys {
		keys[k] = v + mark
	}
	cmds := make(map[string]*redis.BoolCmd, len(keys))
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range keys {
			cmds[k] = p.SetNX(ctx, k, v, life)
		}
		return nil
	})
	if err != nil {
		// On a Cluster the keys live on different nodes: one that did
		// not answer leaves the others set. When it hung, ctx has ended.
		undo, cancel := s.finishing(ctx)
		s.release(undo, keys)
		cancel()
		return nil, failed("reserve", err)
	}
	held := make(map[string]*redis.StringCmd)
	for k, c := range cmds {
		if !c.Val() {
			held[k] = nil
		}
	}
	if len(held) == 0 {
		return nil, nil
	}
	if err := s.stepped("reserve: held"); err != nil {
		return nil, err
	}
	// A digest's tombstone is no token: the key is claimed over it.
	claims := make(map[string]*redis.Cmd, len(held))
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k := range held {
			claims[k] = claimScript.Eval(ctx, p, []string{k}, keys[k], life.Milliseconds())
		}
		return nil
	})
	var claimed map[string]claimedTombstone
	for k, c := range claims {
		if v, ok := c.Val().([]any); ok && len(v) == 2 {
			tomb, _ := v[0].(string)
			ttl, _ := v[1].(int64)
			if claimed == nil {
				claimed = make(map[string]claimedTombstone, len(claims))
			}
			claimed[k] = claimedTombstone{value: tomb, ttl: ttl}
			delete(held, k)
		}
	}
	if err != nil {
		// A claim may have been made on one node and not on another:
		// each key goes while it holds this call's value, or holds again
		// the tombstone claimed (one whose answer was lost goes, and its
		// token's value reads unknown rather than revoked, as after a
		// crash).
		undo, cancel := s.finishing(ctx)
		s.unreserve(undo, keys, claimed)
		cancel()
		return nil, failed("reserve", err)
	}
	if len(held) == 0 {
		return claimed, nil
	}
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k := range held {
			held[k] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		undo, cancel := s.finishing(ctx)
		s.unreserve(undo, keys, claimed)
		cancel()
		return nil, failed("reserve", err)
	}
	// The keys held by another call than this one (whose resent pipeline
	// finds its own values).
	var others []string
	for k, c := range held {
		if c.Val() != keys[k] {
			others = append(others, k)
		}
	}
	if len(others) == 0 {
		return claimed, nil
	}
	if len(others) == 1 && others[0] == orphan {
		took, err := s.takeOver(ctx, orphan, held[orphan].Val(), keys[orphan], at, life)
		if err != nil {
			s.unreserve(ctx, keys, claimed)
			return nil, err
		}
		if took {
			return claimed, nil
		}
	}
	// Each key goes only while it holds this call's value: those others
	// hold stay, and the tombstones claimed come back.
	s.unreserve(ctx, keys, claimed)
	return nil, storage.ErrAlreadyExists
}

// markSep separates a reserved value from the mark of the call that
// reserved it: "<value>\0<nonce>\0<creation ms>". Earlier versions wrote
// marks without the creation time: "<value>\0<nonce>".
const markSep = "\x00"

// unmark returns a reserved value without its mark.
func unmark(v string) string {
	v, _, _ = strings.Cut(v, markSep)
	return v
}

// reservedAt returns the creation time in the mark of a reserved value,
// and false when it holds none (a mark of an earlier version, or no
// mark).
func reservedAt(v string) (time.Time, bool) {
	_, mark, ok := strings.Cut(v, markSep)
	if !ok {
		return time.Time{}, false
	}
	_, at, ok := strings.Cut(mark, markSep)
	if !ok {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(at, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}, false
	}
	return fromMillis(ms), true
}

// A creation on a Cluster reserves its token's pointer keys before its
// script stores the token, within its context, which Options.Timeout
// bounds: once that has passed, its script can no longer be sent. A
// reservation made longer ago than the reservation grace, whose token
// its org does not hold, is therefore one whose creation died (or
// failed, and could not release it): a creation of the same value takes
// it over. The grace is the longer of minReservationGrace and
// reservationGraceTimeouts times the Store's Timeout. Ages are told by
// the creation times of the two tokens, from the callers' clocks: servers
// whose clocks differ by more than the grace could take over a
// reservation whose creation is still under way.
const (
	minReservationGrace      = time.Minute
	reservationGraceTimeouts = 10
)

// reservationGrace is how old a reservation of a token that does not
// exist must be for a creation of the same value to take it over.
func (s *Store) reservationGrace() time.Duration {
	return max(minReservationGrace, reservationGraceTimeouts*s.timeout)
}

// takeOver sets key, a token's digest key that holds v, reserved by
// another creation ("" when the key went since it was found held: then
// it is free), to ours (for life, none when 0) when v is a dead
// reservation: a pointer, not a tombstone, whose mark dates it at least
// the reservation grace before at, the creation time of ours, and whose
// token its org does not hold (one read in the org's slot). It sets it
// only while the key still holds v, or nothing (v was removed or expired
// since: the value is free), so that of two creations taking over the
// same v one does, and drops the dead reservation's id key while
// that names the same digest (best effort, in the same round trip). It
// reports whether it took the key.
func (s *Store) takeOver(ctx context.Context, key, v, ours string, at time.Time, life time.Duration) (bool, error) {
	if v == "" {
		// The key went after this call found it held (a tombstone or a
		// pointer whose life ended, a deletion): the value is free, unless
		// another creation takes it first.
		return s.swap(ctx, key, "", ours, life, "")
	}
	// A mark without a time, written by an earlier version, is of unknown
	// age: its creation may still be under way, so it is never taken.
	reserved, ok := reservedAt(v)
	if isTombstone(v) || !ok || at.Sub(reserved) < s.reservationGrace() {
		return false, nil
	}
	parts := strings.SplitN(unmark(v), "\n", 3)
	if len(parts) != 3 {
		return false, nil
	}
	org, uid, tid := parts[0], parts[1], parts[2]
	exists, err := s.c.HExists(ctx, s.orgBase(org)+"tok:"+uid, tid).Result()
	if err != nil {
		return false, failed("reserve", err)
	}
	if exists {
		return false, nil
	}
	if err := s.stepped("create token: take over"); err != nil {
		return false, err
	}
	return s.swap(ctx, key, v, ours, life, tid)
}

// swap sets key to ours (for life, none when 0) while it holds v or
// nothing (takeOverScript), and drops the id key of the token tid ("" for
// none) while that names key's digest, in one round trip. It reports
// whether key is ours.
func (s *Store) swap(ctx context.Context, key, v, ours string, life time.Duration, tid string) (bool, error) {
	var took *redis.Cmd
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		took = takeOverScript.Eval(ctx, p, []string{key}, v, ours, life.Milliseconds())
		if tid != "" {
			dropIDScript.Eval(ctx, p, []string{s.prefix + "tid:" + tid}, strings.TrimPrefix(key, s.prefix+"tok:"))
		}
		return nil
	})
	n, err := took.Int64()
	if err != nil {
		return false, failed("reserve", err)
	}
	return n == 1, nil
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

// unreserve undoes a reservation whose creation was refused: each key
// that still holds this process's value goes, or holds again the
// tombstone reserve claimed it over. It is best effort, as release is.
func (s *Store) unreserve(ctx context.Context, keys map[string]string, claimed map[string]claimedTombstone) {
	if len(claimed) == 0 {
		s.release(ctx, keys)
		return
	}
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, v := range keys {
			if c, ok := claimed[k]; ok {
				unclaimScript.Eval(ctx, p, []string{k}, v, c.value, c.ttl)
			} else {
				releaseScript.Eval(ctx, p, []string{k}, v)
			}
		}
		return nil
	})
}

// isRefusal reports whether err is one of the contract's sentinels, the
// answers after which the script has certainly written nothing. (So is
// an answer that a Cluster's slot moved, by which run ends: moving.)
func isRefusal(err error) bool {
	return errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrAlreadyExists) ||
		errors.Is(err, storage.ErrLimitExceeded)
}

// dropPointers removes, on a Cluster, the pointer keys of the tokens
// ids of userID in org, which its user does not hold: each id's, unless
// the digest it names points at (or is the tombstone of) a token of
// another user, which holds the id; and its digest's while that names
// this token and is no tombstone. Each goes only while it holds the value
// read. It is best effort: such keys never authenticate. It makes three
// round trips, however many the ids.
func (s *Store) dropPointers(ctx context.Context, org, userID string, ids ...string) {
	idCmds := make([]*redis.StringCmd, len(ids))
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			idCmds[i] = p.Get(ctx, s.prefix+"tid:"+id)
		}
		return nil
	})
	marked := make(map[string]string, len(ids)) // id -> its pointer's value
	for i, id := range ids {
		if v, err := idCmds[i].Result(); err == nil {
			marked[id] = v
		}
	}
	if len(marked) == 0 {
		return
	}
	pointers := make(map[string]*redis.StringCmd, len(marked))
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for id, v := range marked {
			pointers[id] = p.Get(ctx, s.prefix+"tok:"+unmark(v))
		}
		return nil
	})
	ours := org + "\n" + userID + "\n"
	keys := make(map[string]string, 2*len(marked))
	for id, v := range marked {
		digestKey := s.prefix + "tok:" + unmark(v)
		pointer, err := pointers[id].Result()
		switch {
		case errors.Is(err, redis.Nil):
			keys[s.prefix+"tid:"+id] = v
		case err != nil:
		case isTombstone(pointer):
			if tombstoneOf(pointer) == ours+id {
				keys[s.prefix+"tid:"+id] = v
			}
		case unmark(pointer) == ours+id:
			keys[s.prefix+"tid:"+id] = v
			keys[digestKey] = pointer
		}
	}
	s.release(ctx, keys)
}

// ReadAccess implements storage.Store. On a single server it is one round
// trip; on a Cluster two: the pointer, then the org's records.
func (s *Store) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var h [2 * len(q.Digest)]byte
	hex.Encode(h[:], q.Digest[:])
	key := s.prefix + "tok:" + string(h[:]) // one allocation: the key
	var r accessRecords
	var fresh *location // read by the script: remembered once it checks out
	var err error
	if s.single {
		r, fresh, err = s.accessSingle(ctx, key, q)
	} else {
		r, fresh, err = s.accessCluster(ctx, key, q)
	}
	if errors.Is(err, redis.Nil) {
		return storage.Access{}, storage.ErrNotFound
	}
	if errors.Is(err, storage.ErrRevoked) {
		var a storage.Access
		a.Credential.Token = storage.Token{Org: r.org, UserID: r.uid, ID: r.tid}
		return a, storage.ErrRevoked
	}
	if err != nil {
		s.unreached(err)
		return storage.Access{}, failed("read access", err)
	}
	a, err := r.access(q)
	if err == nil && fresh != nil {
		s.locs.Put(q.Digest, *fresh)
	}
	return a, err
}

// accessRecords are the records ReadAccess reads, as Redis holds them.
type accessRecords struct {
	org, uid, tid, folded string
	// user and inst are the caller's records; token is its token's, ""
	// when it is among recs.
	user, inst, token string
	// targetUser and targetInst are the target's records when the target
	// is another user (targetFound); recs are the target's token records
	// when asked for (hasRecs).
	targetUser, targetInst string
	targetFound, hasRecs   bool
	recs                   string
}

// accessSingle reads the records of q on a single server: with plain
// reads where the Store knows where the token's records are (plainAccess),
// else with the authentication script, whose answer also says where they
// are (fresh, nil when the Store knew it already).
func (s *Store) accessSingle(ctx context.Context, key string, q storage.AccessQuery) (accessRecords, *location, error) {
	loc, known := s.locs.Get(q.Digest)
	if known && !listsOther(q, loc) {
		if r, done, err := s.plainAccess(ctx, key, loc, q); done {
			return r, nil, err
		}
		known = false // forgotten: read, and mirrored, afresh
	}
	v, err := authenticateScript.Run(ctx, s.c, []string{key}, s.prefix, q.Username, tokensArg(q), single(!known)).Slice()
	if err != nil {
		return accessRecords{}, nil, err
	}
	if len(v) == 1 { // the digest's tombstone
		r, err := revokedAt(str(v[0]), q.LiveAt)
		return r, nil, err
	}
	r := accessRecords{
		org: str(v[0]), uid: str(v[1]), tid: str(v[2]), folded: str(v[3]),
		user: str(v[4]), inst: str(v[5]), token: str(v[6]),
	}
	r.setTarget(v[7], v[8], v[9])
	if pointer := str(v[10]); !known || pointer != loc.pointer {
		loc := s.newLocation(pointer, r.org, r.uid, r.folded, r.tid)
		return r, &loc, nil
	}
	return r, nil, nil
}

// listsOther reports whether q lists the tokens of another user than the
// one whose token is at loc, which only a script reads: it finds that
// user's id in its record.
func listsOther(q storage.AccessQuery, loc location) bool {
	return q.Tokens && q.Username != "" && q.Username != loc.folded
}

// plainAccess reads the records of q at loc, where the Store remembers
// the token's records are, with one MGET (credentialAt); with the
// pointer, at key, unless key is empty (a Cluster, which has read it).
// done is false when a script must read them instead, and the location
// is then forgotten.
func (s *Store) plainAccess(ctx context.Context, key string, loc location, q storage.AccessQuery) (r accessRecords, done bool, err error) {
	list := q.Username != "" && q.Username == loc.folded && q.Tokens
	var target string
	if q.Username != loc.folded {
		target = q.Username
	}
	at, err := s.credentialAt(ctx, key, loc, list, target)
	switch {
	case errors.Is(err, errMoved):
		s.locs.Forget(q.Digest)
		return accessRecords{}, false, nil
	case errors.Is(err, errTombstone):
		s.locs.Forget(q.Digest)
		r, err := revokedAt(at.user, q.LiveAt)
		return r, true, err
	case errors.Is(err, storage.ErrNotFound):
		s.locs.Forget(q.Digest)
		return accessRecords{}, true, redis.Nil
	case err != nil:
		return accessRecords{}, true, err
	}
	r = accessRecords{org: loc.org, uid: loc.uid, tid: loc.tid, folded: loc.folded, user: at.user, inst: at.inst}
	if list {
		r.recs, r.hasRecs = at.recs, true
	} else {
		r.token = at.recs
	}
	if at.targetFound {
		r.targetUser, r.targetInst, r.targetFound = at.targetUser, at.targetInst, true
	}
	return r, true, nil
}

// accessCluster reads the records of q on a Cluster: the pointer, then
// the org's records, with plain reads in the org's slot where the Store
// knows where they are and the pointer still says so (plainAccess), else
// with a script, whose answer says where they are (fresh, nil when the
// Store knew it already).
func (s *Store) accessCluster(ctx context.Context, key string, q storage.AccessQuery) (accessRecords, *location, error) {
	pointer, err := s.c.Get(ctx, key).Result()
	if err != nil {
		return accessRecords{}, nil, err
	}
	if isTombstone(pointer) {
		r, err := revokedAt(pointer, q.LiveAt)
		return r, nil, err
	}
	loc, known := s.locs.Get(q.Digest)
	known = known && loc.pointer == pointer
	if known && !listsOther(q, loc) {
		if r, done, err := s.plainAccess(ctx, "", loc, q); done {
			return r, nil, err
		}
		known = false // forgotten: read, and mirrored, afresh
	}
	parts := strings.SplitN(unmark(pointer), "\n", 3)
	if len(parts) != 3 {
		return accessRecords{}, nil, fmt.Errorf("corrupt token pointer")
	}
	r := accessRecords{org: parts[0], uid: parts[1], tid: parts[2]}
	// The token's record, mirrored, lives as long as its pointer: until
	// its expiry, plus the grace, as the caller's clock counts.
	base := millis(q.LiveAt) - s.grace.Milliseconds()
	v, err := s.run(ctx, credentialScript, r.org, r.uid, r.tid, q.Username, tokensArg(q), base, single(!known)).Slice()
	if err != nil {
		return accessRecords{}, nil, err
	}
	r.token, r.user, r.inst, r.folded = str(v[0]), str(v[1]), str(v[2]), str(v[3])
	r.setTarget(v[4], v[5], v[6])
	if known {
		return r, nil, nil
	}
	fresh := s.newLocation(pointer, r.org, r.uid, r.folded, r.tid)
	return r, &fresh, nil
}

// tokensArg is the scripts' argument that asks for the target's tokens.
func tokensArg(q storage.AccessQuery) string {
	return single(q.Username != "" && q.Tokens)
}

// setTarget keeps the target's parts of a script's answer: its user and
// instance records (false when it is the caller or there is none) and its
// token records (false unless asked for).
func (r *accessRecords) setTarget(user, inst, recs any) {
	r.targetUser, r.targetFound = user.(string)
	r.targetInst = str(inst)
	r.recs, r.hasRecs = recs.(string)
}

// access decodes the records read for q. The credential is ErrNotFound
// when its token, as read, does not have q's digest or the user's name
// now belongs to a user created after the token's.
func (r accessRecords) access(q storage.AccessQuery) (storage.Access, error) {
	u, err := userFrom(r.org, r.folded, r.user, r.inst)
	if err != nil {
		return storage.Access{}, err
	}
	if u.ID != r.uid {
		return storage.Access{}, storage.ErrNotFound
	}
	a := storage.Access{Credential: storage.Credential{User: u}}
	switch {
	case r.targetFound:
		if a.Target, err = userFrom(r.org, q.Username, r.targetUser, r.targetInst); err != nil {
			return storage.Access{}, err
		}
		a.TargetFound = true
	case q.Username != "" && q.Username == r.folded:
		a.Target, a.TargetFound = u, true
		a.Target.Privileges = slices.Clone(u.Privileges)
	}
	// The target's token records, live or not, follow q.Into in all.
	all := q.Into
	if r.hasRecs && a.TargetFound {
		if all, err = decodeTokens(q.Into, r.org, a.Target.ID, r.recs); err != nil {
			return storage.Access{}, err
		}
	}
	recs := all[len(q.Into):]
	if r.token != "" {
		if a.Credential.Token, err = tokenFrom(r.org, r.uid, r.token); err != nil {
			return storage.Access{}, err
		}
	} else if i := slices.IndexFunc(recs, func(t storage.Token) bool { return t.ID == r.tid }); i >= 0 {
		a.Credential.Token = recs[i]
	}
	if a.Credential.Token.Digest != q.Digest {
		return storage.Access{}, storage.ErrNotFound
	}
	if a.TargetFound && q.Tokens {
		a.Tokens = liveTokens(all, len(q.Into), q.LiveAt)
	}
	return a, nil
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	recs, err := s.c.Get(ctx, s.orgBase(org)+"toks:"+userID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, failed("list tokens", err)
	}
	out, err := decodeTokens(nil, org, userID, recs)
	if err != nil {
		return nil, err
	}
	return liveTokens(out, 0, liveAt), nil
}

// decodeTokens appends to dst the records of recs, the toks:<uid> value
// of the user userID of org (its token records joined by newlines; "" for
// none), ordered by creation, then id.
func decodeTokens(dst []storage.Token, org, userID, recs string) ([]storage.Token, error) {
	if recs == "" {
		return slices.Grow(dst, 0), nil
	}
	out := slices.Grow(dst, strings.Count(recs, "\n")+1)
	for rec := range strings.SplitSeq(recs, "\n") {
		t, err := tokenFrom(org, userID, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	// Records are appended as tokens are created, so they are usually in
	// order already; sorting would still move each large record.
	if added := out[len(dst):]; !slices.IsSortedFunc(added, byCreation) {
		slices.SortFunc(added, byCreation)
	}
	return out, nil
}

// liveTokens keeps, of the tokens of ts from index from on, those live at
// liveAt, in their order, and returns ts so cut.
func liveTokens(ts []storage.Token, from int, liveAt time.Time) []storage.Token {
	out := ts[:from]
	for _, t := range ts[from:] {
		if t.LiveAt(liveAt) {
			out = append(out, t)
		}
	}
	return out
}

// byCreation orders tokens by creation, then id.
func byCreation(a, b storage.Token) int {
	if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// DeleteToken implements storage.Store. The token leaves its user's records
// first, which ends its use at once; on a single server the script turns
// its digest's pointer into its tombstone; on a Cluster
// that, and removing its id's pointer, are done afterwards. A stop in
// between leaves a pointer to no token: unknown rather than revoked. On
// a Cluster, deleting a token its user does not hold at all (ErrNotFound;
// an expired one it holds keeps its pointers) removes such pointers of
// its id: those a deletion stopped before it removed them, and those a
// creation stopped between its reservation and its script (CreateToken)
// left, which would keep the token's value from being seeded again for
// as long as it lives, for ever without expiry.
func (s *Store) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	keep := millis(r.KeepUntil) - millis(r.At) // the tombstone's life without expiry
	v, err := s.run(ctx, deleteTokenScript, org, withAudit(a, userID, id, millis(r.At), single(s.single), s.prefix,
		org, max(keep, 0), s.grace.Milliseconds(), max(r.MaxPerOrg, 0))...).Slice()
	if err != nil {
		return failed("delete token", err)
	}
	if err := status("delete token", v[0], nil); err != nil || s.single {
		if errors.Is(err, storage.ErrNotFound) && !s.single && len(v) > 1 && str(v[1]) == "absent" {
			s.dropPointers(ctx, org, userID, id)
		}
		return err
	}
	if err := s.stepped("delete token: pointers"); err != nil {
		return nil
	}
	expires, _ := v[2].(int64)
	until := r.Until(storage.Token{ExpiresAt: fromMillis(expires)})
	key := s.prefix + "tok:" + str(v[1])
	ctx, cancelFinish := s.finishing(ctx)
	defer cancelFinish()
	var life time.Duration
	if l := until.Sub(r.At); l > 0 {
		life = l + s.grace
	}
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		// The pointer is this token's, unless a creation of the same value
		// took it over (see CreateToken): that one is left alone.
		tombstoneScript.Eval(ctx, p, []string{key}, org+"\n"+userID+"\n"+id,
			tombstone(org, userID, id, r.At, until), life.Milliseconds())
		p.Del(ctx, s.prefix+"tid:"+id)
		// The tombstones the org's bound dropped, each in its digest's
		// slot; one that is another org's by now stays.
		gone, _ := v[3].([]any)
		for _, d := range gone {
			dropTombstoneScript.Eval(ctx, p, []string{s.prefix + "tok:" + str(d)}, org)
		}
		return nil
	})
	return nil
}
