package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/client"
	"github.com/orgadmin/orgadmin/orgadmintest"
)

// newProvisioner starts a fake API and a Provisioner that calls it as the
// fake's Admin, on the fake's clock.
func newProvisioner(t *testing.T) (*orgadmintest.Server, *Provisioner) {
	srv := orgadmintest.NewServer(t)
	return srv, &Provisioner{
		API:      client.New(srv.URL(), srv.AdminToken()),
		Username: "reporter",
		TokenTTL: time.Hour,
		Now:      srv.Now,
	}
}

func TestEnsureCreatesAndConfigures(t *testing.T) {
	srv, p := newProvisioner(t)
	res, err := p.Ensure(t.Context())
	require.NoError(t, err)
	assert.True(t, res.Created)

	u, ok := srv.User("reporter")
	require.True(t, ok)
	assert.True(t, u.IsServiceAccount)
	cfg := srv.InstanceConfig("reporter")
	assert.Equal(t, orgadmin.SizePulse, cfg.ReadWrite.Size)
	assert.Equal(t, 2, cfg.ReadScaling.FlockSize)
	assert.Equal(t, orgadmin.Some(5*time.Minute), cfg.ReadScaling.Cooldown)
	assert.NoError(t, p.Check(t.Context(), srv.URL(), res.Token.Value))
}

func TestEnsureIsIdempotentForTheAccount(t *testing.T) {
	srv, p := newProvisioner(t)
	srv.CreateServiceAccount("Reporter") // exists already, in another case
	res, err := p.Ensure(t.Context())
	require.NoError(t, err)
	assert.False(t, res.Created)
	_, err = p.Ensure(t.Context())
	require.NoError(t, err)
	assert.Len(t, srv.Tokens("reporter"), 2, "tokens far from expiry are kept")
}

// Moving the fake's clock: a token expires after its ttl, and the next run
// invalidates the tokens about to expire.
func TestTokensExpireAndRotate(t *testing.T) {
	srv, p := newProvisioner(t)
	first, err := p.Ensure(t.Context())
	require.NoError(t, err)

	srv.FastForward(50 * time.Minute) // 10 minutes left: within TokenTTL/4
	second, err := p.Ensure(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, second.Revoked)
	assert.ErrorIs(t, p.Check(t.Context(), srv.URL(), first.Token.Value), ErrTokenInvalid, "rotated out")
	assert.NoError(t, p.Check(t.Context(), srv.URL(), second.Token.Value))

	srv.FastForward(time.Hour)
	assert.ErrorIs(t, p.Check(t.Context(), srv.URL(), second.Token.Value), ErrTokenInvalid, "expired")
	assert.Empty(t, srv.Tokens("reporter"))
}

func TestEnsureNeedsAnAdmin(t *testing.T) {
	srv, p := newProvisioner(t)
	srv.CreateUser(orgadmin.NewUser{Username: "bob"})
	p.API = client.New(srv.URL(), srv.CreateToken("bob", orgadmin.CreateTokenInput{}))
	_, err := p.Ensure(t.Context())
	var e *client.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusForbidden, e.StatusCode)
	_, ok := srv.User("reporter")
	assert.False(t, ok)
}
