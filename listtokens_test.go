package orgadmin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// readerStore is a memory store with storage.CredentialTokensReader, built
// from its plain reads, so that the Service's one-step token listing can be
// compared with its two steps on the same data.
type readerStore struct {
	*memstore.Store
	calls int
}

func (r *readerStore) CredentialTokens(ctx context.Context, d storage.Digest, folded string, liveAt time.Time, _ func(uint64) bool) (storage.Credential, storage.UserTokens, error) {
	r.calls++
	cred, err := r.TokenByDigest(ctx, d)
	if err != nil {
		return storage.Credential{}, storage.UserTokens{}, err
	}
	u, err := r.GetUser(ctx, cred.User.Org, folded)
	if err != nil {
		return cred, storage.UserTokens{}, nil
	}
	ts, err := r.ListTokens(ctx, u.Org, u.ID, liveAt)
	return cred, storage.UserTokens{Found: true, Tokens: ts}, err
}

// AuthenticateListTokens answers exactly what Authenticate then ListTokens
// answer, for every kind of caller and target, on a store that reads both
// at once and on one that does not.
func TestAuthenticateListTokensMatchesTwoSteps(t *testing.T) {
	clk := newFakeClock()
	store := &readerStore{Store: memstore.New()}
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	plain := orgadmin.New(store.Store, orgadmin.Config{Now: clk.Now})
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
	seed("acme", "robot", orgadmin.CreateTokenInput{Name: "r2", TTL: orgadmin.Ptr(600)})
	seed("globex", "stranger", orgadmin.CreateTokenInput{Name: "s"})
	scaling := seed("acme", "Admin", orgadmin.CreateTokenInput{Name: "rs", TokenType: orgadmin.Ptr("read_scaling")})
	expiring := seed("acme", "Admin", orgadmin.CreateTokenInput{Name: "exp", TTL: orgadmin.Ptr(300)})
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
	for name, tok := range tokens {
		for _, target := range targets {
			wantCaller, wantTokens, wantErr := twoSteps(ctx, plain, tok, target)
			before := store.calls
			c, got, err := svc.AuthenticateListTokens(ctx, tok, target)
			msg := name + " lists " + target
			if wantErr != nil {
				require.Error(t, err, msg)
				assert.Equal(t, wantErr.Error(), err.Error(), msg)
				assert.Equal(t, orgadmin.ErrorCode(wantErr), orgadmin.ErrorCode(err), msg)
				assert.Nil(t, got, msg)
			} else {
				require.NoError(t, err, msg)
				assert.Equal(t, wantTokens, got, msg)
				assert.Equal(t, wantCaller, c, msg)
				assert.Equal(t, before+1, store.calls, "%s: one store read", msg)
			}
		}
	}
}

func twoSteps(ctx context.Context, svc *orgadmin.Service, token, username string) (orgadmin.Caller, []orgadmin.Token, error) {
	c, err := svc.Authenticate(ctx, token)
	if err != nil {
		return orgadmin.Caller{}, nil, err
	}
	ts, err := svc.ListTokens(ctx, c, username)
	if err != nil {
		return orgadmin.Caller{}, nil, err
	}
	return c, ts, nil
}

// keeper keeps listings as the HTTP handler does: the stamp of each, by
// version. It records the versions it is asked about.
type keeper struct {
	stamps map[uint64]orgadmin.ListingStamp
	asked  []uint64
}

func (k *keeper) known(v uint64) (orgadmin.ListingStamp, bool) {
	k.asked = append(k.asked, v)
	st, ok := k.stamps[v]
	return st, ok
}

// list lists username's tokens with token through AuthenticateListing,
// requires the answer of AuthenticateListTokens, and keeps the listing.
func (k *keeper) list(t *testing.T, svc *orgadmin.Service, token, username string) orgadmin.Listing {
	t.Helper()
	ctx := context.Background()
	wantCaller, want, err := svc.AuthenticateListTokens(ctx, token, username)
	require.NoError(t, err)
	c, l, err := svc.AuthenticateListing(ctx, token, username, k.known)
	require.NoError(t, err)
	assert.Equal(t, wantCaller, c)
	if l.Known {
		assert.Nil(t, l.Tokens)
		assert.Equal(t, k.stamps[l.Stamp.Version], l.Stamp, "the stamp kept")
	} else {
		assert.Equal(t, want, l.Tokens)
		if l.Stamp.Version != 0 {
			k.stamps[l.Stamp.Version] = l.Stamp
		}
	}
	return l
}

// A kept listing is answered as Known exactly while the user's token
// records are unchanged and no listed token has expired since it was
// read; authentication and authorization are checked on every call.
func TestAuthenticateListing(t *testing.T) {
	e := newEnv(t, orgadmin.Config{})
	ctx := context.Background()
	k := &keeper{stamps: map[uint64]orgadmin.ListingStamp{}}
	exp := e.token(t, "admin", orgadmin.CreateTokenInput{Name: "exp", TTL: orgadmin.Ptr(300)})

	first := k.list(t, e.svc, e.adminToken, "admin")
	require.False(t, first.Known)
	require.Len(t, first.Tokens, 2)
	require.NotZero(t, first.Stamp.Version)
	assert.Equal(t, orgadmin.ListingStamp{Version: first.Stamp.Version, From: t0, Until: exp.ExpireAt}, first.Stamp)
	assert.Equal(t, []uint64{first.Stamp.Version}, k.asked)

	again := k.list(t, e.svc, e.adminToken, "ADMIN")
	assert.Equal(t, orgadmin.Listing{Stamp: first.Stamp, Known: true}, again)
	e.clk.Advance(299 * time.Second)
	assert.True(t, k.list(t, e.svc, e.adminToken, "admin").Known, "just before the first expiry")

	e.clk.Advance(time.Second) // exp expires
	expired := k.list(t, e.svc, e.adminToken, "admin")
	assert.False(t, expired.Known)
	assert.Len(t, expired.Tokens, 1)
	assert.Equal(t, orgadmin.ListingStamp{Version: first.Stamp.Version, From: e.clk.Now()}, expired.Stamp)

	e.clk.Advance(-time.Minute) // before that listing was read: exp is live again
	back := k.list(t, e.svc, e.adminToken, "admin")
	assert.False(t, back.Known)
	assert.Len(t, back.Tokens, 2)
	e.clk.Advance(time.Minute)

	// Another token: new records, a new version.
	e.token(t, "admin", orgadmin.CreateTokenInput{Name: "new"})
	created := k.list(t, e.svc, e.adminToken, "admin")
	assert.False(t, created.Known)
	assert.Len(t, created.Tokens, 2)
	assert.NotEqual(t, first.Stamp.Version, created.Stamp.Version)
	assert.True(t, k.list(t, e.svc, e.adminToken, "admin").Known)

	// A stamp of another version is not the answer, whatever known says.
	_, l, err := e.svc.AuthenticateListing(ctx, e.adminToken, "admin", func(uint64) (orgadmin.ListingStamp, bool) {
		return expired.Stamp, true // holds at this instant, for its own version
	})
	require.NoError(t, err)
	assert.False(t, l.Known)
	assert.Len(t, l.Tokens, 2)

	// Authorization and authentication, on every call.
	e.human(t, orgadmin.NewUser{Username: "bob", Role: orgadmin.RoleMember})
	_, bob := e.login(t, "bob")
	_, _, err = e.svc.AuthenticateListing(ctx, bob, "admin", k.known)
	requireCode(t, err, orgadmin.ErrForbidden)
	_, _, err = e.svc.AuthenticateListing(ctx, e.adminToken, "nobody", k.known)
	requireCode(t, err, orgadmin.ErrNotFound)
	require.NoError(t, e.svc.DeleteToken(ctx, e.admin, "admin", e.admin.TokenID))
	_, _, err = e.svc.AuthenticateListing(ctx, e.adminToken, "admin", k.known)
	requireCode(t, err, orgadmin.ErrUnauthorized)
}

// On a store that does not version token records, listings have no stamp
// and known is never asked.
func TestAuthenticateListingUnversioned(t *testing.T) {
	svc := orgadmin.New(&readerStore{Store: memstore.New()}, orgadmin.Config{})
	token, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	k := &keeper{stamps: map[uint64]orgadmin.ListingStamp{}}
	for range 2 {
		l := k.list(t, svc, token, "admin")
		assert.False(t, l.Known)
		assert.Len(t, l.Tokens, 1)
		assert.Zero(t, l.Stamp)
	}
	assert.Empty(t, k.asked)
}

// nilListStore is a store that does not version token records and reads
// an empty listing as nil Tokens, as a store may.
type nilListStore struct{ readerStore }

func (r *nilListStore) CredentialTokens(ctx context.Context, d storage.Digest, folded string, liveAt time.Time, skip func(uint64) bool) (storage.Credential, storage.UserTokens, error) {
	cred, ut, err := r.readerStore.CredentialTokens(ctx, d, folded, liveAt, skip)
	if len(ut.Tokens) == 0 {
		ut.Tokens = nil
	}
	return cred, ut, err
}

// A call remembers nothing of the calls before it, on any Service: here a
// kept listing's stamp, then a listing of no tokens on a store without
// versions, where a stamp left over would read as Known.
func TestAuthenticateListingForgetsEarlierCalls(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, orgadmin.Config{})
	k := &keeper{stamps: map[uint64]orgadmin.ListingStamp{}}
	k.list(t, e.svc, e.adminToken, "admin")
	require.True(t, k.list(t, e.svc, e.adminToken, "admin").Known)

	other := orgadmin.New(&nilListStore{readerStore{Store: memstore.New()}}, orgadmin.Config{})
	token, err := other.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	admin, err := other.Authenticate(ctx, token)
	require.NoError(t, err)
	_, err = other.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: "robot"})
	require.NoError(t, err)
	for range 3 {
		k.list(t, e.svc, e.adminToken, "admin") // a probe with a kept stamp, back in the pool
		_, l, err := other.AuthenticateListing(ctx, token, "robot", k.known)
		require.NoError(t, err)
		assert.False(t, l.Known, "a stamp of an earlier call")
		assert.Empty(t, l.Tokens)
	}
}

// BenchmarkAuthenticateListing lists the Admin's ten tokens on the memory
// store: afresh, and kept (as the HTTP handler keeps them).
func BenchmarkAuthenticateListing(b *testing.B) {
	e := newEnv(b, orgadmin.Config{})
	for i := range 9 {
		e.token(b, "admin", orgadmin.CreateTokenInput{Name: strings.Repeat("n", i+1)})
	}
	ctx := context.Background()
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ts, err := e.svc.AuthenticateListTokens(ctx, e.adminToken, "admin"); err != nil || len(ts) != 10 {
				b.Fatal(err, len(ts))
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		_, l, err := e.svc.AuthenticateListing(ctx, e.adminToken, "admin", nil)
		require.NoError(b, err)
		known := func(uint64) (orgadmin.ListingStamp, bool) { return l.Stamp, true }
		b.ReportAllocs()
		for b.Loop() {
			if _, l, err := e.svc.AuthenticateListing(ctx, e.adminToken, "admin", known); err != nil || !l.Known {
				b.Fatal(err, l.Known)
			}
		}
	})
}
