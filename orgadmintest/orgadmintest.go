// Package orgadmintest runs an in-process fake of the hosted orgadmin API
// for test suites, in the spirit of net/http/httptest and miniredis.
//
// It is not a mock: it is the real Service with the real /v1 handlers, the
// page-feedback endpoint and the OpenAPI document (/docs/specs), on the
// in-memory store, served by an httptest.Server. Its clock stands still
// until the test moves it with FastForward, so token expiry and Duckling
// cooldowns happen exactly when a test says.
//
//	srv := orgadmintest.NewServer(t)
//	c := client.New(srv.URL(), srv.AdminToken())
//
// NewServer bootstraps the organization "default" (WithOrg) with the human
// Admin "admin" (WithAdmin), whose token AdminToken returns. Seed users,
// tokens, Dives and Duckling activity from Go (CreateUser, CreateToken,
// RegisterDive, MarkDucklingActive, ...) or in the seed format of the
// example server (Seed, SeedJSON, SeedFile, WithSeed), and inspect the state
// directly (User, Users, Tokens, InstanceConfig, ActiveAccounts). Methods
// that seed or inspect fail the test on error, as t.Fatal does, so they
// must be called from the test's goroutine; Service gives the full Go API
// for anything else. Run starts a Server without a test.
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
	"testing"
	"time"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// Server is a running fake of the API. Its methods are safe for concurrent
// use, but those that fail the test must be called from the test's
// goroutine.
type Server struct {
	tb         testing.TB
	clock      *fakeclock.Clock
	svc        *orgadmin.Service
	srv        *httptest.Server
	org        string
	admin      string
	adminToken string
	closeOnce  sync.Once
}

// options collects what the Options set.
type options struct {
	org, admin, adminToken string
	start                  time.Time
	cfg                    orgadmin.Config
	seeds                  []orgadmin.Seed
	seedFiles              []string
	logger                 *slog.Logger
	feedbackPerMinute      int
}

// Option configures a Server.
type Option func(*options)

// WithOrg names the organization NewServer bootstraps; default "default".
func WithOrg(id string) Option { return func(o *options) { o.org = id } }

// WithAdmin names the Admin NewServer bootstraps; default "admin".
func WithAdmin(username string) Option { return func(o *options) { o.admin = username } }

// WithAdminToken makes value (16 to 512 printable ASCII characters) the
// Admin's token, instead of a newly minted one.
func WithAdminToken(value string) Option { return func(o *options) { o.adminToken = value } }

// WithStart sets where the clock starts; default the real time when
// NewServer is called.
func WithStart(t time.Time) Option { return func(o *options) { o.start = t } }

// WithConfig configures the Service (token limit, default instance
// configuration, embed-session lifetime, Duckling lease, random source).
// Its Now is ignored: the Server's clock is the only one.
func WithConfig(cfg orgadmin.Config) Option { return func(o *options) { o.cfg = cfg } }

// WithSeed loads a fixture at start, after the bootstrap. It may be given
// several times.
func WithSeed(sd orgadmin.Seed) Option { return func(o *options) { o.seeds = append(o.seeds, sd) } }

// WithSeedFile loads a JSON fixture file (the example server's -seed
// format) at start, after the bootstrap and WithSeed fixtures.
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
	return start(nil, opts)
}

func start(tb testing.TB, opts []Option) (*Server, error) {
	o := options{org: "default", admin: "admin"}
	for _, opt := range opts {
		opt(&o)
	}
	if o.start.IsZero() {
		o.start = time.Now()
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{tb: tb, clock: fakeclock.New(o.start), org: o.org, admin: o.admin}
	cfg := o.cfg
	cfg.Now = s.clock.Now
	s.svc = orgadmin.New(memstore.New(), cfg)

	ctx := s.ctx()
	token, err := s.svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: o.org, Username: o.admin, Token: o.adminToken})
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	s.adminToken = token
	for _, sd := range o.seeds {
		if err := s.svc.ApplySeed(ctx, sd); err != nil {
			return nil, err
		}
	}
	for _, f := range o.seedFiles {
		sd, err := readSeedFile(f)
		if err != nil {
			return nil, err
		}
		if err := s.svc.ApplySeed(ctx, sd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}

	api := httpserver.New(s.svc, httpserver.Config{Logger: o.logger})
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.Handle("/healthz", httpserver.Health(s.svc))
	mux.Handle(httpserver.FeedbackPath, httpserver.NewFeedback(s.svc, httpserver.FeedbackConfig{
		Logger: o.logger, PerMinute: o.feedbackPerMinute, Now: s.clock.Now,
	}))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !httpserver.CleanPath(r.URL.EscapedPath()) { // a 404, as the example server answers
			api.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	return s, nil
}

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
func (s *Server) ctx() context.Context {
	if s.tb != nil {
		return s.tb.Context()
	}
	return context.Background()
}

// URL returns the base URL of the API, such as "http://127.0.0.1:39127",
// with no trailing slash. The /v1 operations are under it, the OpenAPI
// document at /docs/specs, the feedback endpoint at
// /docs/api/feedback/agent and a health check at /healthz.
func (s *Server) URL() string { return s.srv.URL }

// Client returns an *http.Client that talks to the Server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// AdminToken returns the token of the bootstrapped Admin.
func (s *Server) AdminToken() string { return s.adminToken }

// Org returns the id of the bootstrapped organization, which the seeding
// and inspection methods act in.
func (s *Server) Org() string { return s.org }

// Admin returns the username of the bootstrapped Admin.
func (s *Server) Admin() string { return s.admin }

// Service returns the Service behind the API, for everything the Go API
// offers beyond these methods.
func (s *Server) Service() *orgadmin.Service { return s.svc }

// Now returns the time on the Server's clock.
func (s *Server) Now() time.Time { return s.clock.Now() }

// FastForward moves the Server's clock forward by d: tokens whose ttl runs
// out stop authenticating, idle Ducklings cool down and stop, embed sessions
// expire and the feedback rate limit refills. A negative d fails the test.
func (s *Server) FastForward(d time.Duration) {
	if d < 0 {
		s.helper()
		s.fatal(fmt.Sprintf("FastForward(%v)", d), errors.New("the clock only moves forward"))
	}
	s.clock.Advance(d)
}

// Close shuts the Server down. NewServer registers it with tb.Cleanup;
// calling it again does nothing.
func (s *Server) Close() {
	s.closeOnce.Do(s.srv.Close)
}

// fatal fails the test with err, naming what was being done (or panics,
// for a Server started by Run).
func (s *Server) fatal(what string, err error) {
	msg := "orgadmintest: " + what + ": " + err.Error()
	if what == "" {
		msg = "orgadmintest: " + err.Error()
	}
	if s.tb == nil {
		panic(msg)
	}
	s.helper()
	s.tb.Fatal(msg)
}

// helper marks the caller as a test helper, when there is a test.
func (s *Server) helper() {
	if s.tb != nil {
		s.tb.Helper()
	}
}

// Seed loads a fixture (organizations, users with their tokens, instance
// configurations and Duckling activity, Dives) as the example server's
// -seed flag does; what exists already is left as it is. It fails the test
// when the fixture breaks a rule.
func (s *Server) Seed(sd orgadmin.Seed) {
	s.helper()
	if err := s.svc.ApplySeed(s.ctx(), sd); err != nil {
		s.fatal("", err) // it says "seed: "
	}
}

// SeedJSON loads a fixture written in JSON, in the seed format of the
// example server (orgadmin.DecodeSeed; README, "Configuration").
func (s *Server) SeedJSON(fixture string) {
	s.helper()
	sd, err := orgadmin.DecodeSeed(strings.NewReader(fixture))
	if err != nil {
		s.fatal("", err) // it says "seed: "
	}
	s.Seed(sd)
}

// SeedFile loads a JSON fixture file.
func (s *Server) SeedFile(path string) {
	s.helper()
	sd, err := readSeedFile(path)
	if err != nil {
		s.fatal("", err)
	}
	if err := s.svc.ApplySeed(s.ctx(), sd); err != nil {
		s.fatal(path, err)
	}
}

// CreateUser creates a user in Org: a human user or Admin, or a service
// account, as nu says. It fails the test when nu breaks a rule, the
// username is taken or Org holds the maximum number of users.
func (s *Server) CreateUser(nu orgadmin.NewUser) orgadmin.User {
	s.helper()
	u, err := s.svc.CreateUser(s.ctx(), s.org, nu)
	if err != nil {
		s.fatal("create user "+nu.Username, err)
	}
	return u
}

// CreateServiceAccount creates a service account (role Member) in Org.
func (s *Server) CreateServiceAccount(username string) orgadmin.User {
	s.helper()
	return s.CreateUser(orgadmin.NewUser{Username: username, IsServiceAccount: true})
}

// GrantPrivilege grants a privilege (such as
// orgadmin.PrivilegeViewAllMembers) to the user of Org.
func (s *Server) GrantPrivilege(username, privilege string) {
	s.helper()
	if err := s.svc.GrantPrivilege(s.ctx(), s.org, username, privilege); err != nil {
		s.fatal("grant privilege", err)
	}
}

// CreateToken stores a new token for the user of Org, of any kind (human
// users included) and returns its value. in.Name defaults to "test"; a TTL
// counts from the Server's clock.
func (s *Server) CreateToken(username string, in orgadmin.CreateTokenInput) string {
	s.helper()
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	value := "oat_test_" + hex.EncodeToString(b[:])
	if in.Name == "" {
		in.Name = "test"
	}
	if _, err := s.svc.SeedToken(s.ctx(), s.org, username, orgadmin.SeedTokenInput{CreateTokenInput: in, Value: value}); err != nil {
		s.fatal("create token for "+username, err)
	}
	return value
}

// RegisterDive creates or replaces a Dive of Org.
func (s *Server) RegisterDive(d orgadmin.Dive) {
	s.helper()
	if err := s.svc.RegisterDive(s.ctx(), s.org, d); err != nil {
		s.fatal("register dive", err)
	}
}

// MarkDucklingActive reports the Duckling id ("rw" or "rs.N") of the user
// of Org as running and busy, for the Service's lease (10 minutes unless
// WithConfig says otherwise) unless reported again.
func (s *Server) MarkDucklingActive(username, id string) {
	s.helper()
	if err := s.svc.MarkDucklingActive(s.ctx(), s.org, username, id); err != nil {
		s.fatal("mark duckling active", err)
	}
}

// MarkDucklingIdle reports the Duckling id of the user of Org as idle now:
// it is in cooldown for the effective cooldown of its side, then stops.
func (s *Server) MarkDucklingIdle(username, id string) {
	s.helper()
	if err := s.svc.MarkDucklingIdle(s.ctx(), s.org, username, id); err != nil {
		s.fatal("mark duckling idle", err)
	}
}

// adminCaller is the bootstrapped Admin as a Caller, for inspection.
func (s *Server) adminCaller() orgadmin.Caller {
	s.helper()
	c, err := s.svc.ActAs(s.ctx(), s.org, s.admin)
	if err != nil {
		s.fatal("act as "+s.admin, err)
	}
	return c
}

// User returns the user of Org named username (compared
// case-insensitively), and whether there is one.
func (s *Server) User(username string) (orgadmin.User, bool) {
	s.helper()
	u, err := s.svc.GetUser(s.ctx(), s.org, username)
	switch {
	case err == nil:
		return u, true
	case errors.Is(err, orgadmin.ErrNotFound), errors.Is(err, orgadmin.ErrBadRequest):
		return orgadmin.User{}, false
	}
	s.fatal("get user", err)
	return orgadmin.User{}, false
}

// Users returns every user of Org, ordered by case-folded username.
func (s *Server) Users() []orgadmin.User {
	s.helper()
	c := s.adminCaller()
	var out []orgadmin.User
	opt := orgadmin.ListUsersOptions{Limit: orgadmin.Ptr(orgadmin.MaxUserPageSize)}
	for {
		page, err := s.svc.ListUsers(s.ctx(), c, opt)
		if err != nil {
			s.fatal("list users", err)
		}
		out = append(out, page.Users...)
		if page.NextPageToken == "" {
			return out
		}
		opt.PageToken = page.NextPageToken
	}
}

// Tokens returns the live tokens of the user of Org, without values.
func (s *Server) Tokens(username string) []orgadmin.Token {
	s.helper()
	ts, err := s.svc.ListTokens(s.ctx(), s.adminCaller(), username)
	if err != nil {
		s.fatal("list tokens of "+username, err)
	}
	return ts
}

// InstanceConfig returns the instance configuration of the user of Org, as
// the API shows it.
func (s *Server) InstanceConfig(username string) orgadmin.InstanceConfig {
	s.helper()
	cfg, err := s.svc.GetInstanceConfig(s.ctx(), s.adminCaller(), username)
	if err != nil {
		s.fatal("get instance config of "+username, err)
	}
	return cfg
}

// ActiveAccounts returns the accounts of Org with running Ducklings, as
// the API shows them at the Server's current time.
func (s *Server) ActiveAccounts() []orgadmin.ActiveAccount {
	s.helper()
	accs, err := s.svc.GetActiveAccounts(s.ctx(), s.adminCaller())
	if err != nil {
		s.fatal("get active accounts", err)
	}
	return accs
}

// EmbedSession resolves an embed session value as a renderer would, and
// reports false when it is unknown, expired or its user was deleted.
func (s *Server) EmbedSession(value string) (orgadmin.EmbedSession, bool) {
	s.helper()
	es, err := s.svc.ResolveEmbedSession(s.ctx(), value)
	switch {
	case err == nil:
		return es, true
	case errors.Is(err, orgadmin.ErrNotFound):
		return orgadmin.EmbedSession{}, false
	}
	s.fatal("resolve embed session", err)
	return orgadmin.EmbedSession{}, false
}
