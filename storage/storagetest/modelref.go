package storagetest

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// refStore is the reference the Model group compares a store with: the
// contract of package storage read plainly, in maps and sorted slices,
// written apart from every adapter (memstore included).
//
// Where the contract lets a store choose, the reference keeps both
// answers possible until the store shows which it took: a token (or
// embed session) that was not live at the LiveAt of a creation for its
// user may have been deleted by that creation ("the store may delete"),
// so it is kept as maybeGone; a read of it may find it or not, and what
// the store answers settles it. So with an audit event a later write
// allowed the store to drop (it may drop it then, later, or in a
// cleanup), and with a tombstone past its time at the run's clock.
type refStore struct {
	orgs     map[string]storage.Org
	users    map[refKey]storage.User
	tokens   map[string]*refToken // by token ID
	tombs    map[storage.Digest]time.Time
	sessions map[storage.Digest]*refSession
	// ducklings of each user, by Duckling ID.
	ducklings map[refKey]map[string]storage.Duckling
	// events of each org, in the order they were recorded, and the
	// largest MaxPerOrg a write of the org gave.
	events   map[string][]*refEvent
	maxBound map[string]int
	dives    map[refKey]storage.Dive // by org and Dive ID
	// marks of each org, by key.
	marks map[string]map[string]bool
	// clock is the run's: no instant the store was given is later, so a
	// tombstone whose time is before it may have been removed.
	clock time.Time
	// eventsGone counts the events a listing found dropped, for the log.
	eventsGone int
}

// refKey names a user: its org and its ID.
type refKey struct{ org, id string }

type refToken struct {
	tok       storage.Token
	maybeGone bool
}

// refEvent is an event recorded, with the Seq the store first listed it
// with (0 before) and whether a later write allows the store to drop it:
// it was older than that write's DropBefore, or that write's MaxPerOrg
// events of the org were recorded after it.
type refEvent struct {
	ev        storage.Event
	seq       int64
	maybeGone bool
}

type refSession struct {
	es        storage.EmbedSession
	maybeGone bool
}

func newRefStore() *refStore {
	return &refStore{
		orgs:      map[string]storage.Org{},
		users:     map[refKey]storage.User{},
		tokens:    map[string]*refToken{},
		tombs:     map[storage.Digest]time.Time{},
		sessions:  map[storage.Digest]*refSession{},
		ducklings: map[refKey]map[string]storage.Duckling{},
		events:    map[string][]*refEvent{},
		maxBound:  map[string]int{},
		dives:     map[refKey]storage.Dive{},
		marks:     map[string]map[string]bool{},
	}
}

// outcome is the class of a store's answer, for comparison with the
// reference: the sentinel it wraps, or "failure" for any other error.
type outcome string

const (
	okOutcome      outcome = "ok"
	notFound       outcome = "ErrNotFound"
	revoked        outcome = "ErrRevoked"
	alreadyExists  outcome = "ErrAlreadyExists"
	limitExceeded  outcome = "ErrLimitExceeded"
	conflict       outcome = "ErrConflict"
	failureOutcome outcome = "failure"
)

// classify returns the outcome of err. ErrRevoked wraps ErrNotFound, so
// it is told first.
func classify(err error) outcome {
	switch {
	case err == nil:
		return okOutcome
	case errors.Is(err, storage.ErrRevoked):
		return revoked
	case errors.Is(err, storage.ErrNotFound):
		return notFound
	case errors.Is(err, storage.ErrAlreadyExists):
		return alreadyExists
	case errors.Is(err, storage.ErrLimitExceeded):
		return limitExceeded
	case errors.Is(err, storage.ErrConflict):
		return conflict
	}
	return failureOutcome
}

// expect checks that err is one of the outcomes allowed, and returns
// the outcome it is.
func expect(err error, allowed ...outcome) (outcome, error) {
	got := classify(err)
	if slices.Contains(allowed, got) {
		return got, nil
	}
	return got, fmt.Errorf("answer %s (%v), the reference allows %v", got, err, allowed)
}

// orgListed checks the error of a listing of org's records. The contract
// does not say whether an org that does not exist lists nothing or is not
// found: either is allowed. It reports done when there is nothing more to
// compare (a wrong answer, in e, or not found).
func (m *refStore) orgListed(org string, err error) (done bool, e error) {
	allowed := []outcome{okOutcome}
	if !m.hasOrg(org) {
		allowed = append(allowed, notFound)
	}
	o, e := expect(err, allowed...)
	return e != nil || o == notFound, e
}

func (m *refStore) hasOrg(id string) bool {
	_, ok := m.orgs[id]
	return ok
}

// user returns the user userID of org, if it exists.
func (m *refStore) user(org, userID string) (storage.User, bool) {
	u, ok := m.users[refKey{org, userID}]
	return u, ok
}

// userByName returns the user of org whose FoldedUsername is folded.
func (m *refStore) userByName(org, folded string) (storage.User, bool) {
	for k, u := range m.users {
		if k.org == org && u.FoldedUsername == folded {
			return u, true
		}
	}
	return storage.User{}, false
}

// sortedUsers returns the users of org, ordered by FoldedUsername.
func (m *refStore) sortedUsers(org string) []storage.User {
	var us []storage.User
	for k, u := range m.users {
		if k.org == org {
			us = append(us, u)
		}
	}
	slices.SortFunc(us, func(a, b storage.User) int { return cmp.Compare(a.FoldedUsername, b.FoldedUsername) })
	return us
}

// liveTokens returns the tokens of the user userID of org live at at, by
// CreatedAt, then ID, and whether each is maybeGone: a store may have
// deleted it, so it may be listed or not.
func (m *refStore) liveTokens(org, userID string, at time.Time) []*refToken {
	var toks []*refToken
	for _, rt := range m.tokens {
		if rt.tok.Org == org && rt.tok.UserID == userID && rt.tok.LiveAt(at) {
			toks = append(toks, rt)
		}
	}
	slices.SortFunc(toks, func(a, b *refToken) int {
		if c := a.tok.CreatedAt.Compare(b.tok.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.tok.ID, b.tok.ID)
	})
	return toks
}

// countLive returns how many tokens of the user userID of org are live
// at at and not maybeGone.
func (m *refStore) countLive(org, userID string, at time.Time) int {
	n := 0
	for _, rt := range m.liveTokens(org, userID, at) {
		if !rt.maybeGone {
			n++
		}
	}
	return n
}

// sameLiveTokens checks the tokens a store listed as live at at for the
// user userID of org: the reference's, less only maybeGone ones, which
// are gone from then on. At the clock's instant no maybeGone token is
// live (the instant that made it so is no later); at an earlier one, it
// may be.
func (m *refStore) sameLiveTokens(org, userID string, at time.Time, got []storage.Token) error {
	want := m.liveTokens(org, userID, at)
	var kept []storage.Token
	var gone []string
	j := 0
	for _, rt := range want {
		if j < len(got) && got[j].ID == rt.tok.ID {
			kept = append(kept, rt.tok)
			j++
		} else if rt.maybeGone {
			gone = append(gone, rt.tok.ID)
		} else {
			kept = append(kept, rt.tok)
		}
	}
	if err := sameTokens(kept, got); err != nil {
		return err
	}
	for _, id := range gone {
		delete(m.tokens, id)
	}
	return nil
}

// tokenByDigest returns the token holding d, if any.
func (m *refStore) tokenByDigest(d storage.Digest) (*refToken, bool) {
	for _, rt := range m.tokens {
		if rt.tok.Digest == d {
			return rt, true
		}
	}
	return nil, false
}

// record appends a's event to its org's, when a is not nil, and marks
// the events a's DropBefore and MaxPerOrg allow the store to drop: it
// may drop them now, spread the work over later writes or leave it to a
// cleanup, so they may be listed or not until a listing settles it.
func (m *refStore) record(a *storage.Audit) {
	if a == nil {
		return
	}
	org := a.Event.Org
	es := append(m.events[org], &refEvent{ev: a.Event})
	m.events[org] = es
	m.maxBound[org] = max(m.maxBound[org], a.MaxPerOrg)
	for i, e := range es {
		newer := len(es) - 1 - i
		if e.ev.At.Before(a.DropBefore) || (a.MaxPerOrg > 0 && newer >= a.MaxPerOrg) {
			e.maybeGone = true
		}
	}
}

func (m *refStore) createOrg(o storage.Org, a *storage.Audit, err error) error {
	if _, ok := m.orgs[o.ID]; ok {
		_, e := expect(err, alreadyExists)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	m.orgs[o.ID] = o
	m.record(a)
	return nil
}

func (m *refStore) getOrg(id string, got storage.Org, err error) error {
	want, ok := m.orgs[id]
	if !ok {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	if got.ID != want.ID || !got.CreatedAt.Equal(want.CreatedAt) {
		return fmt.Errorf("org: got %+v, the reference has %+v", got, want)
	}
	return nil
}

func (m *refStore) createUser(u storage.User, lim storage.UserLimit, a *storage.Audit, err error) error {
	var want outcome
	switch {
	case !m.hasOrg(u.Org):
		want = notFound
	case m.nameTaken(u.Org, u.FoldedUsername), m.idTaken(u.Org, u.ID):
		want = alreadyExists
	case lim.Max > 0 && len(m.sortedUsers(u.Org)) >= lim.Max:
		want = limitExceeded
	default:
		want = okOutcome
	}
	if _, e := expect(err, want); e != nil || want != okOutcome {
		return e
	}
	u.Privileges = slices.Clone(u.Privileges)
	m.users[refKey{u.Org, u.ID}] = u
	m.record(a)
	return nil
}

func (m *refStore) nameTaken(org, folded string) bool {
	_, ok := m.userByName(org, folded)
	return ok
}

func (m *refStore) idTaken(org, id string) bool {
	_, ok := m.user(org, id)
	return ok
}

func (m *refStore) getUser(org, folded string, got storage.User, err error) error {
	u, ok := m.userByName(org, folded)
	if !ok {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	return sameUser(u, got)
}

func (m *refStore) setPrivileges(org, userID string, from, to []string, a *storage.Audit, err error) error {
	u, ok := m.user(org, userID)
	want := okOutcome
	switch {
	case !ok:
		want = notFound
	case !slices.Equal(u.Privileges, from): // nil and empty are equal
		want = conflict
	}
	if _, e := expect(err, want); e != nil || want != okOutcome {
		return e
	}
	u.Privileges = slices.Clone(to)
	m.users[refKey{org, userID}] = u
	m.record(a)
	return nil
}

func (m *refStore) setInstances(org, userID string, c storage.InstanceConfig, a *storage.Audit, err error) error {
	u, ok := m.user(org, userID)
	if !ok {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	u.Instances = c
	m.users[refKey{org, userID}] = u
	m.record(a)
	return nil
}

// deleteUser removes the user with its tokens, Duckling reports and
// embed sessions; the tombstones of its tokens revoked before stay.
func (m *refStore) deleteUser(org, userID string, a *storage.Audit, got storage.User, err error) error {
	u, ok := m.user(org, userID)
	if !ok {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	if e := sameUser(u, got); e != nil {
		return fmt.Errorf("the record DeleteUser returned: %w", e)
	}
	delete(m.users, refKey{org, userID})
	for id, rt := range m.tokens {
		if rt.tok.Org == org && rt.tok.UserID == userID {
			delete(m.tokens, id)
		}
	}
	for d, rs := range m.sessions {
		if rs.es.Org == org && rs.es.UserID == userID {
			delete(m.sessions, d)
		}
	}
	delete(m.ducklings, refKey{org, userID})
	m.record(a)
	return nil
}

// listUsers checks a page of ListUsers against the reference.
func (m *refStore) listUsers(org string, q storage.UserQuery, got storage.UserPage, err error) error {
	if done, e := m.orgListed(org, err); done {
		return e
	}
	var match []storage.User
	for _, u := range m.sortedUsers(org) {
		if q.ServiceAccount == nil || u.IsServiceAccount == *q.ServiceAccount {
			match = append(match, u)
		}
	}
	rest := match
	if q.After != "" {
		i := 0
		for i < len(rest) && rest[i].FoldedUsername <= q.After {
			i++
		}
		rest = rest[i:]
	} else {
		rest = rest[min(q.Offset, len(rest)):]
	}
	page := rest[:min(q.Limit, len(rest))]
	more := len(rest) > len(page)
	if got.Total != len(match) || got.More != more {
		return fmt.Errorf("page with total %d, more %v; the reference has total %d, more %v", got.Total, got.More, len(match), more)
	}
	return sameUsers(page, got.Users)
}

func (m *refStore) createToken(t storage.Token, lim storage.TokenLimit, a *storage.Audit, err error) error {
	if _, ok := m.user(t.Org, t.UserID); !ok {
		// The contract names no order between a missing user and a
		// taken digest or ID: either answer is allowed when both hold.
		allowed := []outcome{notFound}
		for _, rt := range m.tokens {
			if rt.tok.ID == t.ID || rt.tok.Digest == t.Digest {
				allowed = append(allowed, alreadyExists)
				break
			}
		}
		_, e := expect(err, allowed...)
		return e
	}
	// The store may delete, now, the user's tokens not live at LiveAt.
	for _, rt := range m.tokens {
		if rt.tok.Org == t.Org && rt.tok.UserID == t.UserID && !rt.tok.LiveAt(lim.LiveAt) {
			rt.maybeGone = true
		}
	}
	dup, maybeDup := false, false
	for _, rt := range m.tokens {
		if rt.tok.ID == t.ID || rt.tok.Digest == t.Digest {
			if rt.maybeGone {
				maybeDup = true
			} else {
				dup = true
			}
		}
	}
	full := lim.Max > 0 && m.countLive(t.Org, t.UserID, lim.LiveAt) >= lim.Max
	// The contract names no order between a taken digest or ID and a
	// full quota: either answer is allowed when both hold.
	var allowed []outcome
	if dup || maybeDup {
		allowed = append(allowed, alreadyExists)
	}
	if full {
		allowed = append(allowed, limitExceeded)
	}
	if !dup && !full {
		allowed = append(allowed, okOutcome)
	}
	o, e := expect(err, allowed...)
	if e != nil || o != okOutcome {
		return e
	}
	// Any token the new one collides with was one the store had deleted.
	for id, rt := range m.tokens {
		if rt.tok.ID == t.ID || rt.tok.Digest == t.Digest {
			delete(m.tokens, id)
		}
	}
	m.tokens[t.ID] = &refToken{tok: t}
	delete(m.tombs, t.Digest)
	m.record(a)
	return nil
}

// readAccess checks ReadAccess of q against the reference.
func (m *refStore) readAccess(q storage.AccessQuery, got storage.Access, err error) error {
	rt, ok := m.tokenByDigest(q.Digest)
	if !ok {
		allowed := []outcome{notFound}
		until, tomb := m.tombs[q.Digest]
		if tomb && q.LiveAt.Before(until) {
			// A tombstone past its time at an instant the store was
			// given may be gone: so at a LiveAt before the clock.
			allowed = []outcome{revoked}
			if !m.clock.Before(until) {
				allowed = append(allowed, notFound)
			}
		}
		o, e := expect(err, allowed...)
		if e == nil && o == notFound && tomb && q.LiveAt.Before(until) {
			delete(m.tombs, q.Digest) // the store removed it
		}
		return e
	}
	allowed := []outcome{okOutcome}
	if rt.maybeGone {
		allowed = append(allowed, notFound)
	}
	o, e := expect(err, allowed...)
	if e != nil {
		return e
	}
	if o == notFound {
		delete(m.tokens, rt.tok.ID)
		return nil
	}
	u, _ := m.user(rt.tok.Org, rt.tok.UserID)
	if e := sameToken(rt.tok, got.Credential.Token); e != nil {
		return fmt.Errorf("credential: %w", e)
	}
	if e := sameUser(u, got.Credential.User); e != nil {
		return fmt.Errorf("credential's user: %w", e)
	}
	var target storage.User
	found := false
	if q.Username != "" {
		target, found = m.userByName(rt.tok.Org, q.Username)
	}
	if got.TargetFound != found {
		return fmt.Errorf("TargetFound %v, the reference %v", got.TargetFound, found)
	}
	if !found {
		if !reflect.DeepEqual(got.Target, storage.User{}) || got.Tokens != nil {
			return fmt.Errorf("no target, but Target %+v and Tokens %v", got.Target, tokenIDs(got.Tokens))
		}
		return nil
	}
	if e := sameUser(target, got.Target); e != nil {
		return fmt.Errorf("target: %w", e)
	}
	if !q.Tokens {
		if got.Tokens != nil {
			return fmt.Errorf("tokens not asked for, but got %v", tokenIDs(got.Tokens))
		}
		return nil
	}
	if e := m.sameLiveTokens(target.Org, target.ID, q.LiveAt, got.Tokens); e != nil {
		return fmt.Errorf("target's tokens: %w", e)
	}
	return nil
}

func (m *refStore) listTokens(org, userID string, liveAt time.Time, got []storage.Token, err error) error {
	if _, ok := m.user(org, userID); !ok {
		// The contract does not say whether a user that does not exist
		// has no tokens or is not found (requireNoTokens).
		o, e := expect(err, okOutcome, notFound)
		if e != nil || o == notFound {
			return e
		}
		if len(got) != 0 {
			return fmt.Errorf("tokens %v of a user that does not exist", tokenIDs(got))
		}
		return nil
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	return m.sameLiveTokens(org, userID, liveAt, got)
}

func (m *refStore) deleteToken(org, userID, id string, r storage.Revocation, a *storage.Audit, err error) error {
	rt, ok := m.tokens[id]
	if !ok || rt.maybeGone || rt.tok.Org != org || rt.tok.UserID != userID || !rt.tok.LiveAt(r.At) {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	delete(m.tokens, id)
	m.tombs[rt.tok.Digest] = r.Until(rt.tok)
	m.record(a)
	return nil
}

func (m *refStore) setDuckling(d storage.Duckling, err error) error {
	k := refKey{d.Org, d.UserID}
	if _, ok := m.users[k]; !ok {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	if m.ducklings[k] == nil {
		m.ducklings[k] = map[string]storage.Duckling{}
	}
	m.ducklings[k][d.ID] = d
	return nil
}

func (m *refStore) listActivity(org string, got []storage.Activity, err error) error {
	if done, e := m.orgListed(org, err); done {
		return e
	}
	var want []storage.Activity
	for _, u := range m.sortedUsers(org) {
		ds := m.ducklings[refKey{org, u.ID}]
		if len(ds) == 0 {
			continue
		}
		a := storage.Activity{User: u}
		for _, d := range ds {
			a.Ducklings = append(a.Ducklings, d)
		}
		want = append(want, a)
	}
	if len(want) != len(got) {
		return fmt.Errorf("%d users with activity, the reference has %d: got %v", len(got), len(want), activityNames(got))
	}
	for i := range want {
		if e := sameUser(want[i].User, got[i].User); e != nil {
			return fmt.Errorf("activity %d: %w", i, e)
		}
		w, g := sortDucklings(want[i].Ducklings), sortDucklings(got[i].Ducklings)
		if !reflect.DeepEqual(w, g) {
			return fmt.Errorf("ducklings of %s: got %+v, the reference has %+v", want[i].User.FoldedUsername, g, w)
		}
	}
	return nil
}

func activityNames(as []storage.Activity) []string {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = a.User.FoldedUsername
	}
	return names
}

// sortDucklings returns ds normalized and ordered by ID (ListActivity
// gives them in no particular order).
func sortDucklings(ds []storage.Duckling) []storage.Duckling {
	out := normDucklings(ds)
	slices.SortFunc(out, func(a, b storage.Duckling) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (m *refStore) createSession(es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit, err error) error {
	if _, ok := m.user(es.Org, es.UserID); !ok {
		// A taken digest may be told first: the contract names no order.
		allowed := []outcome{notFound}
		if _, taken := m.sessions[es.Digest]; taken {
			allowed = append(allowed, alreadyExists)
		}
		_, e := expect(err, allowed...)
		return e
	}
	live := 0
	for _, rs := range m.sessions {
		if rs.es.Org != es.Org || rs.es.UserID != es.UserID {
			continue
		}
		if lim.LiveAt.Before(rs.es.ExpiresAt) {
			if !rs.maybeGone {
				live++
			}
		} else {
			// The store may delete, now, the user's sessions not live.
			rs.maybeGone = true
		}
	}
	var allowed []outcome
	taken, maybeTaken := false, false
	if rs, ok := m.sessions[es.Digest]; ok {
		taken, maybeTaken = !rs.maybeGone, rs.maybeGone
	}
	full := lim.Max > 0 && live >= lim.Max
	switch {
	case taken: // at the limit too (LimitDuplicateDigest)
		allowed = []outcome{alreadyExists}
	case full && maybeTaken:
		allowed = []outcome{alreadyExists, limitExceeded}
	case full:
		allowed = []outcome{limitExceeded}
	case maybeTaken:
		allowed = []outcome{alreadyExists, okOutcome}
	default:
		allowed = []outcome{okOutcome}
	}
	o, e := expect(err, allowed...)
	if e != nil || o != okOutcome {
		return e
	}
	m.sessions[es.Digest] = &refSession{es: cloneSession(es)}
	m.record(a)
	return nil
}

func (m *refStore) sessionByDigest(d storage.Digest, got storage.EmbedSession, err error) error {
	rs, ok := m.sessions[d]
	if !ok {
		_, e := expect(err, notFound)
		return e
	}
	allowed := []outcome{okOutcome}
	if rs.maybeGone {
		allowed = append(allowed, notFound)
	}
	o, e := expect(err, allowed...)
	if e != nil {
		return e
	}
	if o == notFound {
		delete(m.sessions, d)
		return nil
	}
	return same("session", normSession(rs.es), normSession(got))
}

// putDive checks a PutDive, or a CreateDive when create.
func (m *refStore) putDive(d storage.Dive, create bool, a *storage.Audit, err error) error {
	if !m.hasOrg(d.Org) {
		_, e := expect(err, notFound)
		return e
	}
	if _, held := m.dives[refKey{d.Org, d.ID}]; held && create {
		_, e := expect(err, alreadyExists)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	d.RequiredResources = slices.Clone(d.RequiredResources)
	m.dives[refKey{d.Org, d.ID}] = d
	m.record(a)
	return nil
}

func (m *refStore) getDive(org, id string, got storage.Dive, err error) error {
	d, ok := m.dives[refKey{org, id}]
	if !ok {
		_, e := expect(err, notFound)
		return e
	}
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	return same("dive "+id, normDive(d), normDive(got))
}

// embedTarget checks GetEmbedTarget: what is missing is told by its
// Found flag, never by an error, the org included.
func (m *refStore) embedTarget(org, diveID, folded string, got storage.EmbedTarget, err error) error {
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	d, dok := m.dives[refKey{org, diveID}]
	u, uok := m.userByName(org, folded)
	if got.DiveFound != dok || got.UserFound != uok {
		return fmt.Errorf("DiveFound %v, UserFound %v; the reference %v, %v", got.DiveFound, got.UserFound, dok, uok)
	}
	if e := same("target's dive", normDive(d), normDive(got.Dive)); e != nil {
		return e
	}
	if !uok {
		return same("target's user", storage.User{}, got.User)
	}
	return sameUser(u, got.User)
}

func (m *refStore) markSeeded(org string, keys []string, err error) error {
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	if m.marks[org] == nil {
		m.marks[org] = map[string]bool{}
	}
	for _, k := range keys {
		m.marks[org][k] = true
	}
	return nil
}

// seedMarks checks the marks of org, in no particular order.
func (m *refStore) seedMarks(org string, got []string, err error) error {
	if _, e := expect(err, okOutcome); e != nil {
		return e
	}
	want := []string{}
	for k := range m.marks[org] {
		want = append(want, k)
	}
	slices.Sort(want)
	g := append([]string{}, got...)
	slices.Sort(g)
	return same("marks of "+org, want, g)
}

// listEvents checks the events of a walk (every page of q, read
// newest first) against the reference: they are the reference's events
// that match q, newest first, less only events a write allowed the
// store to drop; an event missing is gone from then on. Seq falls along
// the walk, and an event keeps the Seq it was first listed with.
func (m *refStore) listEvents(org string, q storage.EventQuery, got []storage.Event) error {
	var want []*refEvent
	for _, e := range slices.Backward(m.events[org]) {
		if q.Matches(e.ev) {
			want = append(want, e)
		}
	}
	gone := map[*refEvent]bool{}
	j := 0
	for i, g := range got {
		if g.Seq <= 0 || (i > 0 && g.Seq >= got[i-1].Seq) {
			return fmt.Errorf("event %d (%s) has Seq %d after %d", i, g.Action, g.Seq, got[max(i-1, 0)].Seq)
		}
		for j < len(want) && want[j].ev.ID != g.ID {
			if !want[j].maybeGone {
				return fmt.Errorf("event %d: got %s, but the reference's %s, which no write allowed the store to drop, is missing; events %v, the reference %v",
					i, g.ID, want[j].ev.ID, eventSummary(got), refEventSummary(want))
			}
			gone[want[j]] = true
			j++
		}
		if j == len(want) {
			return fmt.Errorf("event %d (%s %s): not in the reference, or out of order; events %v, the reference %v",
				i, g.Action, g.ID, eventSummary(got), refEventSummary(want))
		}
		e := want[j]
		j++
		if e.seq != 0 && e.seq != g.Seq {
			return fmt.Errorf("event %d (%s) has Seq %d, listed before with %d", i, g.Action, g.Seq, e.seq)
		}
		e.seq = g.Seq
		w := e.ev
		w.Seq = g.Seq
		w.At = w.At.UTC()
		g.At = g.At.UTC()
		if err := same(fmt.Sprintf("event %d", i), normEvent(w), normEvent(g)); err != nil {
			return fmt.Errorf("%w; events %v, the reference %v", err, eventSummary(got), refEventSummary(want))
		}
	}
	for _, e := range want[j:] {
		if !e.maybeGone {
			return fmt.Errorf("%d events %v: the reference's %s (%s), which no write allowed the store to drop, is missing; the reference %v",
				len(got), eventSummary(got), e.ev.ID, e.ev.Action, refEventSummary(want))
		}
		gone[e] = true
	}
	m.eventsGone += len(gone)
	if len(gone) > 0 {
		m.events[org] = slices.DeleteFunc(m.events[org], func(e *refEvent) bool { return gone[e] })
	}
	return nil
}

func refEventSummary(es []*refEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ev.Action + ":" + e.ev.TargetKind + ":" + e.ev.TargetUsername
		if e.maybeGone {
			out[i] += "?"
		}
	}
	return out
}

func eventSummary(es []storage.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Action + ":" + e.TargetKind + ":" + e.TargetUsername
	}
	return out
}

func cloneSession(es storage.EmbedSession) storage.EmbedSession {
	es.Resources = slices.Clone(es.Resources)
	es.InitialState = slices.Clone(es.InitialState)
	return es
}

// same returns an error describing how got differs from want, or nil.
func same[T any](what string, want, got T) error {
	if reflect.DeepEqual(want, got) {
		return nil
	}
	return fmt.Errorf("%s: got %+v, the reference has %+v", what, got, want)
}

func sameUser(want, got storage.User) error {
	return same("user "+want.FoldedUsername, normUser(want), normUser(got))
}

func sameUsers(want, got []storage.User) error {
	return sameAll("users", want, got, foldedNames, sameUser)
}

func sameToken(want, got storage.Token) error {
	return same("token "+want.ID, normToken(want), normToken(got))
}

func sameTokens(want, got []storage.Token) error {
	return sameAll("tokens", want, got, tokenIDs, sameToken)
}

// sameAll returns an error unless got holds the records of want, named by
// names, in the same order, each the same by one.
func sameAll[T any](what string, want, got []T, names func([]T) []string, one func(want, got T) error) error {
	if !slices.Equal(names(want), names(got)) {
		return fmt.Errorf("%s %v, the reference %v", what, names(got), names(want))
	}
	for i := range want {
		if e := one(want[i], got[i]); e != nil {
			return e
		}
	}
	return nil
}
