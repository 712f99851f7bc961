package servicetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Counter wraps a Store and counts the writes that succeeded, for tests
// that must prove a refused request stored nothing. Reads pass through
// uncounted; a write that fails is not counted, since the storage contract
// says it changed nothing.
type Counter struct {
	storage.Store
	writes atomic.Int64
}

var _ storage.Store = (*Counter)(nil)

// NewCounter returns a Counter over s.
func NewCounter(s storage.Store) *Counter { return &Counter{Store: s} }

// Writes returns how many writes succeeded so far.
func (c *Counter) Writes() int64 { return c.writes.Load() }

func (c *Counter) count(err error) error {
	if err == nil {
		c.writes.Add(1)
	}
	return err
}

// CreateOrg implements storage.Store.
func (c *Counter) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) error {
	return c.count(c.Store.CreateOrg(ctx, o, a))
}

// CreateUser implements storage.Store.
func (c *Counter) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	return c.count(c.Store.CreateUser(ctx, u, lim, a))
}

// SetPrivileges implements storage.Store.
func (c *Counter) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) error {
	return c.count(c.Store.SetPrivileges(ctx, org, userID, from, to, a))
}

// SetInstances implements storage.Store.
func (c *Counter) SetInstances(ctx context.Context, org, userID string, cfg storage.InstanceConfig, a *storage.Audit) error {
	return c.count(c.Store.SetInstances(ctx, org, userID, cfg, a))
}

// DeleteUser implements storage.Store.
func (c *Counter) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	u, err := c.Store.DeleteUser(ctx, org, userID, a)
	return u, c.count(err)
}

// CreateToken implements storage.Store.
func (c *Counter) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	return c.count(c.Store.CreateToken(ctx, t, lim, a))
}

// DeleteToken implements storage.Store.
func (c *Counter) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	return c.count(c.Store.DeleteToken(ctx, org, userID, id, r, a))
}

// SetDuckling implements storage.Store.
func (c *Counter) SetDuckling(ctx context.Context, d storage.Duckling) error {
	return c.count(c.Store.SetDuckling(ctx, d))
}

// PutDive implements storage.Store.
func (c *Counter) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return c.count(c.Store.PutDive(ctx, d, a))
}

// CreateDive implements storage.Store.
func (c *Counter) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	return c.count(c.Store.CreateDive(ctx, d, a))
}

// CreateEmbedSession implements storage.Store.
func (c *Counter) CreateEmbedSession(ctx context.Context, s storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	return c.count(c.Store.CreateEmbedSession(ctx, s, lim, a))
}

// AddFeedback implements storage.Store.
func (c *Counter) AddFeedback(ctx context.Context, f storage.Feedback) error {
	return c.count(c.Store.AddFeedback(ctx, f))
}

// State is what a store holds for some organizations, as Snapshot reads
// it. Equal states (reflect.DeepEqual) mean equal observable state.
type State struct {
	// Orgs holds the organizations that exist.
	Orgs map[string]storage.Org
	// Users holds each organization's users in listing order, with their
	// instance configurations.
	Users map[string][]storage.User
	// Tokens holds every token of each user (expired ones included), by
	// user id.
	Tokens map[string][]storage.Token
	// Activity holds each organization's Duckling reports, each user's
	// sorted by Duckling id.
	Activity map[string][]storage.Activity
	// Dives holds the Dives that exist among those asked for, by
	// organization and id ("org/id").
	Dives map[string]storage.Dive
}

// Snapshot reads, for tests that must prove a refused request stored
// nothing, what s holds for the organizations orgs: each one's
// record, its users with their instance configurations, every token of
// each user, the Duckling reports, and those of the Dives dives that exist
// in it. Embed sessions and feedback cannot be listed; Counter counts
// their writes.
func Snapshot(ctx context.Context, s storage.Store, orgs, dives []string) (State, error) {
	st := State{
		Orgs:     map[string]storage.Org{},
		Users:    map[string][]storage.User{},
		Tokens:   map[string][]storage.Token{},
		Activity: map[string][]storage.Activity{},
		Dives:    map[string]storage.Dive{},
	}
	for _, org := range orgs {
		o, err := s.GetOrg(ctx, org)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			continue
		case err != nil:
			return State{}, fmt.Errorf("get org %q: %w", org, err)
		}
		st.Orgs[org] = o
		page, err := s.ListUsers(ctx, org, storage.UserQuery{Limit: math.MaxInt32})
		if err != nil {
			return State{}, fmt.Errorf("list users of %q: %w", org, err)
		}
		st.Users[org] = page.Users
		for _, u := range page.Users {
			// The zero instant is before every expiry: all tokens are listed.
			toks, err := s.ListTokens(ctx, org, u.ID, time.Time{})
			if err != nil {
				return State{}, fmt.Errorf("list tokens of %q: %w", u.Username, err)
			}
			st.Tokens[u.ID] = toks
		}
		acts, err := s.ListActivity(ctx, org)
		if err != nil {
			return State{}, fmt.Errorf("list activity of %q: %w", org, err)
		}
		for _, a := range acts {
			// A user's Ducklings come in no particular order.
			slices.SortFunc(a.Ducklings, func(x, y storage.Duckling) int { return strings.Compare(x.ID, y.ID) })
		}
		st.Activity[org] = acts
		for _, id := range dives {
			d, err := s.GetDive(ctx, org, id)
			switch {
			case errors.Is(err, storage.ErrNotFound):
			case err != nil:
				return State{}, fmt.Errorf("get dive %q of %q: %w", id, org, err)
			default:
				st.Dives[org+"/"+id] = d
			}
		}
	}
	return st, nil
}
