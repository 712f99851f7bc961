package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// On a single server, a token's pointer and records are read by the
// authentication script the first time, and afterwards, when the process
// remembers where they are, by plain reads in one round trip: a script
// costs Redis several times the commands it runs, and passing the token
// records through Lua costs more again. A listing of the caller's own
// tokens is one MGET of the pointer, user:<uid> and toks:<uid>; any other
// authentication one MULTI/EXEC of the pointer, user:<uid> and the
// token's own record, with the target's record and instance
// configuration (HGET by its folded name) when the request names another
// user. Only a listing of another user's tokens runs the script, which
// finds that user's id in its record.
//
// What is remembered is only where a token's records are (its org, user
// id, the user's folded name and the token id, and the pointer's value
// that says so), which never changes for a digest. Whether the token
// authenticates is read from Redis every time, in the same command or
// transaction as the records: a token revoked or a user deleted by another
// process is refused at once.

// maxLocations bounds the locations a Store remembers; past it, it
// forgets them all and starts again.
const maxLocations = 1 << 16

// location is where the records of a token are.
type location struct {
	pointer               string // the pointer's value
	org, uid, folded, tid string
	// The keys of the user's record and instance configuration, its token
	// records and their list, and the org's hashes of users and instance
	// configurations, built once.
	user, tok, toks, users, inst string
}

// newLocation returns the location a pointer's parts name.
func (s *Store) newLocation(pointer, org, uid, folded, tid string) location {
	b := s.orgBase(org)
	return location{
		pointer: pointer, org: org, uid: uid, folded: folded, tid: tid,
		user: b + "user:" + uid, tok: b + "tok:" + uid, toks: b + "toks:" + uid,
		users: b + "users", inst: b + "inst",
	}
}

// errMoved says that the script must read a digest afresh: its pointer
// no longer has the value remembered, or user:<uid> is missing while the
// pointer is not (data written before user:<uid> existed).
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

// credentialAt reads, at one moment, the pointer of a token whose records
// are at loc, its user's record and instance configuration and, when list
// is true, the user's token records, else its own; with target, the
// folded name of another user (never with list), that user's record and
// instance configuration. It returns the parts the authentication script
// returns, ErrNotFound when the pointer or the token is gone,
// errTombstone with the tombstone (as user) when the token was revoked,
// and errMoved when the script must read them.
func (s *Store) credentialAt(ctx context.Context, key string, loc location, list bool, target string) (r atLocation, err error) {
	var pointer, both string
	if list {
		// One command reads the three keys at one moment.
		vs, err := s.c.MGet(ctx, key, loc.user, loc.toks).Result()
		if err != nil {
			return atLocation{}, err
		}
		pointer, _ = vs[0].(string)
		both, _ = vs[1].(string)
		r.recs, _ = vs[2].(string)
	} else {
		var p, u, t, tu, ti *redis.StringCmd
		_, err = s.c.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			p = tx.Get(ctx, key)
			u = tx.Get(ctx, loc.user)
			t = tx.HGet(ctx, loc.tok, loc.tid)
			if target != "" {
				tu = tx.HGet(ctx, loc.users, target)
				ti = tx.HGet(ctx, loc.inst, target)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return atLocation{}, err
		}
		for _, c := range []struct {
			cmd *redis.StringCmd
			v   *string
		}{{p, &pointer}, {u, &both}, {t, &r.recs}, {tu, &r.targetUser}, {ti, &r.targetInst}} {
			if c.cmd == nil {
				continue
			}
			if *c.v, err = orNil(c.cmd); err != nil {
				return atLocation{}, err
			}
		}
		r.targetFound = r.targetUser != ""
	}
	switch {
	case pointer == "":
		return atLocation{}, storage.ErrNotFound
	case isTombstone(pointer):
		return atLocation{user: pointer}, errTombstone
	case pointer != loc.pointer:
		return atLocation{}, errMoved
	case !list && r.recs == "":
		return atLocation{}, storage.ErrNotFound
	}
	// The pointer is there, so the user is: a user's deletion removes its
	// tokens' pointers in the same script.
	var ok bool
	if r.user, r.inst, ok = strings.Cut(both, "\n"); !ok {
		return atLocation{}, errMoved
	}
	return r, nil
}

// orNil returns the value of c, and "" when there is none.
func orNil(c *redis.StringCmd) (string, error) {
	v, err := c.Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}
