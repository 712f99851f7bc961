package httpserver

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/internal/fakeclock"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// listingEnv is a Handler on a memory store with a fake clock, and the
// Admin's token.
type listingEnv struct {
	h     *Handler
	svc   *orgadmin.Service
	clk   *fakeclock.Clock
	admin string
}

func newListingEnv(t *testing.T) *listingEnv {
	return newListingEnvOn(t, memstore.New())
}

// newListingEnvOn is newListingEnv on the given store.
func newListingEnvOn(t *testing.T, store storage.Store) *listingEnv {
	clk := fakeclock.New(time.Date(2026, 6, 19, 12, 0, 0, 0, time.UTC))
	svc := orgadmin.New(store, orgadmin.Config{Now: clk.Now})
	admin, err := svc.Bootstrap(context.Background(), orgadmin.BootstrapInput{Org: "acme", Username: "admin"})
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return &listingEnv{h: New(svc, Config{Logger: quiet}), svc: svc, clk: clk, admin: admin}
}

func (e *listingEnv) do(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// list requires a 200 listing of username's tokens, and that it is the
// listing made afresh from the Service.
func (e *listingEnv) list(t *testing.T, token, username string) string {
	t.Helper()
	code, body := e.do(t, "GET", "/v1/users/"+username+"/tokens", token, "")
	require.Equal(t, http.StatusOK, code, body)
	_, ts, err := e.svc.AuthenticateListTokens(context.Background(), token, username)
	require.NoError(t, err)
	assert.Equal(t, string(tokenList(ts).appendJSON(nil))+"\n", body)
	return body
}

// The Handler keeps encoded listings and answers them again exactly while
// the Service says they are the answer: not after a token is created,
// deleted or expires, and never to a token that no longer authenticates.
func TestKeptListings(t *testing.T) {
	e := newListingEnv(t)
	e.clk.Advance(time.Second) // listed after the Admin's own token
	code, created := e.do(t, "POST", "/v1/users/admin/tokens", e.admin, `{"name":"short","ttl":300}`)
	require.Equal(t, http.StatusOK, code, created)
	var short struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(created), &short))

	e.list(t, e.admin, "admin")
	require.Equal(t, 1, e.h.listings.Len())

	// What is kept is what is answered: mark it to see it come back.
	version := e.version(t, e.admin, "admin")
	kept, ok := e.h.listings.Get(version)
	require.True(t, ok)
	e.h.listings.Put(version, keptListing{stamp: kept.stamp, answer: encodedJSON("{\"tokens\":\"kept\"}\n")})
	code, body := e.do(t, "GET", "/v1/users/ADMIN/tokens", e.admin, "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, `{"tokens":"kept"}`+"\n", body)

	// A token created: a new listing.
	e.clk.Advance(time.Second)
	code, _ = e.do(t, "POST", "/v1/users/admin/tokens", e.admin, `{"name":"more"}`)
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, decodeList(t, e.list(t, e.admin, "admin")), 3)

	// The short token expires.
	e.clk.Advance(299 * time.Second)
	assert.Len(t, decodeList(t, e.list(t, e.admin, "admin")), 2)

	// A token deleted (the expired one is already gone: 404). The
	// Admin's own token comes first.
	code, _ = e.do(t, "DELETE", "/v1/users/admin/tokens/"+short.ID, e.admin, "")
	assert.Equal(t, http.StatusNotFound, code)
	ids := decodeList(t, e.list(t, e.admin, "admin"))
	self, err := e.svc.Authenticate(context.Background(), e.admin)
	require.NoError(t, err)
	require.Equal(t, self.TokenID, ids[0])
	code, _ = e.do(t, "DELETE", "/v1/users/admin/tokens/"+ids[1], e.admin, "")
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, decodeList(t, e.list(t, e.admin, "admin")), 1)

	// The caller's own token revoked: UNAUTHORIZED, kept listing or not.
	e.list(t, e.admin, "admin")
	code, _ = e.do(t, "DELETE", "/v1/users/admin/tokens/"+ids[0], e.admin, "")
	require.Equal(t, http.StatusOK, code)
	code, body = e.do(t, "GET", "/v1/users/admin/tokens", e.admin, "")
	assert.Equal(t, http.StatusUnauthorized, code, body)
}

// Another user's listing is its own, and a Member may not read the
// Admin's, kept or not.
func TestKeptListingsPerUser(t *testing.T) {
	e := newListingEnv(t)
	ctx := context.Background()
	_, err := e.svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: "bob", Role: orgadmin.RoleMember})
	require.NoError(t, err)
	bob, err := e.svc.SeedToken(ctx, "acme", "bob", orgadmin.SeedTokenInput{
		Value: "bob-token-with-enough-characters", CreateTokenInput: orgadmin.CreateTokenInput{Name: "bob's"},
	})
	require.NoError(t, err)

	adminList := e.list(t, e.admin, "admin")
	bobList := e.list(t, bob.Value, "bob")
	assert.NotEqual(t, adminList, bobList)
	assert.Equal(t, bobList, e.list(t, e.admin, "bob"), "the Admin reads Bob's listing")
	assert.Equal(t, 2, e.h.listings.Len())
	code, body := e.do(t, "GET", "/v1/users/admin/tokens", bob.Value, "")
	assert.Equal(t, http.StatusForbidden, code, body)
}

// A listing of more than maxKeptListing bytes is answered, not kept.
func TestLargeListingsNotKept(t *testing.T) {
	e := newListingEnv(t)
	ctx := context.Background()
	admin, err := e.svc.Authenticate(ctx, e.admin)
	require.NoError(t, err)
	for range maxKeptListing / 200 {
		_, err := e.svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{
			Name: "t", Description: orgadmin.Ptr(strings.Repeat("d", 200)),
		})
		require.NoError(t, err)
	}
	body := e.list(t, e.admin, "admin")
	assert.Greater(t, len(body), maxKeptListing)
	assert.Equal(t, 0, e.h.listings.Len())
}

// version returns the version of username's token records, as the
// Service reads it.
func (e *listingEnv) version(t *testing.T, token, username string) uint64 {
	t.Helper()
	var version uint64
	_, _, err := e.svc.AuthenticateListing(context.Background(), token, username, func(v uint64) (orgadmin.ListingStamp, bool) {
		version = v
		return orgadmin.ListingStamp{}, false
	})
	require.NoError(t, err)
	require.NotZero(t, version)
	return version
}

func decodeList(t *testing.T, body string) []string {
	t.Helper()
	var l struct{ Tokens []struct{ ID string } }
	require.NoError(t, json.Unmarshal([]byte(body), &l))
	ids := make([]string, len(l.Tokens))
	for i, tok := range l.Tokens {
		ids[i] = tok.ID
	}
	return ids
}

// Listings served while tokens are created are never older than a token
// created before the listing began, nor ahead of the store.
func TestKeptListingsConcurrent(t *testing.T) {
	e := newListingEnv(t)
	ctx := context.Background()
	admin, err := e.svc.Authenticate(ctx, e.admin)
	require.NoError(t, err)
	var created atomic.Int64
	created.Store(1) // the Admin's own token
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			_, err := e.svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: "t"})
			if err != nil {
				t.Error(err)
				return
			}
			created.Add(1)
		}
	}()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				before := created.Load()
				code, body := e.do(t, "GET", "/v1/users/admin/tokens", e.admin, "")
				if !assert.Equal(t, http.StatusOK, code) {
					return
				}
				n := int64(len(decodeList(t, body)))
				after := created.Load()
				if n < before || n > after+1 {
					t.Errorf("listed %d tokens; %d created before, %d after", n, before, after)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
	assert.Len(t, decodeList(t, e.list(t, e.admin, "admin")), 201)
}

// A store that does not version token records: every listing is made
// afresh, and none is kept.
func TestListingsOfUnversionedStoreNotKept(t *testing.T) {
	// Only storage.Store: the memory store's CredentialTokens is hidden.
	e := newListingEnvOn(t, struct{ storage.Store }{memstore.New()})
	for range 2 {
		assert.Len(t, decodeList(t, e.list(t, e.admin, "admin")), 1)
	}
	assert.Equal(t, 0, e.h.listings.Len())
}

// forgettingStore is a memory store that runs forget while the Service
// reads a listing, once the Handler has said it keeps that listing.
type forgettingStore struct {
	*memstore.Store
	forget func(version uint64)
}

func (s forgettingStore) CredentialTokens(ctx context.Context, digest storage.Digest, folded string, liveAt time.Time, skip func(uint64) bool) (storage.Credential, storage.UserTokens, error) {
	if skip == nil {
		return s.Store.CredentialTokens(ctx, digest, folded, liveAt, nil)
	}
	return s.Store.CredentialTokens(ctx, digest, folded, liveAt, func(v uint64) bool {
		kept := skip(v)
		if kept && s.forget != nil {
			s.forget(v)
		}
		return kept
	})
}

// A listing the Service says is kept, but that the Handler forgot or
// replaced in the meantime, is made afresh: never an empty answer.
func TestKeptListingForgottenMeanwhile(t *testing.T) {
	store := &forgettingStore{Store: memstore.New()}
	e := newListingEnvOn(t, store)
	fresh := e.list(t, e.admin, "admin")
	require.Equal(t, 1, e.h.listings.Len())

	store.forget = func(v uint64) { e.h.listings.Forget(v) }
	assert.Equal(t, fresh, e.list(t, e.admin, "admin"), "forgotten")
	require.Equal(t, 1, e.h.listings.Len(), "kept again")

	// Replaced by a listing of the same version with another stamp.
	store.forget = func(v uint64) {
		kept, _ := e.h.listings.Get(v)
		kept.stamp.From = kept.stamp.From.Add(-time.Second)
		kept.answer = encodedJSON("{\"tokens\":\"other\"}\n")
		e.h.listings.Put(v, kept)
	}
	assert.Equal(t, fresh, e.list(t, e.admin, "admin"), "replaced")
}
