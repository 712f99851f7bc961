package instrumented

// One method per method of storage.Store, each timed as its operation.

import (
	"context"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// op is a method of storage.Store.
type op int

const (
	opCreateOrg op = iota
	opGetOrg
	opCreateUser
	opGetUser
	opSetPrivileges
	opSetInstances
	opDeleteUser
	opListUsers
	opCreateToken
	opReadAccess
	opListTokens
	opDeleteToken
	opSetDuckling
	opListActivity
	opPutDive
	opCreateDive
	opGetDive
	opGetEmbedTarget
	opCreateEmbedSession
	opEmbedSessionByDigest
	opMarkSeeded
	opSeedMarks
	opAddFeedback
	opListEvents
	opPing

	numOps
)

// opNames are the operations' names, as the metrics and spans give them.
var opNames = [numOps]string{
	opCreateOrg:            "CreateOrg",
	opListEvents:           "ListEvents",
	opGetOrg:               "GetOrg",
	opCreateUser:           "CreateUser",
	opGetUser:              "GetUser",
	opSetPrivileges:        "SetPrivileges",
	opSetInstances:         "SetInstances",
	opDeleteUser:           "DeleteUser",
	opListUsers:            "ListUsers",
	opCreateToken:          "CreateToken",
	opReadAccess:           "ReadAccess",
	opListTokens:           "ListTokens",
	opDeleteToken:          "DeleteToken",
	opSetDuckling:          "SetDuckling",
	opListActivity:         "ListActivity",
	opPutDive:              "PutDive",
	opCreateDive:           "CreateDive",
	opGetDive:              "GetDive",
	opGetEmbedTarget:       "GetEmbedTarget",
	opCreateEmbedSession:   "CreateEmbedSession",
	opEmbedSessionByDigest: "EmbedSessionByDigest",
	opMarkSeeded:           "MarkSeeded",
	opSeedMarks:            "SeedMarks",
	opAddFeedback:          "AddFeedback",
	opPing:                 "Ping",
}

// CreateOrg implements storage.Store.
func (s *Store) CreateOrg(ctx context.Context, o storage.Org, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opCreateOrg)
	err := s.next.CreateOrg(ctx, o, a)
	s.end(c, err)
	return err
}

// GetOrg implements storage.Store.
func (s *Store) GetOrg(ctx context.Context, id string) (storage.Org, error) {
	ctx, c := s.begin(ctx, opGetOrg)
	v, err := s.next.GetOrg(ctx, id)
	s.end(c, err)
	return v, err
}

// CreateUser implements storage.Store.
func (s *Store) CreateUser(ctx context.Context, u storage.User, lim storage.UserLimit, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opCreateUser)
	err := s.next.CreateUser(ctx, u, lim, a)
	s.end(c, err)
	return err
}

// GetUser implements storage.Store.
func (s *Store) GetUser(ctx context.Context, org, folded string) (storage.User, error) {
	ctx, c := s.begin(ctx, opGetUser)
	v, err := s.next.GetUser(ctx, org, folded)
	s.end(c, err)
	return v, err
}

// SetPrivileges implements storage.Store.
func (s *Store) SetPrivileges(ctx context.Context, org, userID string, from, to []string, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opSetPrivileges)
	err := s.next.SetPrivileges(ctx, org, userID, from, to, a)
	s.end(c, err)
	return err
}

// SetInstances implements storage.Store.
func (s *Store) SetInstances(ctx context.Context, org, userID string, cfg storage.InstanceConfig, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opSetInstances)
	err := s.next.SetInstances(ctx, org, userID, cfg, a)
	s.end(c, err)
	return err
}

// DeleteUser implements storage.Store.
func (s *Store) DeleteUser(ctx context.Context, org, userID string, a *storage.Audit) (storage.User, error) {
	ctx, c := s.begin(ctx, opDeleteUser)
	v, err := s.next.DeleteUser(ctx, org, userID, a)
	s.end(c, err)
	return v, err
}

// ListUsers implements storage.Store.
func (s *Store) ListUsers(ctx context.Context, org string, q storage.UserQuery) (storage.UserPage, error) {
	ctx, c := s.begin(ctx, opListUsers)
	v, err := s.next.ListUsers(ctx, org, q)
	s.end(c, err)
	return v, err
}

// CreateToken implements storage.Store.
func (s *Store) CreateToken(ctx context.Context, t storage.Token, lim storage.TokenLimit, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opCreateToken)
	err := s.next.CreateToken(ctx, t, lim, a)
	s.end(c, err)
	return err
}

// ReadAccess implements storage.Store.
func (s *Store) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	ctx, c := s.begin(ctx, opReadAccess)
	v, err := s.next.ReadAccess(ctx, q)
	s.end(c, err)
	return v, err
}

// ListTokens implements storage.Store.
func (s *Store) ListTokens(ctx context.Context, org, userID string, liveAt time.Time) ([]storage.Token, error) {
	ctx, c := s.begin(ctx, opListTokens)
	v, err := s.next.ListTokens(ctx, org, userID, liveAt)
	s.end(c, err)
	return v, err
}

// DeleteToken implements storage.Store.
func (s *Store) DeleteToken(ctx context.Context, org, userID, id string, r storage.Revocation, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opDeleteToken)
	err := s.next.DeleteToken(ctx, org, userID, id, r, a)
	s.end(c, err)
	return err
}

// SetDuckling implements storage.Store.
func (s *Store) SetDuckling(ctx context.Context, d storage.Duckling) error {
	ctx, c := s.begin(ctx, opSetDuckling)
	err := s.next.SetDuckling(ctx, d)
	s.end(c, err)
	return err
}

// ListActivity implements storage.Store.
func (s *Store) ListActivity(ctx context.Context, org string) ([]storage.Activity, error) {
	ctx, c := s.begin(ctx, opListActivity)
	v, err := s.next.ListActivity(ctx, org)
	s.end(c, err)
	return v, err
}

// PutDive implements storage.Store.
func (s *Store) PutDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opPutDive)
	err := s.next.PutDive(ctx, d, a)
	s.end(c, err)
	return err
}

// CreateDive implements storage.Store.
func (s *Store) CreateDive(ctx context.Context, d storage.Dive, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opCreateDive)
	err := s.next.CreateDive(ctx, d, a)
	s.end(c, err)
	return err
}

// GetDive implements storage.Store.
func (s *Store) GetDive(ctx context.Context, org, id string) (storage.Dive, error) {
	ctx, c := s.begin(ctx, opGetDive)
	v, err := s.next.GetDive(ctx, org, id)
	s.end(c, err)
	return v, err
}

// GetEmbedTarget implements storage.Store.
func (s *Store) GetEmbedTarget(ctx context.Context, org, diveID, folded string) (storage.EmbedTarget, error) {
	ctx, c := s.begin(ctx, opGetEmbedTarget)
	v, err := s.next.GetEmbedTarget(ctx, org, diveID, folded)
	s.end(c, err)
	return v, err
}

// CreateEmbedSession implements storage.Store.
func (s *Store) CreateEmbedSession(ctx context.Context, es storage.EmbedSession, lim storage.SessionLimit, a *storage.Audit) error {
	ctx, c := s.begin(ctx, opCreateEmbedSession)
	err := s.next.CreateEmbedSession(ctx, es, lim, a)
	s.end(c, err)
	return err
}

// EmbedSessionByDigest implements storage.Store.
func (s *Store) EmbedSessionByDigest(ctx context.Context, digest storage.Digest) (storage.EmbedSession, error) {
	ctx, c := s.begin(ctx, opEmbedSessionByDigest)
	v, err := s.next.EmbedSessionByDigest(ctx, digest)
	s.end(c, err)
	return v, err
}

// MarkSeeded implements storage.Store.
func (s *Store) MarkSeeded(ctx context.Context, org string, keys []string) error {
	ctx, c := s.begin(ctx, opMarkSeeded)
	err := s.next.MarkSeeded(ctx, org, keys)
	s.end(c, err)
	return err
}

// SeedMarks implements storage.Store.
func (s *Store) SeedMarks(ctx context.Context, org string) ([]string, error) {
	ctx, c := s.begin(ctx, opSeedMarks)
	v, err := s.next.SeedMarks(ctx, org)
	s.end(c, err)
	return v, err
}

// AddFeedback implements storage.Store.
func (s *Store) AddFeedback(ctx context.Context, f storage.Feedback) error {
	ctx, c := s.begin(ctx, opAddFeedback)
	err := s.next.AddFeedback(ctx, f)
	s.end(c, err)
	return err
}

// ListEvents implements storage.Store.
func (s *Store) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	ctx, c := s.begin(ctx, opListEvents)
	v, err := s.next.ListEvents(ctx, org, q)
	s.end(c, err)
	return v, err
}

// Ping implements storage.Store.
func (s *Store) Ping(ctx context.Context) error {
	ctx, c := s.begin(ctx, opPing)
	err := s.next.Ping(ctx)
	s.end(c, err)
	return err
}
