// Package memstore is the in-memory storage adapter: the default store of
// the orgadmin server and the one test suites run on.
//
// It is safe for concurrent use. Lookups by username, token digest and
// session digest are map lookups; listings walk sorted indexes, so a page
// costs the same however deep it starts. Users and tokens are held in
// compact records (an org of a million users, each with a token, takes
// about 0.7 GiB), converted to storage records as they are read.
package memstore

import (
	"context"
	"slices"
	"sort"
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
	mu       sync.RWMutex
	orgs     map[string]*org
	tokens   map[storage.Digest]*tokenEntry
	tokenIDs map[string]*tokenEntry
	sessions map[storage.Digest]*sessionEntry
	feedback map[string]storage.Feedback
	fbOrder  []string // feedback ids, oldest first

	// instances is the instance configuration stored last, which the next
	// user with an equal one shares (most users keep the default).
	instances *storage.InstanceConfig
	// versions is the last storage.UserTokens.Version given out.
	versions uint64
}

var (
	_ storage.Store                  = (*Store)(nil)
	_ storage.CredentialTokensReader = (*Store)(nil)
	_ storage.UserVisitor            = (*Store)(nil)
)

type org struct {
	rec    storage.Org
	users  map[string]*user // by folded username
	byID   map[string]*user
	all    userIndex        // every user
	sa     userIndex        // service accounts
	humans userIndex        // human users
	active map[string]*user // users with Duckling records, by ID
	dives  map[string]storage.Dive
}

// user is a stored user: a storage.User less what its org and the
// neighbouring users already hold. What is pointed to (details,
// instances) is never changed in place, only replaced, so it may be shared.
type user struct {
	org            *org
	id             string
	username       string
	folded         string
	role           string
	createdAt      time.Time
	serviceAccount bool
	details        *userDetails            // nil when every field is empty
	instances      *storage.InstanceConfig // shared by users with equal ones

	tokens    []*tokenEntry // ordered by CreatedAt, then ID
	version   uint64        // of tokens: new at every change (tokensChanged)
	ducklings map[string]storage.Duckling
	sessions  []*sessionEntry
}

// userDetails are the fields of a user that most users leave empty.
type userDetails struct {
	description string
	email       string
	firstName   string
	lastName    string
	privileges  []string
}

// tokenEntry is a stored token: a storage.Token less its Org and UserID,
// which its user holds.
type tokenEntry struct {
	digest      storage.Digest
	id          string
	name        string
	description string
	typ         string
	createdAt   time.Time
	expiresAt   time.Time
	user        *user
}

type sessionEntry struct {
	s    storage.EmbedSession
	user *user
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		orgs:     make(map[string]*org),
		tokens:   make(map[storage.Digest]*tokenEntry),
		tokenIDs: make(map[string]*tokenEntry),
		sessions: make(map[storage.Digest]*sessionEntry),
		feedback: make(map[string]storage.Feedback),
	}
}

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(_ context.Context, o storage.Org) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.orgs[o.ID]; ok {
		return storage.ErrAlreadyExists
	}
	s.orgs[o.ID] = &org{
		rec:    o,
		users:  make(map[string]*user),
		byID:   make(map[string]*user),
		active: make(map[string]*user),
		dives:  make(map[string]storage.Dive),
	}
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

// CreateUser implements storage.Store.
func (s *Store) CreateUser(_ context.Context, u storage.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orgs[u.Org]
	if !ok {
		return storage.ErrNotFound
	}
	if _, ok := o.users[u.FoldedUsername]; ok {
		return storage.ErrAlreadyExists
	}
	if _, ok := o.byID[u.ID]; ok {
		return storage.ErrAlreadyExists
	}
	e := &user{org: o, username: u.Username, folded: u.FoldedUsername}
	s.setUser(e, u)
	s.tokensChanged(e)
	o.users[u.FoldedUsername] = e
	o.byID[u.ID] = e
	o.all.Insert(e)
	o.kindIndex(u.IsServiceAccount).Insert(e)
	return nil
}

// setUser stores in e every field of u but its org and names.
func (s *Store) setUser(e *user, u storage.User) {
	e.id = u.ID
	e.role = u.Role
	e.createdAt = u.CreatedAt
	e.serviceAccount = u.IsServiceAccount
	e.details = nil
	if u.Description != "" || u.Email != "" || u.FirstName != "" || u.LastName != "" || u.Privileges != nil {
		e.details = &userDetails{
			description: u.Description,
			email:       u.Email,
			firstName:   u.FirstName,
			lastName:    u.LastName,
			privileges:  slices.Clone(u.Privileges),
		}
	}
	e.instances = s.shareInstances(u.Instances)
}

// shareInstances returns a pointer to c, shared with the users stored
// before when they have an equal configuration.
func (s *Store) shareInstances(c storage.InstanceConfig) *storage.InstanceConfig {
	if s.instances == nil || *s.instances != c {
		s.instances = new(storage.InstanceConfig) // here, so c itself stays on the stack
		*s.instances = c
	}
	return s.instances
}

// record returns the storage.User e holds, sharing no memory with it.
func (e *user) record() storage.User {
	u := storage.User{
		ID:               e.id,
		Org:              e.org.rec.ID,
		Username:         e.username,
		FoldedUsername:   e.folded,
		IsServiceAccount: e.serviceAccount,
		Role:             e.role,
		CreatedAt:        e.createdAt,
		Instances:        *e.instances,
	}
	if d := e.details; d != nil {
		u.Description = d.description
		u.Email = d.email
		u.FirstName = d.firstName
		u.LastName = d.lastName
		u.Privileges = slices.Clone(d.privileges)
	}
	return u
}

func (o *org) kindIndex(serviceAccount bool) *userIndex {
	if serviceAccount {
		return &o.sa
	}
	return &o.humans
}

// lookup returns the user of org folded, or nil.
func (s *Store) lookup(orgID, folded string) *user {
	o, ok := s.orgs[orgID]
	if !ok {
		return nil
	}
	return o.users[folded]
}

// lookupID returns the user of org with the given ID, or nil.
func (s *Store) lookupID(orgID, id string) *user {
	o, ok := s.orgs[orgID]
	if !ok {
		return nil
	}
	return o.byID[id]
}

// GetUser implements storage.Store.
func (s *Store) GetUser(_ context.Context, orgID, folded string) (storage.User, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.lookup(orgID, folded)
	if e == nil {
		return storage.User{}, storage.ErrNotFound
	}
	return e.record(), nil
}

// UpdateUser implements storage.Store.
func (s *Store) UpdateUser(_ context.Context, u storage.User) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookupID(u.Org, u.ID)
	if e == nil {
		return storage.ErrNotFound
	}
	if u.IsServiceAccount != e.serviceAccount {
		e.org.kindIndex(e.serviceAccount).Delete(e.folded)
		e.org.kindIndex(u.IsServiceAccount).Insert(e)
	}
	s.setUser(e, u)
	return nil
}

// SetInstances implements storage.Store.
func (s *Store) SetInstances(_ context.Context, orgID, folded string, c storage.InstanceConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(orgID, folded)
	if e == nil {
		return storage.ErrNotFound
	}
	e.instances = s.shareInstances(c)
	return nil
}

// DeleteUser implements storage.Store.
func (s *Store) DeleteUser(_ context.Context, orgID, folded string) (storage.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orgs[orgID]
	if !ok {
		return storage.User{}, storage.ErrNotFound
	}
	e, ok := o.users[folded]
	if !ok {
		return storage.User{}, storage.ErrNotFound
	}
	for _, t := range e.tokens {
		s.dropToken(t)
	}
	for _, se := range e.sessions {
		delete(s.sessions, se.s.Digest)
	}
	delete(o.users, folded)
	delete(o.byID, e.id)
	delete(o.active, e.id)
	o.all.Delete(folded)
	o.kindIndex(e.serviceAccount).Delete(folded)
	e.tokens, e.sessions, e.ducklings = nil, nil, nil
	return e.record(), nil
}

// ListUsers implements storage.Store.
func (s *Store) ListUsers(ctx context.Context, orgID string, q storage.UserQuery) (storage.UserPage, error) {
	users := []storage.User{}
	page, err := s.VisitUsers(ctx, orgID, q, func(n int, u *storage.User) {
		if len(users) == 0 {
			users = make([]storage.User, 0, n)
		}
		users = append(users, *u)
	})
	page.Users = users
	return page, err
}

// VisitUsers implements storage.UserVisitor.
func (s *Store) VisitUsers(_ context.Context, orgID string, q storage.UserQuery, visit func(n int, u *storage.User)) (storage.UserPage, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orgs[orgID]
	if !ok {
		return storage.UserPage{}, nil
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
	page := storage.UserPage{Total: idx.Len()}
	n, seen := min(q.Limit, idx.Len()), 0
	var u storage.User // one record, made again for every user
	idx.Scan(start, func(e *user) bool {
		if seen == q.Limit {
			page.More = true
			return false
		}
		u = e.record()
		visit(n, &u)
		seen++
		return true
	})
	return page, nil
}

// CreateToken implements storage.Store.
func (s *Store) CreateToken(_ context.Context, t storage.Token, lim storage.TokenLimit) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookupID(t.Org, t.UserID)
	if e == nil {
		return storage.ErrNotFound
	}
	if _, ok := s.tokens[t.Digest]; ok {
		return storage.ErrAlreadyExists
	}
	if _, ok := s.tokenIDs[t.ID]; ok {
		return storage.ErrAlreadyExists
	}
	// Drop the user's tokens that are no longer live when they might count
	// against the limit (or, without one, now and then), then count.
	if (lim.Max > 0 && len(e.tokens) >= lim.Max) || len(e.tokens)%1024 == 1023 {
		kept := e.tokens[:0]
		for _, te := range e.tokens {
			if te.liveAt(lim.LiveAt) {
				kept = append(kept, te)
			} else {
				s.dropToken(te)
			}
		}
		clear(e.tokens[len(kept):])
		e.tokens = kept
		s.tokensChanged(e)
	}
	if lim.Max > 0 && len(e.tokens) >= lim.Max {
		return storage.ErrLimitExceeded
	}
	te := &tokenEntry{
		digest:      t.Digest,
		id:          t.ID,
		name:        t.Name,
		description: t.Description,
		typ:         t.Type,
		createdAt:   t.CreatedAt,
		expiresAt:   t.ExpiresAt,
		user:        e,
	}
	i := sort.Search(len(e.tokens), func(i int) bool { return te.less(e.tokens[i]) })
	e.tokens = slices.Insert(e.tokens, i, te)
	s.tokensChanged(e)
	s.tokens[t.Digest] = te
	s.tokenIDs[t.ID] = te
	return nil
}

// tokensChanged gives e's tokens a Version no user's tokens have had.
// The caller holds the write lock.
func (s *Store) tokensChanged(e *user) {
	s.versions++
	e.version = s.versions
}

// dropToken forgets a token in the store-wide maps.
func (s *Store) dropToken(te *tokenEntry) {
	delete(s.tokens, te.digest)
	delete(s.tokenIDs, te.id)
}

// less orders the tokens of a user: by CreatedAt, then ID.
func (te *tokenEntry) less(other *tokenEntry) bool {
	if c := te.createdAt.Compare(other.createdAt); c != 0 {
		return c < 0
	}
	return te.id < other.id
}

// liveAt reports whether te has not expired at the instant at.
func (te *tokenEntry) liveAt(at time.Time) bool {
	return storage.Token{ExpiresAt: te.expiresAt}.LiveAt(at)
}

// record returns the storage.Token te holds.
func (te *tokenEntry) record() storage.Token {
	return storage.Token{
		ID:          te.id,
		Org:         te.user.org.rec.ID,
		UserID:      te.user.id,
		Digest:      te.digest,
		Name:        te.name,
		Description: te.description,
		Type:        te.typ,
		CreatedAt:   te.createdAt,
		ExpiresAt:   te.expiresAt,
	}
}

// TokenByDigest implements storage.Store.
func (s *Store) TokenByDigest(_ context.Context, d storage.Digest) (storage.Credential, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	te, ok := s.tokens[d]
	if !ok {
		return storage.Credential{}, storage.ErrNotFound
	}
	return storage.Credential{Token: te.record(), User: te.user.record()}, nil
}

// CredentialTokens implements storage.CredentialTokensReader: the
// credential and the listing under one read lock, so the Service serves a
// token listing without resolving the username first. It versions token
// records.
func (s *Store) CredentialTokens(_ context.Context, d storage.Digest, folded string, liveAt time.Time, skip func(version uint64) bool) (storage.Credential, storage.UserTokens, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	te, ok := s.tokens[d]
	if !ok {
		return storage.Credential{}, storage.UserTokens{}, storage.ErrNotFound
	}
	cred := storage.Credential{Token: te.record(), User: te.user.record()}
	e := te.user.org.users[folded]
	if e == nil {
		return cred, storage.UserTokens{}, nil
	}
	ut := storage.UserTokens{Found: true, Version: e.version}
	if skip == nil || !skip(e.version) {
		ut.Tokens = liveTokens(e, liveAt)
	}
	return cred, ut, nil
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(_ context.Context, orgID, userID string, liveAt time.Time) ([]storage.Token, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.lookupID(orgID, userID)
	if e == nil {
		return []storage.Token{}, nil
	}
	return liveTokens(e, liveAt), nil
}

// liveTokens returns the records of e's tokens live at liveAt, in creation
// order.
func liveTokens(e *user, liveAt time.Time) []storage.Token {
	out := make([]storage.Token, 0, len(e.tokens))
	for _, te := range e.tokens {
		if te.liveAt(liveAt) {
			out = append(out, te.record())
		}
	}
	return out
}

// DeleteToken implements storage.Store.
func (s *Store) DeleteToken(_ context.Context, orgID, userID, id string, liveAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookupID(orgID, userID)
	if e == nil {
		return storage.ErrNotFound
	}
	i := slices.IndexFunc(e.tokens, func(te *tokenEntry) bool { return te.id == id })
	if i < 0 || !e.tokens[i].liveAt(liveAt) {
		return storage.ErrNotFound
	}
	s.dropToken(e.tokens[i])
	e.tokens = slices.Delete(e.tokens, i, i+1)
	s.tokensChanged(e)
	return nil
}

// SetDuckling implements storage.Store.
func (s *Store) SetDuckling(_ context.Context, d storage.Duckling) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookupID(d.Org, d.UserID)
	if e == nil {
		return storage.ErrNotFound
	}
	if e.ducklings == nil {
		e.ducklings = make(map[string]storage.Duckling)
	}
	e.ducklings[d.ID] = d
	s.orgs[d.Org].active[d.UserID] = e
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
	out := make([]storage.Activity, 0, len(o.active))
	for _, e := range o.active {
		a := storage.Activity{User: e.record(), Ducklings: make([]storage.Duckling, 0, len(e.ducklings))}
		for _, d := range e.ducklings {
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
func (s *Store) PutDive(_ context.Context, d storage.Dive) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orgs[d.Org]
	if !ok {
		return storage.ErrNotFound
	}
	d.RequiredResources = slices.Clone(d.RequiredResources)
	o.dives[d.ID] = d
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
	o, ok := s.orgs[orgID]
	if !ok {
		return t, nil
	}
	if d, ok := o.dives[diveID]; ok {
		t.Dive, t.DiveFound = d, true
		t.Dive.RequiredResources = slices.Clone(d.RequiredResources)
	}
	if e, ok := o.users[folded]; ok {
		t.User, t.UserFound = e.record(), true
	}
	return t, nil
}

// CreateEmbedSession implements storage.Store.
func (s *Store) CreateEmbedSession(_ context.Context, es storage.EmbedSession) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookupID(es.Org, es.UserID)
	if e == nil {
		return storage.ErrNotFound
	}
	if _, ok := s.sessions[es.Digest]; ok {
		return storage.ErrAlreadyExists
	}
	kept := e.sessions[:0]
	for _, se := range e.sessions {
		if se.s.ExpiresAt.After(es.CreatedAt) {
			kept = append(kept, se)
		} else {
			delete(s.sessions, se.s.Digest)
		}
	}
	clear(e.sessions[len(kept):])
	se := &sessionEntry{s: cloneSession(es), user: e}
	e.sessions = append(kept, se)
	s.sessions[es.Digest] = se
	return nil
}

// EmbedSessionByDigest implements storage.Store.
func (s *Store) EmbedSessionByDigest(_ context.Context, d storage.Digest) (storage.EmbedSession, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	se, ok := s.sessions[d]
	if !ok {
		return storage.EmbedSession{}, storage.ErrNotFound
	}
	return cloneSession(se.s), nil
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

// Ping implements storage.Store; the memory store always answers.
func (s *Store) Ping(context.Context) error { return nil }

func cloneSession(s storage.EmbedSession) storage.EmbedSession {
	s.Resources = slices.Clone(s.Resources)
	s.InitialState = slices.Clone(s.InitialState)
	return s
}
