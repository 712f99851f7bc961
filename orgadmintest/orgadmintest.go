// Package orgadmintest runs an in-process fake of the hosted orgadmin API
// for test suites, in the spirit of net/http/httptest, miniredis and
// WireMock.
//
// It is not a mock: it is the real Service with the real /v1 handlers, the
// page-feedback endpoint and the OpenAPI document (/docs/specs), on the
// in-memory store, served by an httptest.Server. Its clock stands still
// until the test moves it with FastForward, so token expiry and Duckling
// cooldowns happen exactly when a test says. A clock that stands still
// still orders creations: records made one after the other are listed in
// that order (tokens "oldest first"), because the ids the Service mints
// increase in the order it mints them.
//
//	srv := orgadmintest.NewServer(t)
//	c := client.New(srv.URL(), srv.AdminToken())
//
// NewServer bootstraps the organization "default" (WithOrg) with the human
// Admin "admin" (WithAdmin), whose token AdminToken returns. Seed users,
// tokens, Dives and Duckling activity from Go (CreateUser, CreateToken,
// RegisterDive, MarkDucklingActive, ...) or in the seed format of the
// example server (Seed, SeedJSON, SeedFile, WithSeed), and inspect the
// state directly (User, Users, Tokens, InstanceConfig, ActiveAccounts).
// Those methods act in the bootstrapped organization; InOrg gives the same
// methods in any other.
//
// Methods that seed or inspect fail the test on error, as t.Fatal does, at
// the line of the test that called them (each calls t.Helper()), so they
// must be called from the test's goroutine; WithT gives them a subtest's
// (or, for a Server shared from TestMain, a test's) to fail instead.
// Service gives the full Go API for anything else. Run starts a Server
// without a test; its methods that would fail a test panic instead.
//
// To test how a program copes with a failing API, InjectFault makes
// requests (the next n, or those of one route) answer a chosen status with
// Retry-After, wait, or lose the connection, before or after the API acts
// on them; Journal lists the requests the Server received. Handler
// returns the whole fake as an http.Handler, to wrap or to mount.
package orgadmintest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// Server is a running fake of the API. Its methods are safe for concurrent
// use, but those that fail the test must be called from the goroutine of
// the test they fail: the one NewServer was given, or the one of WithT.
type Server struct {
	*server
	tb testing.TB // a panicTB for a Server of Run
}

// server is what every view of a Server (WithT) shares.
type server struct {
	opts  options
	clock *fakeclock.Clock
	// state is the Service and the routes that serve it, which Reset
	// replaces.
	state      atomic.Pointer[state]
	srv        *httptest.Server
	handler    http.Handler
	org        string
	admin      string
	adminToken string
	faults     faults
	journal    journal
	closeOnce  sync.Once
	closing    chan struct{} // closed as Close begins: faults stop waiting
}

// state is a Server's world: the Service on its own memory store, and
// the routes (the API, the health check, the feedback endpoint) that
// serve it.
type state struct {
	svc    *orgadmin.Service
	routes http.Handler
}

// options collects what the Options set.
type options struct {
	org, admin, adminToken string
	start                  time.Time
	cfg                    orgadmin.Config
	seeds                  []orgadmin.Seed
	seedFiles              []string
	fileSeeds              []orgadmin.Seed // seedFiles' fixtures, read at start
	logger                 *slog.Logger
	feedbackPerMinute      int
	journalSize            int
}

// Option configures a Server; a nil Option is ignored.
type Option func(*options)

// WithOrg names the organization NewServer bootstraps; default "default".
// An org id is case-sensitive, of the characters orgadmin.Service.CreateOrg
// allows; a malformed one fails the test at NewServer.
func WithOrg(id string) Option { return func(o *options) { o.org = id } }

// WithAdmin names the Admin NewServer bootstraps; default "admin".
func WithAdmin(username string) Option { return func(o *options) { o.admin = username } }

// WithAdminToken makes value (16 to 512 printable ASCII characters, no
// space) the Admin's token, instead of a newly minted one.
func WithAdminToken(value string) Option { return func(o *options) { o.adminToken = value } }

// WithStart sets where the clock starts; default the real time when
// NewServer is called.
func WithStart(t time.Time) Option { return func(o *options) { o.start = t } }

// WithConfig configures the Service (token limit, default instance
// configuration, embed-session lifetime, Duckling lease, random source).
// Its Now is ignored: the Server's clock is the only one.
func WithConfig(cfg orgadmin.Config) Option { return func(o *options) { o.cfg = cfg } }

// WithSeed loads a fixture at start, after the bootstrap. It may be given
// several times. The fixture is copied: changing sd afterwards changes
// neither the Server nor what Reset loads.
func WithSeed(sd orgadmin.Seed) Option {
	sd = cloneSeed(sd)
	return func(o *options) { o.seeds = append(o.seeds, sd) }
}

// WithSeedFile loads a JSON fixture file (the example server's -seed
// format) at start, after the bootstrap and WithSeed fixtures. The file
// is read once, at start: Reset loads what it held then.
func WithSeedFile(path string) Option {
	return func(o *options) { o.seedFiles = append(o.seedFiles, path) }
}

// WithLogger receives the request log; by default it is discarded.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithFeedbackRate sets how many feedback submissions one client may make
// per minute of the Server's clock; default 10.
func WithFeedbackRate(perMinute int) Option {
	return func(o *options) { o.feedbackPerMinute = perMinute }
}

// WithJournalSize sets how many requests the Journal keeps, the most
// recent; default DefaultJournalSize.
func WithJournalSize(n int) Option { return func(o *options) { o.journalSize = n } }

// NewServer starts a Server and registers its Close with tb.Cleanup. It
// fails the test when an option is invalid or a fixture breaks a rule.
func NewServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := start(tb, opts)
	if err != nil {
		tb.Fatalf("orgadmintest: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Run starts a Server outside a test, for an Example, a TestMain that
// shares one Server among tests, or a program. The caller must Close it.
// Its methods that would fail a test panic instead.
func Run(opts ...Option) (*Server, error) {
	return start(panicTB{}, opts)
}

// panicTB stands for the test of a Server started by Run: what would fail
// the test panics.
type panicTB struct{ testing.TB }

func (panicTB) Helper()                           {}
func (panicTB) Context() context.Context          { return context.Background() }
func (panicTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func start(tb testing.TB, opts []Option) (*Server, error) {
	o := options{org: "default", admin: "admin", journalSize: DefaultJournalSize}
	for _, opt := range opts {
		if opt != nil { // a nil Option is none
			opt(&o)
		}
	}
	if o.start.IsZero() {
		o.start = time.Now()
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, f := range o.seedFiles {
		sd, err := readSeedFile(f)
		if err != nil {
			return nil, err
		}
		o.fileSeeds = append(o.fileSeeds, sd)
	}
	s := &Server{tb: tb, server: &server{opts: o, clock: fakeclock.New(o.start), org: o.org, admin: o.admin, closing: make(chan struct{})}}
	s.journal.max = max(o.journalSize, 1)
	st, token, err := s.newState(o.adminToken)
	if err != nil {
		return nil, err
	}
	s.state.Store(st)
	s.adminToken = token
	routes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.state.Load().routes.ServeHTTP(w, r)
	})
	// The request id first, so that the journal and a fault's answer
	// carry it; the API's own LogRequests then adds none.
	s.handler = httpserver.LogRequests(o.logger, s.record(s.inject(routes)))
	s.srv = httptest.NewServer(s.handler)
	return s, nil
}

// newState makes the Server's world as its Options say, on a new memory
// store: the organization and its Admin, with adminToken as its token
// when it is not empty (the token it has is returned), then the
// fixtures.
func (s *Server) newState(adminToken string) (*state, string, error) {
	o := s.opts
	cfg := o.cfg
	cfg.Now = s.clock.Now
	svc := orgadmin.New(memstore.New(), cfg)

	ctx := s.ctx()
	token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: o.org, Username: o.admin, Token: adminToken})
	if err != nil {
		return nil, "", fmt.Errorf("bootstrap: %w", err)
	}
	for _, sd := range o.seeds {
		if err := svc.ApplySeed(ctx, sd); err != nil {
			return nil, "", err
		}
	}
	for i, sd := range o.fileSeeds {
		if err := svc.ApplySeed(ctx, sd); err != nil {
			return nil, "", fmt.Errorf("%s: %w", o.seedFiles[i], err)
		}
	}

	api := httpserver.New(svc, httpserver.Config{Logger: o.logger})
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.Handle("/healthz", httpserver.Health(svc))
	mux.Handle(httpserver.FeedbackPath, httpserver.NewFeedback(svc, httpserver.FeedbackConfig{
		Logger: o.logger, PerMinute: o.feedbackPerMinute, Now: s.clock.Now,
	}))
	routes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpserver.CleanPath(r.URL.EscapedPath()) { // a 404, as the example server answers
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
	return &state{svc: svc, routes: routes}, token, nil
}

// Reset puts the Server back as NewServer (or Run) left it, for tests
// that share one Server (a TestMain's, or a parent test's): a new, empty
// store holding the organization and its Admin, whose token is still
// AdminToken, and the fixtures of the Options, loaded again; the clock
// back at its start; no faults and an empty journal. The URL stays. A
// *orgadmin.Service that Service returned before keeps the old state:
// call Service again. Requests in flight finish on the old state. It
// fails the test when the fixtures cannot be loaded again (a seed file
// changed since, say).
func (s *Server) Reset() {
	s.tb.Helper()
	s.clock.Set(s.opts.start)
	st, _, err := s.newState(s.adminToken)
	if err != nil {
		s.fatal("reset", err)
		return
	}
	s.state.Store(st)
	s.ClearFaults()
	s.ResetJournal()
}

// svc is the Service of the Server's current state.
func (s *Server) svc() *orgadmin.Service { return s.state.Load().svc }

// readSeedFile reads the fixture of path; its errors name path once.
func readSeedFile(path string) (orgadmin.Seed, error) {
	f, err := os.Open(path) // #nosec G304 -- the test suite names its own fixture file
	if err != nil {
		return orgadmin.Seed{}, err // *PathError: it names path
	}
	defer f.Close()
	sd, err := orgadmin.DecodeSeed(f)
	if err != nil {
		return orgadmin.Seed{}, fmt.Errorf("%s: %w", path, err)
	}
	return sd, nil
}

// ctx is the context of the Server's own calls: the test's while it runs.
func (s *Server) ctx() context.Context { return s.tb.Context() }

// URL returns the base URL of the API, such as "http://127.0.0.1:39127",
// with no trailing slash. The /v1 operations are under it, the OpenAPI
// document at /docs/specs, the feedback endpoint at
// /docs/api/feedback/agent and a health check at /healthz.
func (s *Server) URL() string { return s.srv.URL }

// Client returns an *http.Client that talks to the Server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Handler returns the fake as an http.Handler: the API, the health check
// and the feedback endpoint, with the injected faults and the journal, as
// the Server serves them. Wrap it in middleware of your own and serve it
// with httptest.NewServer, or mount it in a mux (which redirects unclean
// paths, such as /v1/users/robot/tokens/.., to other routes before the
// fake can answer them a 404; see httpserver.CleanPath); the Server's
// clock, seed and inspection methods act on it alike.
func (s *Server) Handler() http.Handler { return s.handler }

// AdminToken returns the token of the bootstrapped Admin.
func (s *Server) AdminToken() string { return s.adminToken }

// Org returns the id of the bootstrapped organization, which the seeding
// and inspection methods of the Server act in.
func (s *Server) Org() string { return s.org }

// Admin returns the username of the bootstrapped Admin.
func (s *Server) Admin() string { return s.admin }

// Service returns the Service behind the API, for everything the Go API
// offers beyond these methods.
func (s *Server) Service() *orgadmin.Service { return s.svc() }

// WithT returns the Server as seen from another test: a subtest's, or a
// test's of a Server shared from TestMain (Run). Its methods fail tb, and
// run under tb's context; everything else (the store, the clock, the
// faults, the journal, the URL) is s's. A method that fails a test
// must be called on the view of that test: through the Server of a
// parent, a subtest's failure would stop the parent (testing's "FailNow
// on a parent test"), and through the Server of Run it panics.
//
//	t.Run("alice", func(t *testing.T) {
//		srv := srv.WithT(t)
//		srv.CreateServiceAccount("alice")
//	})
func (s *Server) WithT(tb testing.TB) *Server {
	return &Server{server: s.server, tb: tb}
}

// Now returns the time on the Server's clock.
func (s *Server) Now() time.Time { return s.clock.Now() }

// FastForward moves the Server's clock forward by d: tokens whose ttl runs
// out stop authenticating, idle Ducklings cool down and stop, embed sessions
// expire and the feedback rate limit refills. A negative d fails the test.
func (s *Server) FastForward(d time.Duration) {
	s.tb.Helper()
	if d < 0 {
		s.fatal(fmt.Sprintf("FastForward(%v)", d), errors.New("the clock only moves forward"))
		return
	}
	s.clock.Advance(d)
}

// Close shuts the Server down. NewServer registers it with tb.Cleanup;
// calling it again does nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.srv.Close()
	})
}

// fatal fails the test with err, naming what was being done (or panics,
// for a Server started by Run).
func (s *Server) fatal(what string, err error) {
	s.tb.Helper()
	msg := "orgadmintest: " + what + ": " + err.Error()
	if what == "" {
		msg = "orgadmintest: " + err.Error()
	}
	s.tb.Fatal(msg)
}

// Seed loads a fixture (organizations, users with their tokens, instance
// configurations and Duckling activity, Dives) as the example server's
// -seed flag does; what exists already is left as it is. It fails the test
// when the fixture breaks a rule.
func (s *Server) Seed(sd orgadmin.Seed) {
	s.tb.Helper()
	if err := s.svc().ApplySeed(s.ctx(), sd); err != nil {
		s.fatal("", err) // it says "seed: "
	}
}

// SeedJSON loads a fixture written in JSON, in the seed format of the
// example server (orgadmin.DecodeSeed; README, "Configuration").
func (s *Server) SeedJSON(fixture string) {
	s.tb.Helper()
	sd, err := orgadmin.DecodeSeed(strings.NewReader(fixture))
	if err != nil {
		s.fatal("", err) // it says "seed: "
		return
	}
	s.Seed(sd)
}

// SeedFile loads a JSON fixture file.
func (s *Server) SeedFile(path string) {
	s.tb.Helper()
	sd, err := readSeedFile(path)
	if err != nil {
		s.fatal("", err)
		return
	}
	if err := s.svc().ApplySeed(s.ctx(), sd); err != nil {
		s.fatal(path, err)
	}
}

// InOrg returns the seeding and inspection methods in the organization id,
// which it creates if it does not exist. It fails the test for a malformed
// id (see orgadmin.Service.CreateOrg); ids are case-sensitive.
//
//	srv.SeedJSON(`{"organizations": [{"id": "acme", "users": [{"username": "alice"}]}]}`)
//	u, ok := srv.InOrg("acme").User("alice")
func (s *Server) InOrg(id string) *Org {
	s.tb.Helper()
	if err := s.svc().CreateOrg(s.ctx(), id); err != nil {
		s.fatal("create organization "+id, err)
	}
	return &Org{s: s, id: id}
}

// inOrg is the Org of the bootstrapped organization.
func (s *Server) inOrg() *Org { return &Org{s: s, id: s.org} }

// CreateUser creates a user in Org: a human user or Admin, or a service
// account, as nu says. It fails the test when nu breaks a rule, the
// username is taken or Org holds the maximum number of users.
func (s *Server) CreateUser(nu orgadmin.NewUser) orgadmin.User {
	s.tb.Helper()
	return s.inOrg().CreateUser(nu)
}

// CreateServiceAccount creates a service account (role Member) in Org.
func (s *Server) CreateServiceAccount(username string) orgadmin.User {
	s.tb.Helper()
	return s.inOrg().CreateServiceAccount(username)
}

// GrantPrivilege grants a privilege (such as
// orgadmin.PrivilegeViewAllMembers) to the user of Org.
func (s *Server) GrantPrivilege(username, privilege string) {
	s.tb.Helper()
	s.inOrg().GrantPrivilege(username, privilege)
}

// CreateToken stores a new token for the user of Org, of any kind (human
// users included) and returns its value. in.Name defaults to "test"; a TTL
// counts from the Server's clock.
func (s *Server) CreateToken(username string, in orgadmin.CreateTokenInput) string {
	s.tb.Helper()
	return s.inOrg().CreateToken(username, in)
}

// RegisterDive creates or replaces a Dive of Org.
func (s *Server) RegisterDive(d orgadmin.Dive) {
	s.tb.Helper()
	s.inOrg().RegisterDive(d)
}

// MarkDucklingActive reports the Duckling id ("rw" or "rs.N") of the user
// of Org as running and busy, for the Service's lease (10 minutes unless
// WithConfig says otherwise) unless reported again.
func (s *Server) MarkDucklingActive(username, id string) {
	s.tb.Helper()
	s.inOrg().MarkDucklingActive(username, id)
}

// MarkDucklingIdle reports the Duckling id of the user of Org as idle now:
// it is in cooldown for the effective cooldown of its side, then stops.
func (s *Server) MarkDucklingIdle(username, id string) {
	s.tb.Helper()
	s.inOrg().MarkDucklingIdle(username, id)
}

// User returns the user of Org named username (compared
// case-insensitively), and whether there is one.
func (s *Server) User(username string) (orgadmin.User, bool) {
	s.tb.Helper()
	return s.inOrg().User(username)
}

// Users returns every user of Org, ordered by case-folded username.
func (s *Server) Users() []orgadmin.User {
	s.tb.Helper()
	return s.inOrg().Users()
}

// Tokens returns the live tokens of the user of Org, without values,
// oldest first.
func (s *Server) Tokens(username string) []orgadmin.Token {
	s.tb.Helper()
	return s.inOrg().Tokens(username)
}

// InstanceConfig returns the instance configuration of the user of Org, as
// the API shows it.
func (s *Server) InstanceConfig(username string) orgadmin.InstanceConfig {
	s.tb.Helper()
	return s.inOrg().InstanceConfig(username)
}

// ActiveAccounts returns the accounts of Org with running Ducklings, as
// the API shows them at the Server's current time.
func (s *Server) ActiveAccounts() []orgadmin.ActiveAccount {
	s.tb.Helper()
	return s.inOrg().ActiveAccounts()
}

// AuditEvents returns the audit trail of Org, newest first: what the
// Server's GET /ext/audit/events shows an Admin.
func (s *Server) AuditEvents() []orgadmin.AuditEvent {
	s.tb.Helper()
	return s.inOrg().AuditEvents()
}

// EmbedSession resolves an embed session value as a renderer would, and
// reports false when it is unknown, expired or its user was deleted.
func (s *Server) EmbedSession(value string) (orgadmin.EmbedSession, bool) {
	s.tb.Helper()
	es, err := s.svc().ResolveEmbedSession(s.ctx(), value)
	switch {
	case err == nil:
		return es, true
	case errors.Is(err, orgadmin.ErrNotFound):
		return orgadmin.EmbedSession{}, false
	}
	s.fatal("resolve embed session", err)
	return orgadmin.EmbedSession{}, false
}

// Org is the seeding and inspection methods of a Server in one
// organization (Server.InOrg). They fail the test as the Server's do, at
// the caller's line.
type Org struct {
	s  *Server
	id string
}

// ID returns the organization's id.
func (o *Org) ID() string { return o.id }

// CreateUser creates a user in the organization: a human user or Admin,
// or a service account, as nu says. It fails the test when nu breaks a
// rule, the username is taken or the organization holds the maximum
// number of users.
func (o *Org) CreateUser(nu orgadmin.NewUser) orgadmin.User {
	o.s.tb.Helper()
	u, err := o.s.svc().CreateUser(o.s.ctx(), o.id, nu)
	if err != nil {
		o.s.fatal("create user "+nu.Username, err)
	}
	return u
}

// CreateServiceAccount creates a service account (role Member).
func (o *Org) CreateServiceAccount(username string) orgadmin.User {
	o.s.tb.Helper()
	return o.CreateUser(orgadmin.NewUser{Username: username, IsServiceAccount: true})
}

// GrantPrivilege grants a privilege to the user.
func (o *Org) GrantPrivilege(username, privilege string) {
	o.s.tb.Helper()
	if err := o.s.svc().GrantPrivilege(o.s.ctx(), o.id, username, privilege); err != nil {
		o.s.fatal("grant privilege", err)
	}
}

// CreateToken stores a new token for the user, of any kind (human users
// included) and returns its value. in.Name defaults to "test"; a TTL
// counts from the Server's clock.
func (o *Org) CreateToken(username string, in orgadmin.CreateTokenInput) string {
	o.s.tb.Helper()
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	value := "oat_test_" + hex.EncodeToString(b[:])
	if in.Name == "" {
		in.Name = "test"
	}
	if _, err := o.s.svc().SeedToken(o.s.ctx(), o.id, username, orgadmin.SeedTokenInput{CreateTokenInput: in, Value: value}); err != nil {
		o.s.fatal("create token for "+username, err)
	}
	return value
}

// RegisterDive creates or replaces a Dive.
func (o *Org) RegisterDive(d orgadmin.Dive) {
	o.s.tb.Helper()
	if err := o.s.svc().RegisterDive(o.s.ctx(), o.id, d); err != nil {
		o.s.fatal("register dive", err)
	}
}

// MarkDucklingActive reports the Duckling id ("rw" or "rs.N") of the user
// as running and busy.
func (o *Org) MarkDucklingActive(username, id string) {
	o.s.tb.Helper()
	if err := o.s.svc().MarkDucklingActive(o.s.ctx(), o.id, username, id); err != nil {
		o.s.fatal("mark duckling active", err)
	}
}

// MarkDucklingIdle reports the Duckling id of the user as idle now.
func (o *Org) MarkDucklingIdle(username, id string) {
	o.s.tb.Helper()
	if err := o.s.svc().MarkDucklingIdle(o.s.ctx(), o.id, username, id); err != nil {
		o.s.fatal("mark duckling idle", err)
	}
}

// User returns the user named username (compared case-insensitively), and
// whether there is one.
func (o *Org) User(username string) (orgadmin.User, bool) {
	o.s.tb.Helper()
	u, err := o.s.svc().GetUser(o.s.ctx(), o.id, username)
	switch {
	case err == nil:
		return u, true
	case errors.Is(err, orgadmin.ErrNotFound), errors.Is(err, orgadmin.ErrBadRequest):
		return orgadmin.User{}, false
	}
	o.s.fatal("get user", err)
	return orgadmin.User{}, false
}

// Users returns every user, ordered by case-folded username.
func (o *Org) Users() []orgadmin.User {
	o.s.tb.Helper()
	var out []orgadmin.User
	opt := orgadmin.ListUsersOptions{Limit: orgadmin.Some(orgadmin.MaxUserPageSize)}
	for u, err := range o.s.svc().AllUsers(o.s.ctx(), o.s.svc().ActAsOrg(o.id), opt) {
		if err != nil {
			o.s.fatal("list users", err)
			return nil
		}
		out = append(out, u)
	}
	return out
}

// AuditEvents returns the audit trail, newest first.
func (o *Org) AuditEvents() []orgadmin.AuditEvent {
	o.s.tb.Helper()
	var out []orgadmin.AuditEvent
	q := orgadmin.AuditQuery{Limit: orgadmin.Some(orgadmin.MaxAuditPageSize)}
	for e, err := range o.s.svc().AllAuditEvents(o.s.ctx(), o.s.svc().ActAsOrg(o.id), q) {
		if err != nil {
			o.s.fatal("list audit events", err)
			return nil
		}
		out = append(out, e)
	}
	return out
}

// Tokens returns the live tokens of the user, without values, oldest
// first.
func (o *Org) Tokens(username string) []orgadmin.Token {
	o.s.tb.Helper()
	ts, err := o.s.svc().ListTokens(o.s.ctx(), o.s.svc().ActAsOrg(o.id), username)
	if err != nil {
		o.s.fatal("list tokens of "+username, err)
	}
	return ts
}

// InstanceConfig returns the instance configuration of the user, as the
// API shows it.
func (o *Org) InstanceConfig(username string) orgadmin.InstanceConfig {
	o.s.tb.Helper()
	cfg, err := o.s.svc().GetInstanceConfig(o.s.ctx(), o.s.svc().ActAsOrg(o.id), username)
	if err != nil {
		o.s.fatal("get instance config of "+username, err)
	}
	return cfg
}

// ActiveAccounts returns the accounts with running Ducklings, as the API
// shows them at the Server's current time.
func (o *Org) ActiveAccounts() []orgadmin.ActiveAccount {
	o.s.tb.Helper()
	accs, err := o.s.svc().GetActiveAccounts(o.s.ctx(), o.s.svc().ActAsOrg(o.id))
	if err != nil {
		o.s.fatal("get active accounts", err)
	}
	return accs
}
