package redisstore

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// On a single server, a token's pointer and records are read by the
// authentication script the first time, and afterwards, when the process
// remembers where they are, by one MULTI/EXEC of plain reads: a script
// costs Redis several times the commands it runs, and passing the token
// records through Lua costs more again.
//
// What is remembered is only where a token's records are (its org, user
// id, the user's folded name and the token id, and the pointer's value
// that says so), which never changes for a digest. Whether the token
// authenticates is read from Redis every time, in the same transaction
// as the records: a token revoked or a user deleted by another process
// is refused at once.

// maxLocations bounds the locations a Store remembers; past it, it
// forgets them all and starts again.
const maxLocations = 1 << 16

// location is where the records of a token are.
type location struct {
	pointer               string // the pointer's value
	org, uid, folded, tid string
	// The keys of the org's users, instance configurations, the user's
	// token records and their list, built once.
	users, inst, tok, toks string
}

// newLocation returns the location a pointer's parts name.
func (s *Store) newLocation(pointer, org, uid, folded, tid string) location {
	b := s.orgBase(org)
	return location{
		pointer: pointer, org: org, uid: uid, folded: folded, tid: tid,
		users: b + "users", inst: b + "inst", tok: b + "tok:" + uid, toks: b + "toks:" + uid,
	}
}

// locations is what a Store remembers of where tokens are.
type locations struct {
	mu  sync.RWMutex
	m   map[storage.Digest]location
	max int
}

func (l *locations) get(d storage.Digest) (location, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	loc, ok := l.m[d]
	return loc, ok
}

func (l *locations) put(d storage.Digest, loc location) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[d]; !ok && len(l.m) >= l.max {
		l.m = nil
	}
	if l.m == nil {
		l.m = make(map[storage.Digest]location)
	}
	l.m[d] = loc
}

func (l *locations) forget(d storage.Digest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, d)
}

// errMoved says that a digest's pointer no longer has the value
// remembered: the script reads it afresh.
var errMoved = errors.New("redisstore: token pointer changed")

// credentialAt reads, in one transaction, the pointer of a token whose
// records are at loc, its user's records and, when list is true, the
// user's token records, else its own. It returns the parts the
// authentication script returns, ErrNotFound when the pointer or the user
// is gone, and errMoved when the pointer changed.
func (s *Store) credentialAt(ctx context.Context, key string, loc location, list bool) (user, inst, recs string, err error) {
	var pointer, u, i, r *redis.StringCmd
	_, err = s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		pointer = p.Get(ctx, key)
		u = p.HGet(ctx, loc.users, loc.folded)
		i = p.HGet(ctx, loc.inst, loc.folded)
		if list {
			r = p.Get(ctx, loc.toks)
		} else {
			r = p.HGet(ctx, loc.tok, loc.tid)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", "", "", err
	}
	v, err := pointer.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", "", "", storage.ErrNotFound
	case err != nil:
		return "", "", "", err
	case v != loc.pointer:
		return "", "", "", errMoved
	}
	if user, err = orNil(u); err != nil {
		return "", "", "", err
	}
	if user == "" {
		return "", "", "", storage.ErrNotFound
	}
	if inst, err = orNil(i); err != nil {
		return "", "", "", err
	}
	if recs, err = orNil(r); err != nil {
		return "", "", "", err
	}
	if !list && recs == "" {
		return "", "", "", storage.ErrNotFound
	}
	return user, inst, recs, nil
}

// orNil returns the value of c, and "" when there is none.
func orNil(c *redis.StringCmd) (string, error) {
	v, err := c.Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}
