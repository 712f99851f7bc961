package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/orgadmin/orgadmin/storage"
)

// On a single server, a token's pointer and records are read by the
// authentication script the first time, and afterwards, when the process
// remembers where they are, by plain reads in one round trip: a script
// costs Redis several times the commands it runs, and passing the token
// records through Lua costs more again. A listing of the caller's own
// tokens is one MGET of the pointer, name:<folded> (the user's record and
// instance configuration) and toks:<uid>; any other authentication one
// MGET of the pointer, name:<folded> and trec:<tid> (the token's own
// record), with name:<target> when the request names another user. Only
// a listing of another user's tokens runs the script, which finds that
// user's id in its record. (A MULTI/EXEC of the same reads from hashes
// costs the server and Redis about twice what one MGET does.) A Cluster
// reads the pointer first, in its own slot, and then, where it remembers
// where the records are and the pointer still says so, the same records
// with one MGET in the org's slot, instead of its credential script.
//
// What is remembered is only where a token's records are (its org, user
// id, the user's folded name and the token id, and the pointer's value
// that says so), which never changes for a digest. Whether the token
// authenticates is read from Redis every time, in the same command as the
// records: a token revoked or a user deleted by another process is
// refused at once.

// maxLocations bounds the locations a Store remembers; past it, it
// forgets them all and starts again.
const maxLocations = 1 << 16

// location is where the records of a token are.
type location struct {
	pointer               string // the pointer's value
	org, uid, folded, tid string
	// The keys of the user's record and instance configuration by name,
	// its token list and the token's record, built once, and the org's
	// key base, before which a target's name goes.
	user, toks, trec, base string
}

// newLocation returns the location a pointer's parts name.
func (s *Store) newLocation(pointer, org, uid, folded, tid string) location {
	b := s.orgBase(org)
	return location{
		pointer: pointer, org: org, uid: uid, folded: folded, tid: tid,
		user: b + "name:" + folded, toks: b + "toks:" + uid, trec: b + "trec:" + tid, base: b,
	}
}

// errMoved says that the script must read a digest afresh: its pointer
// no longer has the value remembered, or a record the plain reads look
// for is missing while the pointer is not (see credentialAt).
var errMoved = errors.New("redisstore: token pointer changed")

// errTombstone says that a token's pointer is its tombstone, which
// credentialAt returns in place of the user.
var errTombstone = errors.New("redisstore: token revoked")

// atLocation is what credentialAt reads: the user's record and instance
// configuration, its token records or its own token's, and the target's
// record (found) and instance configuration.
type atLocation struct {
	user, inst, recs       string
	targetUser, targetInst string
	targetFound            bool
}

// credentialAt reads, in one MGET, the pointer of a token whose records
// are at loc (at key; a Cluster, where the pointer lives in another slot,
// has read it, and passes ""), its user's record and instance
// configuration (name:<f>) and, when list is true, the user's token
// records (toks:<uid>), else its own (trec:<tid>); with target, the folded
// name of another user (never with list), that user's record and
// instance configuration (name:<target>). It returns the parts the
// authentication script returns, ErrNotFound when the pointer is gone,
// errTombstone with the tombstone (as user) when the token was revoked,
// and errMoved when a script must read them: the pointer changed, or a
// record is missing, which is how data written before the records were
// mirrored by name and by token id reads, and how a target that does not
// exist reads (the script tells the two apart, and mirrors what was not).
func (s *Store) credentialAt(ctx context.Context, key string, loc location, list bool, target string) (r atLocation, err error) {
	keys := make([]string, 0, 4)
	if key != "" {
		keys = append(keys, key)
	}
	keys = append(keys, loc.user)
	if list {
		keys = append(keys, loc.toks)
	} else {
		keys = append(keys, loc.trec)
	}
	if target != "" {
		keys = append(keys, loc.base+"name:"+target)
	}
	var vs []any
	for wait := firstMoveWait; ; {
		if vs, err = s.c.MGet(ctx, keys...).Result(); !again(ctx, err, &wait) {
			break
		}
	}
	if err != nil {
		return atLocation{}, err
	}
	pointer := loc.pointer
	if key != "" {
		pointer, _ = vs[0].(string)
		vs = vs[1:]
	}
	both, _ := vs[0].(string)
	r.recs, _ = vs[1].(string)
	var targetBoth string
	if target != "" {
		targetBoth, _ = vs[2].(string)
	}
	switch {
	case pointer == "":
		return atLocation{}, storage.ErrNotFound
	case isTombstone(pointer):
		return atLocation{user: pointer}, errTombstone
	case pointer != loc.pointer, !list && r.recs == "", target != "" && targetBoth == "":
		return atLocation{}, errMoved
	}
	// The pointer is there, so the user is: a user's deletion removes its
	// tokens' pointers in the same script (on a Cluster, after the
	// records: then name:<f> is missing).
	var ok bool
	if r.user, r.inst, ok = strings.Cut(both, "\n"); !ok {
		return atLocation{}, errMoved
	}
	if target != "" {
		if r.targetUser, r.targetInst, ok = strings.Cut(targetBoth, "\n"); !ok {
			return atLocation{}, errMoved
		}
		r.targetFound = true
	}
	return r, nil
}
