package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/orgadmin/orgadmin"
)

// TokenType is the kind of an access token: the orgadmin package's type.
type TokenType = orgadmin.TokenType

// The token types. Read-scaling tokens are read-only: they authenticate but
// may call no /v1 operation.
const (
	TokenReadWrite   = orgadmin.TokenReadWrite
	TokenReadScaling = orgadmin.TokenReadScaling
)

// Token is an access token: the orgadmin package's type. Value is set only
// in the result of CreateToken: the server shows it there and never again.
// ExpireAt is zero for a token that never expires; ReadOnly() is true
// exactly for read_scaling tokens.
type Token = orgadmin.Token

// tokenWire is a token in its wire form.
type tokenWire struct {
	Value       string    `json:"token"`
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	ExpireAt    time.Time `json:"expire_at"`
	CreatedAt   time.Time `json:"created_ts"`
	Type        TokenType `json:"token_type"`
}

func (t tokenWire) token() Token {
	return Token{Value: t.Value, ID: t.ID, Name: t.Name, Description: t.Description,
		ExpireAt: t.ExpireAt, CreatedAt: t.CreatedAt, Type: t.Type}
}

// CreateTokenRequest is the body of CreateToken.
type CreateTokenRequest struct {
	// Name is 1 to 255 characters.
	Name string
	// TTL is the token's lifetime, such as time.Hour: a whole number of
	// seconds from orgadmin.MinTokenTTL (5 minutes) to
	// orgadmin.MaxTokenTTL (365 days), sent as seconds. Zero means the
	// token never expires. A TTL that is not a whole number of seconds
	// (300, which is 300ns; 90.5 seconds) is a *ValidationError at "ttl",
	// and nothing is sent; one out of bounds is sent, and the API's
	// BAD_REQUEST lists it with the request's other issues.
	TTL time.Duration
	// Description is at most 1000 characters; "" sends none.
	Description string
	// Type is TokenReadWrite (the default when "") or TokenReadScaling.
	Type TokenType
}

// check adds to issues when r cannot be sent, and returns them as a
// *ValidationError.
func (r CreateTokenRequest) check(issues []Issue) error {
	if r.TTL != 0 {
		issues = checkSeconds(issues, r.TTL, "ttl")
	}
	return invalid(issues)
}

// MarshalJSON encodes r in its wire form, with ttl in seconds.
func (r CreateTokenRequest) MarshalJSON() ([]byte, error) {
	if err := r.check(nil); err != nil {
		return nil, err
	}
	wire := struct {
		Name        string    `json:"name"`
		TTL         int64     `json:"ttl,omitempty"`
		Description string    `json:"description,omitempty"`
		Type        TokenType `json:"token_type,omitempty"`
	}{r.Name, int64(r.TTL / time.Second), r.Description, r.Type}
	return json.Marshal(wire)
}

// CreateToken creates an access token for the user and returns it with its
// value (operation users-createToken). A user may create tokens for
// themself; an Admin also for a service account. A TTL the API cannot
// carry is a *ValidationError, before any request.
func (c *Client) CreateToken(ctx context.Context, username string, in CreateTokenRequest) (*Token, error) {
	if err := in.check(checkSegment(nil, "username", username)); err != nil {
		return nil, err
	}
	var out tokenWire
	if err := c.call(ctx, request{method: http.MethodPost, url: c.userPath(username, "tokens"), body: in, auth: true}, &out); err != nil {
		return nil, err
	}
	t := out.token()
	return &t, nil
}

// ListTokens returns the live tokens of the user, oldest first (by
// creation time, then id), without their values (operation
// users-listTokens). A user may list their own; an Admin those of anyone
// in the organization.
func (c *Client) ListTokens(ctx context.Context, username string) ([]Token, error) {
	if err := invalid(checkSegment(nil, "username", username)); err != nil {
		return nil, err
	}
	var out struct {
		Tokens []tokenWire `json:"tokens"`
	}
	if err := c.call(ctx, request{method: http.MethodGet, url: c.userPath(username, "tokens"), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	ts := make([]Token, len(out.Tokens))
	for i, t := range out.Tokens {
		ts[i] = t.token()
	}
	return ts, nil
}

// DeleteToken invalidates the token tokenID of the user, at once
// (operation users-deleteToken). An unknown token is a 404 *Error
// (errors.Is(err, ErrNotFound)); one that a retry finds gone after an
// earlier attempt may have deleted it also matches ErrDeletedOnRetry.
func (c *Client) DeleteToken(ctx context.Context, username, tokenID string) error {
	if err := invalid(checkSegment(checkSegment(nil, "username", username), "token_id", tokenID)); err != nil {
		return err
	}
	return c.call(ctx, request{method: http.MethodDelete, url: c.userPath(username, "tokens", tokenID), auth: true, retry: true}, nil)
}
