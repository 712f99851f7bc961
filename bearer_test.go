package orgadmin_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// readCounter is a memory store that counts its calls of ReadAccess.
type readCounter struct {
	*memstore.Store
	reads atomic.Int64
}

func (r *readCounter) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	r.reads.Add(1)
	return r.Store.ReadAccess(ctx, q)
}

// An operation called with a bearer token answers exactly what it answers
// for the Caller that Authenticate returns of the token, for every kind of
// caller and target, in the order of checks of either path; and it reads
// the credential and its target in one store call.
func TestBearerMatchesAuthenticatedCaller(t *testing.T) {
	clk := newFakeClock()
	store := &readCounter{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	ctx := context.Background()
	admin, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "Admin"})
	require.NoError(t, err)
	boss, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "globex", Username: "boss"})
	require.NoError(t, err)
	seed := func(org, user string, in orgadmin.CreateTokenInput) string {
		t.Helper()
		value := "value-of-" + org + "-" + user + "-" + strings.Repeat("x", 20) + in.Name
		_, err := svc.SeedToken(ctx, org, user, orgadmin.SeedTokenInput{Value: value, CreateTokenInput: in})
		require.NoError(t, err)
		return value
	}
	for _, u := range []orgadmin.NewUser{
		{Username: "bob", Role: orgadmin.RoleMember},
		{Username: "robot", Role: orgadmin.RoleMember, IsServiceAccount: true},
		{Username: "ghost", Role: orgadmin.RoleAdmin},
	} {
		_, err := svc.CreateUser(ctx, "acme", u)
		require.NoError(t, err)
	}
	_, err = svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "stranger", IsServiceAccount: true})
	require.NoError(t, err)
	bob := seed("acme", "bob", orgadmin.CreateTokenInput{Name: "b"})
	seed("acme", "robot", orgadmin.CreateTokenInput{Name: "r1"})
	seed("acme", "robot", orgadmin.CreateTokenInput{Name: "r2", TTL: orgadmin.Some(600 * time.Second)})
	seed("globex", "stranger", orgadmin.CreateTokenInput{Name: "s"})
	scaling := seed("acme", "Admin", orgadmin.CreateTokenInput{Name: "rs", Type: orgadmin.Some(orgadmin.TokenType("read_scaling"))})
	expiring := seed("acme", "Admin", orgadmin.CreateTokenInput{Name: "exp", TTL: orgadmin.Some(300 * time.Second)})
	ghost := seed("acme", "ghost", orgadmin.CreateTokenInput{Name: "g"})
	ghostCaller, err := svc.Authenticate(ctx, admin)
	require.NoError(t, err)
	_, err = svc.DeleteUser(ctx, ghostCaller, "ghost")
	require.NoError(t, err)
	clk.Advance(400 * time.Second) // expiring is dead, robot's r2 is live

	tokens := map[string]string{
		"Admin": admin, "Member": bob, "read_scaling": scaling, "expired": expiring,
		"deleted user": ghost, "Admin of globex": boss, "unknown": "never-issued-token",
		"empty": "", "too long": strings.Repeat("t", 513),
	}
	targets := []string{"admin", "ADMIN", "bob", "robot", "stranger", "nobody", "ghost", "not a name", strings.Repeat("n", 256), ""}
	reads := []struct {
		name string
		call func(a orgadmin.Auth, target string) (any, error)
	}{
		{"lists the tokens of", func(a orgadmin.Auth, target string) (any, error) { return svc.ListTokens(ctx, a, target) }},
		{"gets the configuration of", func(a orgadmin.Auth, target string) (any, error) {
			return svc.GetInstanceConfig(ctx, a, target)
		}},
	}
	for name, tok := range tokens {
		for _, target := range targets {
			for _, r := range reads {
				msg := name + " " + r.name + " " + target
				var want any
				c, wantErr := svc.Authenticate(ctx, tok)
				if wantErr == nil {
					want, wantErr = r.call(c, target)
				}
				before := store.reads.Load()
				got, err := r.call(orgadmin.Bearer(tok), target)
				if wantErr != nil {
					require.Error(t, err, msg)
					assert.Equal(t, wantErr.Error(), err.Error(), msg)
					assert.Equal(t, orgadmin.ErrorCode(wantErr), orgadmin.ErrorCode(err), msg)
				} else {
					require.NoError(t, err, msg)
					assert.Equal(t, want, got, msg)
				}
				if tok != "" && len(tok) <= 512 {
					assert.Equal(t, before+1, store.reads.Load(), "%s: one store read", msg)
				}
			}
		}
	}
}

// BenchmarkListTokens lists the Admin's ten tokens on the memory store,
// authentication included.
func BenchmarkListTokens(b *testing.B) {
	e := newEnv(b, orgadmin.Config{})
	for i := range 9 {
		e.token(b, "admin", orgadmin.CreateTokenInput{Name: strings.Repeat("n", i+1)})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if ts, err := e.svc.ListTokens(ctx, orgadmin.Bearer(e.adminToken), "admin"); err != nil || len(ts) != 10 {
			b.Fatal(err, len(ts))
		}
	}
}

// leakyStore is a memory store whose ReadAccess answers, as the target, a
// user of another org (its target org): a broken store.
type leakyStore struct {
	*memstore.Store
	other string
}

func (s leakyStore) ReadAccess(ctx context.Context, q storage.AccessQuery) (storage.Access, error) {
	a, err := s.Store.ReadAccess(ctx, q)
	if err == nil && q.Username != "" {
		if u, gerr := s.GetUser(ctx, s.other, q.Username); gerr == nil {
			a.Target, a.TargetFound = u, true
			a.Tokens, _ = s.ListTokens(ctx, s.other, u.ID, q.LiveAt)
		}
	}
	return a, err
}

// The Service never acts on a user of another org, whatever the store
// answers: the target a store reads with the credential must be of the
// credential's org, or it is missing.
func TestBearerNeverReachesAnotherOrg(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	svc := orgadmin.New(leakyStore{mem, "globex"}, orgadmin.Config{})
	admin, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	_, err = svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "globex", Username: "boss"})
	require.NoError(t, err)
	_, err = svc.CreateUser(ctx, "globex", orgadmin.NewUser{Username: "robot", IsServiceAccount: true})
	require.NoError(t, err)

	a := orgadmin.Bearer(admin)
	_, err = svc.ListTokens(ctx, a, "boss")
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = svc.GetInstanceConfig(ctx, a, "robot")
	requireCode(t, err, orgadmin.ErrNotFound)
	_, err = svc.CreateToken(ctx, a, "robot", orgadmin.CreateTokenInput{Name: "x"})
	requireCode(t, err, orgadmin.ErrNotFound)
	toks, err := mem.ListTokens(ctx, "globex", mustUser(t, mem, "globex", "robot").ID, t0)
	require.NoError(t, err)
	assert.Empty(t, toks, "no token was made for the other org's user")
}

func mustUser(t *testing.T, s storage.Store, org, folded string) storage.User {
	t.Helper()
	u, err := s.GetUser(context.Background(), org, folded)
	require.NoError(t, err)
	return u
}
