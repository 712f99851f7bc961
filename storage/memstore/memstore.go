// Package memstore is the in-memory storage adapter: the default store of
// the orgadmin server and the one test suites run on.
//
// It is safe for concurrent use. Lookups by username, id, token digest and
// session digest are map lookups; listings walk sorted indexes, so a page
// costs the same however deep it starts.
//
// Users and tokens are held for the garbage collector's sake: a store of a
// million users is otherwise millions of small objects that every
// collection marks again, and what a request allocates then costs in
// proportion to the store's size. So records are kept by value in tables
// of a few thousand each, each record's strings packed into one, and the
// maps that find them are keyed by digests and hashes and hold table
// slots: maps and tables the collector does not look into. Records are
// converted to storage records as they are read.
package memstore

import (
	"container/heap"
	"context"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// MaxFeedback is how many feedback submissions a Store keeps; older ones
// are dropped, so an unauthenticated endpoint cannot grow memory without
// bound.
const MaxFeedback = 100_000

// Store is an in-memory storage.Store. The zero value is not usable; call
// New.
type Store struct {
	mu      sync.RWMutex
	seed    maphash.Seed // of every strIndex
	orgs    map[string]*org
	orgList []*org // by number, as users name their org

	users    table[userRec]
	tokens   table[tokenRec]
	digests  map[storage.Digest]ref // tokens by digest
	tokenIDs strIndex               // tokens by ID
	// revoked are the tombstones of revoked tokens, by digest, and
	// revokedEnds when they end.
	revoked     map[storage.Digest]tombstone
	revokedEnds revokedQueue

	// privileges are the Privileges of the users whose Privileges are not
	// nil, few: a role holds most of what users may do.
	privileges map[ref][]string

	sessions     map[storage.Digest]*storage.EmbedSession
	userSessions map[ref][]*storage.EmbedSession // sessions by user
	feedback     map[string]storage.Feedback
	fbOrder      []string // feedback ids, oldest first

	seeded map[string]map[string]bool // seed marks by org
}

var _ storage.Store = (*Store)(nil)

type org struct {
	rec    storage.Org
	num    uint32    // in Store.orgList
	names  strIndex  // users by folded username
	ids    strIndex  // users by ID
	all    userIndex // every user
	sa     userIndex // service accounts
	humans userIndex // human users
	// ducklings are the Duckling records of the users that have any.
	ducklings map[ref]map[string]storage.Duckling
	dives     map[string]storage.Dive
	// events are the org's audit events, oldest first (by Seq).
	events eventLog
	// eventSeq is the Seq of the org's last event.
	eventSeq int64
	// revokedEnds orders the org's tombstones by their time, as
	// Store.revokedEnds orders all of them: what Revocation.MaxPerOrg
	// drops first.
	revokedEnds revokedQueue
}

// New returns an empty Store.
func New() *Store {
	s := &Store{
		seed:         maphash.MakeSeed(),
		orgs:         make(map[string]*org),
		digests:      make(map[storage.Digest]ref),
		revoked:      make(map[storage.Digest]tombstone),
		privileges:   make(map[ref][]string),
		sessions:     make(map[storage.Digest]*storage.EmbedSession),
		userSessions: make(map[ref][]*storage.EmbedSession),
		feedback:     make(map[string]storage.Feedback),
		seeded:       make(map[string]map[string]bool),
	}
	s.tokenIDs = newStrIndex(s.seed)
	return s
}

// The keys of the strIndex and userIndex maps, read from the records.

func (s *Store) userFolded(r ref) string { return s.users.at(r).str(uFolded) }
func (s *Store) userID(r ref) string     { return s.users.at(r).str(uID) }
func (s *Store) tokenID(r ref) string    { return s.tokens.at(r).str(tID) }

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.orgs[o.ID]; ok {
		return storage.ErrAlreadyExists
	}
	e := &org{
		rec:       o,
		num:       uint32(len(s.orgList)), // #nosec G115 -- orgs are created by operators, a few
		names:     newStrIndex(s.seed),
		ids:       newStrIndex(s.seed),
		all:       userIndex{key: s.userFolded},
		sa:        userIndex{key: s.userFolded},
		humans:    userIndex{key: s.userFolded},
		ducklings: make(map[ref]map[string]storage.Duckling),
		dives:     make(map[string]storage.Dive),
	}
	s.orgs[o.ID] = e
	s.orgList = append(s.orgList, e)
	s.record(a, e)
	return nil
}

// GetOrg implements storage.Store.
func (s *Store) GetOrg(_ context.Context, id string) (storage.Org, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orgs[id]
	if !ok {
		return storage.Org{}, storage.ErrNotFound
	}
	return o.rec, nil
}

// CreateUser implements storage.Store. The org's users are counted under
// the lock, so the limit is exact.
func (s *Store) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orgs[u.Org]
	if !ok {
		return storage.ErrNotFound
	}
	if o.names.find(u.FoldedUsername, s.userFolded) != 0 || o.ids.find(u.ID, s.userID) != 0 {
		return storage.ErrAlreadyExists
	}
	if lim.Max > 0 && o.all.Len() >= lim.Max {
		return storage.ErrLimitExceeded
	}
	r := s.users.add()
	e := s.users.at(r)
	e.org = o.num
	e.set(u, u.Username, u.FoldedUsername)
	s.setPrivileges(r, u.Privileges)
	o.names.add(u.FoldedUsername, r)
	o.ids.add(u.ID, r)
	o.all.Insert(r)
	o.kindIndex(u.IsServiceAccount).Insert(r)
	s.record(a, o)
	return nil
}

func (o *org) kindIndex(serviceAccount bool) *userIndex {
	if serviceAccount {
		return &o.sa
	}
	return &o.humans
}

// lookup returns the user of org folded, or 0, and the org (nil when it
// does not exist).
func (s *Store) lookup(orgID, folded string) (*org, ref) {
	o, ok := s.orgs[orgID]
	if !ok {
		return nil, 0
	}
	return o, o.names.find(folded, s.userFolded)
}

// lookupID returns the user of org with the given ID, or 0, and the org
// (nil when it does not exist).
func (s *Store) lookupID(orgID, id string) (*org, ref) {
	o, ok := s.orgs[orgID]
	if !ok {
		return nil, 0
	}
	return o, o.ids.find(id, s.userID)
}

// user returns the storage.User of the user r, sharing no memory that can
// change with the store.
func (s *Store) user(r ref) storage.User {
	var u storage.User
	s.userInto(&u, r)
	return u
}

// userInto sets *u to the storage.User of the user r, as user returns it,
// in place: a page's records are written where the page holds them.
func (s *Store) userInto(u *storage.User, r ref) {
	e := s.users.at(r)
	e.recordInto(u, s.orgList[e.org].rec.ID)
	if p, ok := s.privileges[r]; ok {
		u.Privileges = slices.Clone(p)
	}
}

// setPrivileges keeps a copy of ps as the privileges of the user r.
func (s *Store) setPrivileges(r ref, ps []string) {
	if ps == nil {
		delete(s.privileges, r)
	} else {
		s.privileges[r] = slices.Clone(ps)
	}
}

// GetUser implements storage.Store.
func (s *Store) GetUser(_ context.Context, orgID, folded string) (storage.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, r := s.lookup(orgID, folded)
	if r == 0 {
		return storage.User{}, storage.ErrNotFound
	}
	return s.user(r), nil
}

// SetPrivileges implements storage.Store.
func (s *Store) SetPrivileges(ctx context.Context, orgID, userID string, from, to []string, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, r := s.lookupID(orgID, userID)
	if r == 0 {
		return storage.ErrNotFound
	}
	if !slices.Equal(s.privileges[r], from) { // nil and empty alike
		return storage.ErrConflict
	}
	if len(to) == 0 {
		to = nil
	}
	s.setPrivileges(r, to)
	s.record(a, o)
	return nil
}

// SetInstances implements storage.Store.
func (s *Store) SetInstances(ctx context.Context, orgID, userID string, c storage.InstanceConfig, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, r := s.lookupID(orgID, userID)
	if r == 0 {
		return storage.ErrNotFound
	}
	e := s.users.at(r)
	u := e.record(o.rec.ID) // less its privileges, which set leaves alone
	u.Instances = c
	e.set(u, u.Username, u.FoldedUsername)
	s.record(a, o)
	return nil
}

// DeleteUser implements storage.Store.
func (s *Store) DeleteUser(ctx context.Context, orgID, userID string, a *storage.Audit) (storage.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, r := s.lookupID(orgID, userID)
	if r == 0 {
		return storage.User{}, storage.ErrNotFound
	}
	u := s.user(r)
	e := s.users.at(r)
	for t := e.tokens; t != 0; {
		next := s.tokens.at(t).next
		s.dropToken(t)
		t = next
	}
	for _, se := range s.userSessions[r] {
		delete(s.sessions, se.Digest)
	}
	delete(s.userSessions, r)
	delete(o.ducklings, r)
	delete(s.privileges, r)
	// The indexes read keys from the record: forget it there first.
	o.names.remove(u.FoldedUsername, s.userFolded)
	o.ids.remove(u.ID, s.userID)
	o.all.Delete(u.FoldedUsername)
	o.kindIndex(u.IsServiceAccount).Delete(u.FoldedUsername)
	s.users.remove(r)
	s.record(a, o)
	return u, nil
}

// ListUsers implements storage.Store.
func (s *Store) ListUsers(_ context.Context, orgID string, q storage.UserQuery) (storage.UserPage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orgs[orgID]
	if !ok {
		return storage.UserPage{Users: slices.Grow(q.Into, 0)}, nil
	}
	idx := &o.all
	if q.ServiceAccount != nil {
		idx = o.kindIndex(*q.ServiceAccount)
	}
	var start position
	if q.After != "" {
		start = idx.After(q.After)
	} else {
		start = idx.At(q.Offset)
	}
	page := storage.UserPage{Users: slices.Grow(q.Into, min(q.Limit, idx.Len())), Total: idx.Len()}
	idx.Scan(start, func(r ref) bool {
		if len(page.Users)-len(q.Into) == q.Limit {
			page.More = true
			return false
		}
		page.Users = append(page.Users, storage.User{})
		s.userInto(&page.Users[len(page.Users)-1], r)
		return true
	})
	return page, nil
}

// CreateToken implements storage.Store.
func (s *Store) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ur := s.lookupID(t.Org, t.UserID)
	if ur == 0 {
		return storage.ErrNotFound
	}
	u := s.users.at(ur)
	if tr, ok := s.digests[t.Digest]; ok {
		// A token of the user's that is no longer live frees its value
		// (a value seeded again once it expired), as the other stores'
		// creations, which drop such tokens first, do.
		if old := s.tokens.at(tr); old.user != ur || old.liveAt(lim.LiveAt) {
			return storage.ErrAlreadyExists
		}
		s.dropExpired(u, lim.LiveAt)
	}
	if s.tokenIDs.find(t.ID, s.tokenID) != 0 {
		return storage.ErrAlreadyExists
	}
	s.sweepRevoked(lim.LiveAt)
	// Drop the user's tokens that are no longer live when they might count
	// against the limit (or, without one, now and then), then count.
	if (lim.Max > 0 && u.ntokens >= lim.Max) || u.ntokens%1024 == 1023 {
		s.dropExpired(u, lim.LiveAt)
	}
	if lim.Max > 0 && u.ntokens >= lim.Max {
		return storage.ErrLimitExceeded
	}
	tr := s.tokens.add()
	*s.tokens.at(tr) = newTokenRec(t, ur)
	s.link(u, tr)
	s.digests[t.Digest] = tr
	delete(s.revoked, t.Digest)
	s.tokenIDs.add(t.ID, tr)
	s.record(a, o)
	return nil
}

// link puts the token tr in its place in u's list, ordered by CreatedAt,
// then ID: mostly last, as tokens are created in order.
func (s *Store) link(u *userRec, tr ref) {
	u.ntokens++
	t := s.tokens.at(tr)
	switch {
	case u.tokens == 0:
		u.tokens, u.lastToken = tr, tr
	case !t.less(s.tokens.at(u.lastToken)):
		s.tokens.at(u.lastToken).next = tr
		u.lastToken = tr
	case t.less(s.tokens.at(u.tokens)):
		t.next, u.tokens = u.tokens, tr
	default:
		prev := u.tokens
		for next := s.tokens.at(prev).next; !t.less(s.tokens.at(next)); next = s.tokens.at(prev).next {
			prev = next // next is not 0: t sorts before the last token
		}
		p := s.tokens.at(prev)
		t.next, p.next = p.next, tr
	}
}

// dropExpired drops the tokens of u that are not live at the instant at.
func (s *Store) dropExpired(u *userRec, at time.Time) {
	var head, tail ref
	n := 0
	for tr := u.tokens; tr != 0; {
		t := s.tokens.at(tr)
		next := t.next
		if t.liveAt(at) {
			t.next = 0
			if tail == 0 {
				head = tr
			} else {
				s.tokens.at(tail).next = tr
			}
			tail = tr
			n++
		} else {
			s.dropToken(tr)
		}
		tr = next
	}
	u.tokens, u.lastToken, u.ntokens = head, tail, n
}

// dropToken forgets the token tr, which its user's list no longer holds
// or is being dropped with it.
func (s *Store) dropToken(tr ref) {
	t := s.tokens.at(tr)
	delete(s.digests, t.digest)
	s.tokenIDs.remove(t.str(tID), s.tokenID)
	s.tokens.remove(tr)
}

// token returns the storage.Token of tr.
func (s *Store) token(tr ref) storage.Token {
	t := s.tokens.at(tr)
	u := s.users.at(t.user)
	return t.record(s.orgList[u.org].rec.ID, u.str(uID))
}

// ReadAccess implements storage.Store: the credential and the target,
// under one read lock.
func (s *Store) ReadAccess(_ context.Context, q storage.AccessQuery) (a storage.Access, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	tr, ok := s.digests[q.Digest]
	if !ok {
		if ts, ok := s.revoked[q.Digest]; ok && q.LiveAt.Before(ts.until) {
			a.Credential.Token = storage.Token{Org: ts.org, UserID: ts.userID, ID: ts.tokenID}
			return a, storage.ErrRevoked
		}
		return storage.Access{}, storage.ErrNotFound
	}
	cr := s.tokens.at(tr).user
	a.Credential.Token = s.token(tr)
	a.Credential.User = s.user(cr)
	if q.Username == "" {
		return a, nil
	}
	ur := cr
	if q.Username == a.Credential.User.FoldedUsername {
		a.Target = a.Credential.User
		a.Target.Privileges = slices.Clone(a.Target.Privileges) // not the credential's
	} else {
		if ur = s.orgList[s.users.at(cr).org].names.find(q.Username, s.userFolded); ur == 0 {
			return a, nil
		}
		a.Target = s.user(ur)
	}
	a.TargetFound = true
	if q.Tokens {
		a.Tokens = s.liveTokens(q.Into, s.users.at(ur), q.LiveAt)
	}
	return a, nil
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(_ context.Context, orgID, userID string, liveAt time.Time) ([]storage.Token, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ur := s.lookupID(orgID, userID)
	if ur == 0 {
		return []storage.Token{}, nil
	}
	return s.liveTokens(nil, s.users.at(ur), liveAt), nil
}

// liveTokens appends to dst the records of u's tokens live at liveAt, in
// creation order.
func (s *Store) liveTokens(dst []storage.Token, u *userRec, liveAt time.Time) []storage.Token {
	org, uid := s.orgList[u.org].rec.ID, u.str(uID)
	out := slices.Grow(dst, u.ntokens)
	for tr := u.tokens; tr != 0; {
		t := s.tokens.at(tr)
		if t.liveAt(liveAt) {
			out = append(out, storage.Token{})
			t.recordInto(&out[len(out)-1], org, uid)
		}
		tr = t.next
	}
	return out
}

// DeleteToken implements storage.Store.
func (s *Store) DeleteToken(ctx context.Context, orgID, userID, id string, rev storage.Revocation, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ur := s.lookupID(orgID, userID)
	if ur == 0 {
		return storage.ErrNotFound
	}
	tr := s.tokenIDs.find(id, s.tokenID)
	if tr == 0 || s.tokens.at(tr).user != ur || !s.tokens.at(tr).liveAt(rev.At) {
		return storage.ErrNotFound
	}
	s.sweepRevoked(rev.At)
	t := s.token(tr)
	if until := rev.Until(t); until.After(rev.At) {
		s.revoke(o, t.Digest, tombstone{org: orgID, userID: userID, tokenID: id, at: rev.At, until: until}, rev.MaxPerOrg)
	}
	u := s.users.at(ur)
	next := s.tokens.at(tr).next
	var prev ref
	if u.tokens == tr {
		u.tokens = next
	} else {
		prev = u.tokens
		for s.tokens.at(prev).next != tr {
			prev = s.tokens.at(prev).next
		}
		s.tokens.at(prev).next = next
	}
	if u.lastToken == tr {
		u.lastToken = prev
	}
	u.ntokens--
	s.dropToken(tr)
	s.record(a, o)
	return nil
}

// tombstone is what the Store keeps of a revoked token: never its value.
type tombstone struct {
	org, userID, tokenID string
	at, until            time.Time
}

// sweepBatch bounds the tombstones a write drops.
const sweepBatch = 8

// revokedQueue orders the tombstones by their time: a min-heap of their
// ends, which may hold ends of tombstones gone since (a digest created
// again), dropped as they come up.
type revokedQueue []revokedEnd

// revokedEnd is when the tombstone of digest ends.
type revokedEnd struct {
	until  time.Time
	digest storage.Digest
}

func (q revokedQueue) Len() int           { return len(q) }
func (q revokedQueue) Less(i, j int) bool { return q[i].until.Before(q[j].until) }
func (q revokedQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *revokedQueue) Push(x any)        { *q = append(*q, x.(revokedEnd)) }
func (q *revokedQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// revoke keeps the tombstone ts of the digest d, of the org o, which
// keeps at most maxPerOrg (0: no bound) by dropping those that end first.
// The ends of the org's tombstones gone since (past their time, or
// removed by a creation) are dropped from its queue as they come up, and
// count towards the bound until then.
func (s *Store) revoke(o *org, d storage.Digest, ts tombstone, maxPerOrg int) {
	for len(o.revokedEnds) > 0 && !ts.at.Before(o.revokedEnds[0].until) {
		heap.Pop(&o.revokedEnds)
	}
	s.revoked[d] = ts
	e := revokedEnd{until: ts.until, digest: d}
	heap.Push(&s.revokedEnds, e)
	heap.Push(&o.revokedEnds, e)
	for maxPerOrg > 0 && len(o.revokedEnds) > maxPerOrg {
		e := heap.Pop(&o.revokedEnds).(revokedEnd)
		if old, ok := s.revoked[e.digest]; ok && old.org == ts.org && old.until.Equal(e.until) {
			delete(s.revoked, e.digest)
		}
	}
}

// sweepRevoked drops up to sweepBatch tombstones past their time at at,
// the oldest first: each write that may add one drops several, so they
// never pile up.
func (s *Store) sweepRevoked(at time.Time) {
	for range sweepBatch {
		if len(s.revokedEnds) == 0 || at.Before(s.revokedEnds[0].until) {
			return
		}
		e := heap.Pop(&s.revokedEnds).(revokedEnd)
		if ts, ok := s.revoked[e.digest]; ok && !at.Before(ts.until) {
			delete(s.revoked, e.digest)
		}
	}
}

// SetDuckling implements storage.Store.
func (s *Store) SetDuckling(_ context.Context, d storage.Duckling) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ur := s.lookupID(d.Org, d.UserID)
	if ur == 0 {
		return storage.ErrNotFound
	}
	ds := o.ducklings[ur]
	if ds == nil {
		ds = make(map[string]storage.Duckling)
		o.ducklings[ur] = ds
	}
	ds[d.ID] = d
	return nil
}

// ListActivity implements storage.Store.
func (s *Store) ListActivity(_ context.Context, orgID string) ([]storage.Activity, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orgs[orgID]
	if !ok {
		return []storage.Activity{}, nil
	}
	out := make([]storage.Activity, 0, len(o.ducklings))
	for ur, ds := range o.ducklings {
		a := storage.Activity{User: s.user(ur), Ducklings: make([]storage.Duckling, 0, len(ds))}
		for _, d := range ds {
			a.Ducklings = append(a.Ducklings, d)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b storage.Activity) int {
		return strings.Compare(a.User.FoldedUsername, b.User.FoldedUsername)
	})
	return out, nil
}

// PutDive implements storage.Store.
func (s *Store) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return s.storeDive(d, a, true)
}

// CreateDive implements storage.Store.
func (s *Store) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return s.storeDive(d, a, false)
}

// storeDive stores d, replacing a Dive with its id only when replace.
func (s *Store) storeDive(d storage.Dive, a *storage.Audit, replace bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orgs[d.Org]
	if !ok {
		return storage.ErrNotFound
	}
	if _, held := o.dives[d.ID]; held && !replace {
		return storage.ErrAlreadyExists
	}
	d.RequiredResources = slices.Clone(d.RequiredResources)
	o.dives[d.ID] = d
	s.record(a, o)
	return nil
}

// GetDive implements storage.Store.
func (s *Store) GetDive(_ context.Context, orgID, id string) (storage.Dive, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orgs[orgID]
	if !ok {
		return storage.Dive{}, storage.ErrNotFound
	}
	d, ok := o.dives[id]
	if !ok {
		return storage.Dive{}, storage.ErrNotFound
	}
	d.RequiredResources = slices.Clone(d.RequiredResources)
	return d, nil
}

// GetEmbedTarget implements storage.Store.
func (s *Store) GetEmbedTarget(_ context.Context, orgID, diveID, folded string) (storage.EmbedTarget, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var t storage.EmbedTarget
	o, ur := s.lookup(orgID, folded)
	if o == nil {
		return t, nil
	}
	if d, ok := o.dives[diveID]; ok {
		t.Dive, t.DiveFound = d, true
		t.Dive.RequiredResources = slices.Clone(d.RequiredResources)
	}
	if ur != 0 {
		t.User, t.UserFound = s.user(ur), true
	}
	return t, nil
}

// CreateEmbedSession implements storage.Store. A user's sessions are
// kept in order of expiry, so that under the lock it drops those not live
// at lim.LiveAt, which lead, and counts the rest against lim.Max in time
// that does not grow with the sessions kept: a creation among thousands
// holds the lock no longer than one among a few.
func (s *Store) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ur := s.lookupID(es.Org, es.UserID)
	if ur == 0 {
		return storage.ErrNotFound
	}
	if _, ok := s.sessions[es.Digest]; ok {
		return storage.ErrAlreadyExists
	}
	mine := s.userSessions[ur]
	dead, _ := slices.BinarySearchFunc(mine, lim.LiveAt, expiresAfter)
	for _, se := range mine[:dead] {
		delete(s.sessions, se.Digest)
	}
	clear(mine[:dead])
	mine = mine[dead:]
	s.userSessions[ur] = mine
	if lim.Max > 0 && len(mine) >= lim.Max {
		return storage.ErrLimitExceeded
	}
	se := new(storage.EmbedSession)
	*se = cloneSession(es)
	// After those that expire with it or before: at the end, unless the
	// lifetime of sessions changed.
	at, _ := slices.BinarySearchFunc(mine, es.ExpiresAt, expiresAfter)
	s.userSessions[ur] = slices.Insert(mine, at, se)
	s.sessions[es.Digest] = se
	s.record(a, o)
	return nil
}

// expiresAfter orders a session among others by expiry against t: the
// sessions that expire at t or before come first (-1), then the others
// (1), so that a binary search for t finds the first that outlives it.
func expiresAfter(se *storage.EmbedSession, t time.Time) int {
	if se.ExpiresAt.After(t) {
		return 1
	}
	return -1
}

// EmbedSessionByDigest implements storage.Store.
func (s *Store) EmbedSessionByDigest(_ context.Context, d storage.Digest) (storage.EmbedSession, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	se, ok := s.sessions[d]
	if !ok {
		return storage.EmbedSession{}, storage.ErrNotFound
	}
	return cloneSession(*se), nil
}

// AddFeedback implements storage.Store.
func (s *Store) AddFeedback(_ context.Context, f storage.Feedback) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.feedback[f.ID]; ok {
		return storage.ErrAlreadyExists
	}
	if len(s.fbOrder) >= MaxFeedback {
		delete(s.feedback, s.fbOrder[0])
		s.fbOrder = s.fbOrder[1:]
	}
	s.feedback[f.ID] = f
	s.fbOrder = append(s.fbOrder, f.ID)
	return nil
}

// MarkSeeded implements storage.Store.
func (s *Store) MarkSeeded(_ context.Context, org string, keys []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.seeded[org]
	if m == nil {
		m = make(map[string]bool, len(keys))
		s.seeded[org] = m
	}
	for _, k := range keys {
		m[k] = true
	}
	return nil
}

// SeedMarks implements storage.Store.
func (s *Store) SeedMarks(_ context.Context, org string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Collect(maps.Keys(s.seeded[org])), nil
}

// Ping implements storage.Store; the memory store always answers.
func (s *Store) Ping(context.Context) error { return nil }

func cloneSession(s storage.EmbedSession) storage.EmbedSession {
	s.Resources = slices.Clone(s.Resources)
	s.InitialState = slices.Clone(s.InitialState)
	return s
}
