package mongostore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/orgadmin/orgadmin/storage"
)

// withEvent is the Audit of an event of org at t0, and its id.
func withEvent(org, action, target string) (*storage.Audit, string) {
	id := uuid.NewString()
	return &storage.Audit{Event: storage.Event{
		ID: id, Org: org, At: t0, ActorUsername: "system", Action: action, TargetID: target,
	}}, id
}

// listed returns the ids of the org's listed events.
func listed(t *testing.T, s *Store, org string) []string {
	t.Helper()
	page, err := s.ListEvents(t.Context(), org, storage.EventQuery{Limit: 100})
	require.NoError(t, err)
	ids := []string{}
	for _, e := range page.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

// crashWorld is what each crash test starts from: an org with the user
// Alice, a token of hers and a Dive, written without events.
type crashWorld struct {
	org   string
	alice storage.User
	token storage.Token
	dive  storage.Dive
}

func newCrashWorld(t *testing.T, s *Store) crashWorld {
	t.Helper()
	ctx := t.Context()
	w := crashWorld{org: uuid.NewString()}
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: w.org, CreatedAt: t0}, nil))
	w.alice = crashUser(w.org, "Alice")
	require.NoError(t, s.CreateUser(ctx, w.alice, storage.UserLimit{}, nil))
	w.token = crashToken(w.alice, time.Time{})
	require.NoError(t, s.CreateToken(ctx, w.token, storage.TokenLimit{}, nil))
	w.dive = storage.Dive{ID: uuid.NewString(), Org: w.org, Title: "Sales", Version: 1}
	require.NoError(t, s.PutDive(ctx, w.dive, nil))
	return w
}

// auditedChange is one audited change of a crashWorld: the org and
// target of its event and the call that makes it.
type auditedChange struct {
	org, target string
	call        func(ctx context.Context, a *storage.Audit) error
}

// crashCases are the audited changes of every action: each makes its
// change over the crashWorld and names the step after its change and
// before its event is confirmed. The changes that can write what is
// there already do (instances.set writes Alice's configuration, and
// dive.register the Dive as it is), so that a value alone cannot tell
// whether the change was made.
var crashCases = []crashCase{
	{"org.create", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		id := uuid.NewString()
		return auditedChange{id, id, func(ctx context.Context, a *storage.Audit) error {
			return s.CreateOrg(ctx, storage.Org{ID: id, CreatedAt: t0}, a)
		}}
	}},
	{"user.create", stepCreateUser, func(s *Store, w crashWorld) auditedChange {
		carol := crashUser(w.org, "Carol")
		return auditedChange{w.org, carol.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.CreateUser(ctx, carol, storage.UserLimit{}, a)
		}}
	}},
	{"user.delete", stepTombstone, func(s *Store, w crashWorld) auditedChange {
		return auditedChange{w.org, w.alice.ID, func(ctx context.Context, a *storage.Audit) error {
			_, err := s.DeleteUser(ctx, w.org, w.alice.ID, a)
			return err
		}}
	}},
	{"user.grant_privilege", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		// One more privilege than read, as a grant makes: each call is
		// a change, made from what the one before left.
		return auditedChange{w.org, w.alice.ID, func(ctx context.Context, a *storage.Audit) error {
			u, err := s.GetUser(ctx, w.org, w.alice.FoldedUsername)
			if err != nil {
				return err
			}
			to := append(slices.Clip(u.Privileges), fmt.Sprint("privilege.", len(u.Privileges)))
			return s.SetPrivileges(ctx, w.org, u.ID, u.Privileges, to, a)
		}}
	}},
	{"instances.set", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		return auditedChange{w.org, w.alice.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.SetInstances(ctx, w.org, w.alice.ID, w.alice.Instances, a)
		}}
	}},
	{"token.create", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		tok := crashToken(w.alice, time.Time{})
		return auditedChange{w.org, tok.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.CreateToken(ctx, tok, storage.TokenLimit{Max: 10, LiveAt: t0}, a)
		}}
	}},
	{"token.seed", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		tok := crashToken(w.alice, t0.Add(time.Hour))
		return auditedChange{w.org, tok.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.CreateToken(ctx, tok, storage.TokenLimit{}, a)
		}}
	}},
	{"token.delete", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		return auditedChange{w.org, w.token.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.DeleteToken(ctx, w.org, w.alice.ID, w.token.ID, storage.Revocation{At: t0}, a)
		}}
	}},
	{"dive.register", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		return auditedChange{w.org, w.dive.ID, func(ctx context.Context, a *storage.Audit) error { return s.PutDive(ctx, w.dive, a) }}
	}},
	{"embed_session.create", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		es := crashSession(w.alice)
		es.DiveID = w.dive.ID
		return auditedChange{w.org, w.dive.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.CreateEmbedSession(ctx, es, storage.SessionLimit{}, a)
		}}
	}},
}

// crashCase is an audited change of action.
type crashCase struct {
	action  string
	changed string
	change  func(s *Store, w crashWorld) auditedChange
}

// otherCrashCases are audited changes, by other store methods (via), of
// actions crashCases have: those that make their change once (a second
// call of the same change is refused).
var otherCrashCases = []struct {
	via string
	crashCase
}{
	{"CreateDive", crashCase{"dive.register", stepEventChanged, func(s *Store, w crashWorld) auditedChange {
		d := storage.Dive{ID: uuid.NewString(), Org: w.org, Title: "Created", Version: 1}
		return auditedChange{w.org, d.ID, func(ctx context.Context, a *storage.Audit) error { return s.CreateDive(ctx, d, a) }}
	}}},
}

// namedCrashCase is a crash case with the name of its subtests.
type namedCrashCase struct {
	name string
	crashCase
}

// everyCrashCase returns crashCases, named by their actions, and
// otherCrashCases, named by their actions and methods.
func everyCrashCase() []namedCrashCase {
	var out []namedCrashCase
	for _, c := range crashCases {
		out = append(out, namedCrashCase{c.action, c})
	}
	for _, c := range otherCrashCases {
		out = append(out, namedCrashCase{c.action + " by " + c.via, c.crashCase})
	}
	return out
}

// pendingCount is how many events with the id s holds, pending or not
// (all), or pending only.
func eventCount(t *testing.T, s *Store, id string, pendingOnly bool) int64 {
	t.Helper()
	filter := bson.D{{Key: "_id", Value: id}}
	if pendingOnly {
		filter = append(filter, bson.E{Key: "p", Value: true})
	}
	n, err := s.events.CountDocuments(t.Context(), filter)
	require.NoError(t, err)
	if !pendingOnly {
		confirmed, err := s.trail.CountDocuments(t.Context(), bson.D{{Key: "eid", Value: id}})
		require.NoError(t, err)
		n += confirmed
	}
	return n
}

// settle settles s's pending events as a listing of org at the instant
// now would (SettleBefore a minute before it), or as Cleanup at now.
func settle(t *testing.T, s *Store, org string, now time.Time, byListing bool) {
	t.Helper()
	var err error
	if byListing {
		_, err = s.ListEvents(t.Context(), org, storage.EventQuery{Limit: 10, SettleBefore: now.Add(-pendingGrace)})
	} else {
		_, err = s.Cleanup(t.Context(), now)
	}
	require.NoError(t, err)
}

// For every action, a call that stops, as a crash would, after its
// change and before its event is confirmed leaves the event pending, and
// the very next listing (or Cleanup) shows it, however young; a call
// that stops after writing its pending event and before its change
// leaves an event that no listing shows, and that the first listing or
// Cleanup after it is a minute old removes. No value that a change
// writes and another could have written confirms an event: only the
// record of the event's id, written with the change.
func TestEventCrashPoints(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	for _, c := range everyCrashCase() {
		for _, made := range []bool{true, false} {
			for _, byListing := range []bool{true, false} {
				name := c.name + "/before the change"
				if made {
					name = c.name + "/after the change"
				}
				if byListing {
					name += ", settled by a listing"
				} else {
					name += ", settled by Cleanup"
				}
				t.Run(name, func(t *testing.T) {
					s := newTestStore(t)
					w := newCrashWorld(t, s)
					ch := c.change(s, w)
					aud, id := withEvent(ch.org, c.action, ch.target)
					stop := stepEventPending
					if made {
						stop = c.changed
					}
					crashAfter(s, stop)
					err := ch.call(t.Context(), aud)
					s.afterStep = nil
					if stop == stepEventChanged {
						require.NoError(t, err, "the change is made; only its confirmation is lost")
					} else {
						require.ErrorIs(t, err, errCrash)
					}
					require.Equal(t, int64(1), eventCount(t, s, id, true), "the event is left pending")
					require.Empty(t, listed(t, s, ch.org), "a pending event is not listed")

					// At once: the event is as young as can be.
					settle(t, s, ch.org, t0, byListing)
					if made {
						require.Equal(t, []string{id}, listed(t, s, ch.org), "the change was made: its event shows at once")
						return
					}
					require.Empty(t, listed(t, s, ch.org), "no change: no event")
					require.Equal(t, int64(1), eventCount(t, s, id, true), "too young to remove: its writer may be at work")

					settle(t, s, ch.org, later, byListing)
					require.Empty(t, listed(t, s, ch.org), "no change: no event")
					require.Zero(t, eventCount(t, s, id, false), "the pending event is removed once a minute old")
				})
			}
		}
	}
}

// A token deletion that failed before it took the token, retried: the
// retry takes the token, and the failed call's event, left pending, is
// not counted made by settling, though the token is gone.
func TestTokenDeletionRetriedIsAuditedOnce(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	eachSettling(t, func(t *testing.T, s *Store, w crashWorld, byListing bool) {
		del := func(aud *storage.Audit) error {
			return s.DeleteToken(t.Context(), w.org, w.alice.ID, w.token.ID, storage.Revocation{At: t0, KeepUntil: later}, aud)
		}
		failed, failedID := withEvent(w.org, "token.delete", w.token.ID)
		crashAfter(s, stepEventPending)
		require.ErrorIs(t, del(failed), errCrash)
		s.afterStep = nil
		retry, retryID := withEvent(w.org, "token.delete", w.token.ID)
		require.NoError(t, del(retry))
		for _, at := range []time.Time{t0, later} {
			settle(t, s, w.org, at, byListing)
			require.Equal(t, []string{retryID}, listed(t, s, w.org))
			require.Zero(t, eventCount(t, s, failedID, false), "the failed deletion's event")
		}
	})
}

// eachSettling runs f on a fresh store and crash world, once for each
// way events are settled (a listing, Cleanup), as a subtest of its own.
func eachSettling(t *testing.T, f func(t *testing.T, s *Store, w crashWorld, byListing bool)) {
	for _, byListing := range []bool{true, false} {
		t.Run(map[bool]string{true: "listing", false: "Cleanup"}[byListing], func(t *testing.T) {
			s := newTestStore(t)
			f(t, s, newCrashWorld(t, s), byListing)
		})
	}
}

// tokenCreationLeftPending returns a store and crash world with a token
// of Alice's whose creation's event is left pending (its writer stopped
// after storing it), and that event's id.
func tokenCreationLeftPending(t *testing.T) (*Store, crashWorld, storage.Token, string) {
	t.Helper()
	s := newTestStore(t)
	w := newCrashWorld(t, s)
	tok := crashToken(w.alice, time.Time{})
	created, createdID := withEvent(w.org, "token.create", tok.ID)
	crashAfter(s, stepEventChanged)
	require.NoError(t, s.CreateToken(t.Context(), tok, storage.TokenLimit{}, created), "the token is stored; only its event's confirmation is lost")
	s.afterStep = nil
	require.Equal(t, int64(1), eventCount(t, s, createdID, true), "the creation's event is left pending")
	return s, w, tok, createdID
}

// A token whose creation's event was left pending (its writer stopped
// after storing it), deleted: the creation is made, and its event goes to
// the trail before the deletion's, as the Service's withdrawal of a
// failed creation needs.
func TestTokenDeletedWithItsCreationPending(t *testing.T) {
	s, w, tok, createdID := tokenCreationLeftPending(t)
	deleted, deletedID := withEvent(w.org, "token.delete", tok.ID)
	require.NoError(t, s.DeleteToken(t.Context(), w.org, w.alice.ID, tok.ID, storage.Revocation{At: t0}, deleted))
	require.Equal(t, []string{deletedID, createdID}, listed(t, s, w.org), "newest first: the deletion after the creation")
	settle(t, s, w.org, t0.Add(pendingGrace+time.Second), true)
	require.Equal(t, []string{deletedID, createdID}, listed(t, s, w.org))
}

// The same token deleted without an event (the Service's clean-up of a
// token it did not find listed, whose creation's insert landed after its
// look): the creation is left pending, and settling, finding neither the
// token nor a deletion, counts neither made.
func TestTokenDeletedUnauditedLeavesItsCreationUnmade(t *testing.T) {
	s, w, tok, createdID := tokenCreationLeftPending(t)
	require.NoError(t, s.DeleteToken(t.Context(), w.org, w.alice.ID, tok.ID, storage.Revocation{At: t0}, nil))
	require.Empty(t, listed(t, s, w.org))
	settle(t, s, w.org, t0.Add(pendingGrace+time.Second), true)
	require.Empty(t, listed(t, s, w.org))
	require.Zero(t, eventCount(t, s, createdID, false), "the creation's event")
}

// A token's creation that finds its user deleted once the token is
// stored takes the token out again and is NOT_FOUND, with no event, even
// when the org's events are settled (by a listing or Cleanup) while the
// token is there: a token whose user is gone does not show its creation
// made.
func TestTokenCreationUndoneIsNotConfirmedBySettling(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	eachSettling(t, func(t *testing.T, s *Store, w crashWorld, byListing bool) {
		tok := crashToken(w.alice, time.Time{})
		aud, id := withEvent(w.org, "token.create", tok.ID)
		s.afterStep = func(step string) error {
			if step != stepTokenStored {
				return nil
			}
			_, err := s.users.DeleteOne(t.Context(), bson.D{{Key: "_id", Value: key(w.org, w.alice.ID)}})
			settle(t, s, w.org, t0, byListing)
			return err
		}
		err := s.CreateToken(t.Context(), tok, storage.TokenLimit{}, aud)
		s.afterStep = nil
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.Empty(t, listed(t, s, w.org), "refused: no event")
		require.Zero(t, eventCount(t, s, id, false), "its writer removed the pending event")
		settle(t, s, w.org, later, byListing)
		require.Empty(t, listed(t, s, w.org), "refused: no event")
	})
}

// A token's or an embed session's creation left pending with its record
// (a crash after the change) whose user is gone meanwhile is not counted
// made by settling: it is left pending while young, and removed once a
// minute old; the same with its user alive is confirmed at once
// (TestEventCrashPoints).
func TestCreationOfAUserGoneIsNotConfirmedBySettling(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	for _, action := range []string{"token.create", "embed_session.create"} {
		t.Run(action, func(t *testing.T) {
			s := newTestStore(t)
			w := newCrashWorld(t, s)
			var call func(context.Context, *storage.Audit) error
			var aud *storage.Audit
			var id string
			if action == "token.create" {
				tok := crashToken(w.alice, time.Time{})
				aud, id = withEvent(w.org, action, tok.ID)
				call = func(ctx context.Context, a *storage.Audit) error {
					return s.CreateToken(ctx, tok, storage.TokenLimit{}, a)
				}
			} else {
				es := crashSession(w.alice)
				es.DiveID = w.dive.ID
				aud, id = withEvent(w.org, action, w.dive.ID)
				call = func(ctx context.Context, a *storage.Audit) error {
					return s.CreateEmbedSession(ctx, es, storage.SessionLimit{}, a)
				}
			}
			crashAfter(s, stepEventChanged)
			require.NoError(t, call(t.Context(), aud))
			s.afterStep = nil
			_, err := s.users.DeleteOne(t.Context(), bson.D{{Key: "_id", Value: key(w.org, w.alice.ID)}})
			require.NoError(t, err)
			settle(t, s, w.org, t0, true)
			require.Empty(t, listed(t, s, w.org), "its user is gone: not made")
			require.Equal(t, int64(1), eventCount(t, s, id, true), "young: left pending")
			settle(t, s, w.org, later, true)
			require.Empty(t, listed(t, s, w.org), "its user is gone: not made")
			require.Zero(t, eventCount(t, s, id, false), "removed once a minute old")
		})
	}
}

// A change whose event was left pending and that a later audited change
// overwrote is still told apart from one never made: the later change
// confirms the event it overwrites, so the first shows, with its own, at
// the next listing, and the second's event is removed once old enough.
func TestEventOverwrittenLater(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	for _, c := range crashCases {
		if c.action != "instances.set" && c.action != "user.grant_privilege" && c.action != "dive.register" {
			continue
		}
		for _, made := range []bool{true, false} {
			for _, laterAudited := range []bool{true, false} {
				name := c.action + "/made, then overwritten"
				if !made {
					name = c.action + "/not made, then overwritten"
				}
				if !laterAudited {
					name += " by a change without an event"
				}
				t.Run(name, func(t *testing.T) {
					s := newTestStore(t)
					w := newCrashWorld(t, s)
					ch := c.change(s, w)
					aud, first := withEvent(ch.org, c.action, ch.target)
					stop := stepEventPending
					if made {
						stop = c.changed
					}
					crashAfter(s, stop)
					_ = ch.call(t.Context(), aud)
					s.afterStep = nil

					aud, second := withEvent(ch.org, c.action, ch.target)
					want := []string{}
					if laterAudited {
						want = append(want, second)
					} else {
						aud = nil
					}
					require.NoError(t, ch.call(t.Context(), aud), "the later change")
					settle(t, s, ch.org, t0, true)
					if made {
						require.ElementsMatch(t, append(want, first), listed(t, s, ch.org))
						return
					}
					require.Equal(t, want, listed(t, s, ch.org))
					settle(t, s, ch.org, later, true)
					require.Equal(t, want, listed(t, s, ch.org))
					require.Zero(t, eventCount(t, s, first, false), "the event of the change never made is removed")
				})
			}
		}
	}
}

// A change of a user whose event was left pending is told apart from
// one never made after the user is deleted too: the deletion confirms
// the event it overwrites in the user's document, and confirms its own
// before it removes the last of the user.
func TestEventOfDeletedUser(t *testing.T) {
	later := t0.Add(pendingGrace + time.Second)
	for _, c := range crashCases {
		if c.action != "instances.set" && c.action != "user.grant_privilege" {
			continue
		}
		for _, made := range []bool{true, false} {
			for _, deletionAudited := range []bool{true, false} {
				name := c.action + "/made, then the user deleted"
				if !made {
					name = c.action + "/not made, then the user deleted"
				}
				if !deletionAudited {
					name += " without an event"
				}
				t.Run(name, func(t *testing.T) {
					s := newTestStore(t)
					w := newCrashWorld(t, s)
					ch := c.change(s, w)
					aud, first := withEvent(ch.org, c.action, ch.target)
					stop := stepEventPending
					if made {
						stop = c.changed
					}
					crashAfter(s, stop)
					_ = ch.call(t.Context(), aud)
					s.afterStep = nil

					aud, deletion := withEvent(w.org, "user.delete", w.alice.ID)
					want := []string{}
					if deletionAudited {
						want = append(want, deletion)
					} else {
						aud = nil
					}
					_, err := s.DeleteUser(t.Context(), w.org, w.alice.ID, aud)
					require.NoError(t, err)
					n, err := s.users.CountDocuments(t.Context(), bson.D{{Key: "uid", Value: w.alice.ID}})
					require.NoError(t, err)
					require.Zero(t, n, "nothing of the user is left")
					settle(t, s, w.org, later, true)
					if made {
						require.ElementsMatch(t, append(want, first), listed(t, s, w.org))
					} else {
						require.Equal(t, want, listed(t, s, w.org))
						require.Zero(t, eventCount(t, s, first, false))
					}
				})
			}
		}
	}
}

// A token or embed session whose creation's event was left pending, and
// which is removed before any listing or Cleanup came (with its user, or
// by a later creation once expired), still has its creation shown: the
// removal confirms the event first.
func TestEventOfRemovedRecord(t *testing.T) {
	later := t0.Add(2 * time.Hour)
	// A creation of alice's: the target of its event and the call.
	type creation func(s *Store, w crashWorld) (target string, call func(ctx context.Context, a *storage.Audit) error)
	createToken := func(expires time.Time) creation {
		return func(s *Store, w crashWorld) (string, func(ctx context.Context, a *storage.Audit) error) {
			tok := crashToken(w.alice, expires)
			return tok.ID, func(ctx context.Context, a *storage.Audit) error {
				return s.CreateToken(ctx, tok, storage.TokenLimit{}, a)
			}
		}
	}
	session := func(w crashWorld) storage.EmbedSession {
		es := crashSession(w.alice)
		es.DiveID = w.dive.ID
		return es
	}
	createSession := func(s *Store, w crashWorld) (string, func(ctx context.Context, a *storage.Audit) error) {
		es := session(w)
		return w.dive.ID, func(ctx context.Context, a *storage.Audit) error {
			return s.CreateEmbedSession(ctx, es, storage.SessionLimit{}, a)
		}
	}
	deleteAlice := func(t *testing.T, s *Store, w crashWorld) {
		_, err := s.DeleteUser(t.Context(), w.org, w.alice.ID, nil)
		require.NoError(t, err)
	}
	for _, c := range []struct {
		name, action string
		create       creation
		remove       func(t *testing.T, s *Store, w crashWorld)
	}{
		{"a token, its user deleted", "token.create", createToken(time.Time{}), deleteAlice},
		{"a session, its user deleted", "embed_session.create", createSession, deleteAlice},
		{"a token, expired and removed by the next creation", "token.create", createToken(t0.Add(10 * time.Minute)), func(t *testing.T, s *Store, w crashWorld) {
			require.NoError(t, s.CreateToken(t.Context(), crashToken(w.alice, time.Time{}), storage.TokenLimit{Max: 10, LiveAt: t0.Add(time.Hour)}, nil))
		}},
		{"a session, expired and removed by the next creation", "embed_session.create", createSession, func(t *testing.T, s *Store, w crashWorld) {
			next := session(w)
			next.CreatedAt, next.ExpiresAt = t0.Add(time.Hour), t0.Add(2*time.Hour)
			require.NoError(t, s.CreateEmbedSession(t.Context(), next, storage.SessionLimit{Max: 10, LiveAt: t0.Add(time.Hour)}, nil))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t)
			w := newCrashWorld(t, s)
			target, call := c.create(s, w)
			aud, id := withEvent(w.org, c.action, target)
			crashAfter(s, stepEventChanged)
			require.NoError(t, call(t.Context(), aud))
			s.afterStep = nil
			require.Equal(t, int64(1), eventCount(t, s, id, true))

			c.remove(t, s, w)
			settle(t, s, w.org, later, true)
			require.Equal(t, []string{id}, listed(t, s, w.org), "the creation was made")
		})
	}
}

// The pending event of a write still under way (its change not made yet)
// is left alone by listings and Cleanup, however often they run, until
// it is a minute old: the write then makes its change and confirms its
// event, which shows.
func TestEventInFlightNotRemoved(t *testing.T) {
	for _, c := range everyCrashCase() {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t)
			w := newCrashWorld(t, s)
			ch := c.change(s, w)
			aud, id := withEvent(ch.org, c.action, ch.target)
			pending, resume := make(chan struct{}), make(chan struct{})
			s.afterStep = func(step string) error {
				if step == stepEventPending {
					close(pending)
					<-resume
				}
				return nil
			}
			done := make(chan error, 1)
			go func() { done <- ch.call(t.Context(), aud) }()
			<-pending
			for _, byListing := range []bool{true, false, true} {
				settle(t, s, ch.org, t0.Add(pendingGrace-time.Millisecond), byListing)
				require.Empty(t, listed(t, s, ch.org))
				require.Equal(t, int64(1), eventCount(t, s, id, true), "the write under way keeps its event")
			}
			close(resume)
			require.NoError(t, <-done)
			require.Equal(t, []string{id}, listed(t, s, ch.org))
		})
	}
}

// leaveUnmade leaves n events of changes to Alice pending and unmade, as
// a writer killed after writing each would, recorded a millisecond apart
// from from; it returns their ids.
func leaveUnmade(t *testing.T, s *Store, w crashWorld, n int, from time.Time) []string {
	t.Helper()
	crashAfter(s, stepEventPending)
	defer func() { s.afterStep = nil }()
	var ids []string
	for i := range n {
		aud, id := withEvent(w.org, "instances.set", w.alice.ID)
		aud.Event.At = from.Add(time.Duration(i) * time.Millisecond)
		require.ErrorIs(t, s.SetInstances(t.Context(), w.org, w.alice.ID, w.alice.Instances, aud), errCrash)
		ids = append(ids, id)
	}
	return ids
}

// leaveMade makes a change to Alice, recorded at at, whose event stays
// pending, as a writer killed before confirming it would; it returns the
// event's id.
func leaveMade(t *testing.T, s *Store, w crashWorld, at time.Time) string {
	t.Helper()
	crashAfter(s, stepEventChanged)
	defer func() { s.afterStep = nil }()
	aud, id := withEvent(w.org, "instances.set", w.alice.ID)
	aud.Event.At = at
	require.NoError(t, s.SetInstances(t.Context(), w.org, w.alice.ID, w.alice.Instances, aud))
	return id
}

// A listing settles the pending events of its org a batch at a time,
// the oldest first, and walks past those it leaves pending (unmade and
// young), up to listSettleMax of them: a made change behind them shows
// its event at once.
func TestEventListingWalksPastPendingEvents(t *testing.T) {
	s := newTestStore(t)
	ctx := t.Context()
	w := newCrashWorld(t, s)
	var ids []string
	crashAfter(s, stepEventChanged)
	for i := range listSettleBatch + 1 {
		aud, id := withEvent(w.org, "instances.set", w.alice.ID)
		a := aud
		a.Event.At = t0.Add(time.Duration(i) * time.Millisecond)
		require.NoError(t, s.SetInstances(ctx, w.org, w.alice.ID, w.alice.Instances, a))
		ids = append(ids, id)
	}
	s.afterStep = nil
	settle(t, s, w.org, t0, true)
	// Each change confirmed the one it overwrote; the last is confirmed
	// by the listing, past a full batch.
	require.Len(t, listed(t, s, w.org), listSettleBatch+1)
	require.Zero(t, eventCount(t, s, ids[listSettleBatch], true))

	// More unmade events than a batch, younger than a minute, then a made
	// change: the listing shows the made one and keeps the unmade pending.
	t1 := t0.Add(time.Hour)
	young := leaveUnmade(t, s, w, 2*listSettleBatch+1, t1)
	done := leaveMade(t, s, w, t1.Add(time.Second))
	settle(t, s, w.org, t1.Add(2*time.Second), true)
	require.Equal(t, int64(1), eventCount(t, s, done, false))
	require.Zero(t, eventCount(t, s, done, true), "confirmed")
	for i, id := range young {
		require.Equal(t, int64(1), eventCount(t, s, id, true), "young event %d stays pending", i)
	}
	require.Len(t, listed(t, s, w.org), listSettleBatch+2)

	// Once they are a minute old, a listing removes them.
	settle(t, s, w.org, t1.Add(time.Hour), true)
	for i, id := range young {
		require.Zero(t, eventCount(t, s, id, false), "old event %d", i)
	}
}

// A listing reads at most listSettleMax pending events: a made change
// behind more unmade ones shows its event at a later listing.
func TestEventListingSettlesBoundedWalk(t *testing.T) {
	s := newTestStore(t)
	s.settleTime = time.Hour // the bound on the count alone, on a slow machine too
	w := newCrashWorld(t, s)
	pending := leaveUnmade(t, s, w, listSettleMax, t0)
	done := leaveMade(t, s, w, t0.Add(time.Minute))

	// Young: the walk stops at the bound, before the made change.
	settle(t, s, w.org, t0.Add(time.Minute), true)
	require.Equal(t, int64(1), eventCount(t, s, done, true), "still pending")
	// Old: the first listing removes the bound's worth, the second
	// reaches the made change.
	later := t0.Add(time.Hour)
	settle(t, s, w.org, later, true)
	require.Equal(t, int64(1), eventCount(t, s, done, true), "still pending")
	settle(t, s, w.org, later, true)
	require.Zero(t, eventCount(t, s, done, true))
	require.Equal(t, []string{done}, listed(t, s, w.org))
	for i, id := range pending {
		require.Zero(t, eventCount(t, s, id, false), "event %d", i)
	}
}

// A listing settles for at most s.settleTime, one event at least, so
// that a slow server answers a listing in time: with the time spent at
// once, each listing settles only the oldest pending event, and a made
// change behind others shows its event at the listing that reaches it.
func TestEventListingSettlesForABoundedTime(t *testing.T) {
	s := newTestStore(t)
	w := newCrashWorld(t, s)
	unmade := leaveUnmade(t, s, w, 3, t0)
	done := leaveMade(t, s, w, t0.Add(time.Second))

	s.settleTime = time.Nanosecond
	later := t0.Add(time.Hour)
	for i, id := range unmade {
		settle(t, s, w.org, later, true)
		require.Zero(t, eventCount(t, s, id, false), "listing %d removes event %d", i, i)
		for j, rest := range unmade[i+1:] {
			require.Equal(t, int64(1), eventCount(t, s, rest, true), "listing %d leaves event %d", i, i+1+j)
		}
		require.Equal(t, int64(1), eventCount(t, s, done, true), "listing %d leaves the made change pending", i)
		require.Empty(t, listed(t, s, w.org))
	}
	settle(t, s, w.org, later, true)
	require.Zero(t, eventCount(t, s, done, true))
	require.Equal(t, []string{done}, listed(t, s, w.org))
}

// On a server whose $inc is a read and then a write (FerretDB v1, which
// byPointer stands for), the confirmations of one process take counter
// values in turn: each inserts its event into audit_trail once, at the
// first value it took, however many run at once.
func TestConfirmationsOfOneProcessTakeValuesInTurn(t *testing.T) {
	sent := &commands{}
	c, err := mongo.Connect(options.Client().ApplyURI(testURI(t)).SetTimeout(testTimeout).
		SetMonitor(&event.CommandMonitor{Started: sent.started}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	s, err := New(t.Context(), newDB(t, c), Options{Timeout: testTimeout, MaxInFlight: -1})
	require.NoError(t, err)
	s.byPointer = true
	ctx := t.Context()
	org := uuid.NewString()
	const n = 24
	ends := make([]func(error), n)
	for i := range ends {
		a, _ := withEvent(org, "user.create", uuid.NewString())
		ends[i], err = s.beginEvent(ctx, a)
		require.NoError(t, err)
	}
	sent.take()
	var wg sync.WaitGroup
	for _, end := range ends {
		wg.Go(func() { end(nil) })
	}
	wg.Wait()

	inserts := 0
	for _, cmd := range sent.take() {
		if strings.HasPrefix(cmd, "insert "+trailColl+" ") {
			inserts++
		}
	}
	assert.Equal(t, n, inserts, "inserts into the trail")
	assert.Len(t, listed(t, s, org), n, "every event confirmed")
}

// Processes sharing the database still take one counter value at once on
// such a server: the trail's _id makes the later one take another, and
// the pending document tells a value taken from an event confirmed. Every
// event ends up in the trail once, at a value of its own.
func TestConfirmationsOfProcessesSharingTheDatabase(t *testing.T) {
	db := newDB(t, client(t))
	ctx := t.Context()
	org := uuid.NewString()
	const stores, each = 3, 12
	var ends []func(error)
	var ids []string
	for range stores {
		s, err := New(ctx, db, Options{Timeout: testTimeout, MaxInFlight: -1})
		require.NoError(t, err)
		s.byPointer = true
		for range each {
			a, id := withEvent(org, "user.create", uuid.NewString())
			end, err := s.beginEvent(ctx, a)
			require.NoError(t, err)
			ends, ids = append(ends, end), append(ids, id)
		}
	}
	var wg sync.WaitGroup
	for _, end := range ends {
		wg.Go(func() { end(nil) })
	}
	wg.Wait()

	var docs []trailDoc
	cur, err := db.Collection(trailColl).Find(ctx, bson.D{{Key: "org", Value: org}})
	require.NoError(t, err)
	require.NoError(t, cur.All(ctx, &docs))
	seqs := map[int64]bool{}
	var got []string
	for _, d := range docs {
		assert.False(t, seqs[d.Seq], "Seq %d given twice", d.Seq)
		seqs[d.Seq] = true
		got = append(got, d.EID)
	}
	assert.ElementsMatch(t, ids, got, "each event in the trail once")
	n, err := db.Collection(eventsColl).CountDocuments(ctx, bson.D{{Key: "org", Value: org}})
	require.NoError(t, err)
	assert.Zero(t, n, "no event left pending")
}

// A confirmation waiting for its process's turn stops when its context
// ends: the event stays pending, for the next listing or Cleanup.
func TestConfirmationWaitingItsTurnStopsWithItsContext(t *testing.T) {
	s := newTestStore(t)
	s.byPointer = true
	ctx, cancel := context.WithCancel(t.Context())
	a, id := withEvent(uuid.NewString(), "user.create", uuid.NewString())
	end, err := s.beginEvent(ctx, a)
	require.NoError(t, err)
	s.confirming <- struct{}{} // another confirmation has the turn
	defer func() { <-s.confirming }()
	cancel()
	done := make(chan struct{})
	go func() { end(nil); close(done) }()
	select {
	case <-done:
	case <-time.After(testTimeout):
		t.Fatal("the confirmation still waits for its turn after its context ended")
	}
	assert.Equal(t, int64(1), eventCount(t, s, id, true), "left pending")
}
