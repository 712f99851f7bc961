package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/orgadmin/orgadmin/client"
)

// TokenName names the tokens the Provisioner mints, so that it touches no
// others.
const TokenName = "provisioned"

// Provisioner keeps one service account provisioned.
type Provisioner struct {
	// API is a client holding an Admin's token.
	API *client.Client
	// Username is the service account.
	Username string
	// Config is the instance configuration to apply. The zero value means
	// DefaultConfig.
	Config client.InstanceConfig
	// TokenTTL is the lifetime of each token minted; zero means 24 hours.
	TokenTTL time.Duration
	// RenewBefore is how close to its expiry an older token is
	// invalidated; zero means TokenTTL/4.
	RenewBefore time.Duration
	// Now is the clock; nil means time.Now. Tests pass the fake server's.
	Now func() time.Time
}

// DefaultConfig is the configuration a reporting account gets: a small
// read-write instance and two read-scaling replicas.
var DefaultConfig = client.InstanceConfig{
	ReadWrite:   client.InstanceSide{Size: client.SizePulse},
	ReadScaling: client.InstanceSide{Size: client.SizeStandard, FlockSize: 2, Cooldown: client.Some(5 * time.Minute)},
}

// Result says what Ensure did.
type Result struct {
	// Created is true when the service account was created.
	Created bool
	// Token is the new token, with its value.
	Token client.Token
	// Revoked counts the older tokens invalidated because they expire
	// within RenewBefore.
	Revoked int
}

// Ensure creates the service account unless it exists, applies the
// configuration, mints a new token and invalidates the older tokens it
// minted that expire within RenewBefore.
func (p *Provisioner) Ensure(ctx context.Context) (*Result, error) {
	var res Result
	_, err := p.API.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: p.Username, Description: "provisioned reporting account"})
	switch {
	case err == nil:
		res.Created = true
	case isTaken(err):
	default:
		return nil, fmt.Errorf("create %s: %w", p.Username, err)
	}

	want := p.Config
	if want == (client.InstanceConfig{}) {
		want = DefaultConfig
	}
	if _, err := p.API.SetInstanceConfig(ctx, p.Username, want); err != nil {
		return nil, fmt.Errorf("configure %s: %w", p.Username, err)
	}

	ttl := p.TokenTTL
	if ttl == 0 {
		ttl = 24 * time.Hour
	}
	tok, err := p.API.CreateToken(ctx, p.Username, client.CreateTokenRequest{Name: TokenName, TTL: ttl})
	if err != nil {
		return nil, fmt.Errorf("mint token for %s: %w", p.Username, err)
	}
	res.Token = *tok

	renew := p.RenewBefore
	if renew == 0 {
		renew = ttl / 4
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	toks, err := p.API.ListTokens(ctx, p.Username)
	if err != nil {
		return nil, fmt.Errorf("list tokens of %s: %w", p.Username, err)
	}
	for _, t := range toks {
		if t.Name != TokenName || t.ID == tok.ID || t.ExpireAt.IsZero() || t.ExpireAt.Sub(now()) > renew {
			continue
		}
		// Not found: gone already (a retry after a lost answer, or another
		// run); either way it is invalidated.
		if err := p.API.DeleteToken(ctx, p.Username, t.ID); err != nil && !errors.Is(err, client.ErrNotFound) {
			return nil, fmt.Errorf("invalidate token %s: %w", t.ID, err)
		}
		res.Revoked++
	}
	return &res, nil
}

// ErrTokenInvalid is returned by Check for a token that no longer
// authenticates (expired or invalidated).
var ErrTokenInvalid = errors.New("token no longer valid")

// Check reports whether token, a token of the service account, still
// works: nil, ErrTokenInvalid, or the error met.
func (p *Provisioner) Check(ctx context.Context, baseURL, token string) error {
	_, err := client.New(baseURL, token).GetInstanceConfig(ctx, p.Username)
	if errors.Is(err, client.ErrUnauthorized) {
		return ErrTokenInvalid
	}
	return err
}

// isTaken reports whether err is the 400 of a username already taken.
func isTaken(err error) bool {
	var e *client.Error
	return errors.As(err, &e) && e.Code == client.CodeBadRequest &&
		slices.ContainsFunc(e.Issues, func(is client.Issue) bool { return is.Code == client.IssueAlreadyExists })
}
