package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// TokenType is the kind of an access token.
type TokenType string

// The token types. Read-scaling tokens are read-only: they authenticate but
// may call no /v1 operation.
const (
	TokenReadWrite   TokenType = "read_write"
	TokenReadScaling TokenType = "read_scaling"
)

// Token is an access token. Value is set only in the result of
// CreateToken: the server shows it there and never again.
type Token struct {
	Value string `json:"token,omitempty"`
	// ID is a UUID, for DeleteToken.
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// ExpireAt is when the token expires; zero when it never does.
	ExpireAt time.Time `json:"expire_at,omitzero"`
	// CreatedAt is when the token was created.
	CreatedAt time.Time `json:"created_ts"`
	// ReadOnly is true exactly for read_scaling tokens.
	ReadOnly bool      `json:"read_only"`
	Type     TokenType `json:"token_type"`
}

// CreateTokenRequest is the body of CreateToken.
type CreateTokenRequest struct {
	// Name is 1 to 255 characters.
	Name string
	// TTL is the token's lifetime, such as 5*time.Minute, sent in whole
	// seconds (rounded down): 300 to 31536000 seconds. Zero means the token
	// never expires. A positive TTL under a second (a bare 300 is 300ns) is
	// refused before anything is sent.
	TTL time.Duration
	// Description is at most 1000 characters; "" sends none.
	Description string
	// Type is TokenReadWrite (the default when "") or TokenReadScaling.
	Type TokenType
}

// MarshalJSON encodes r in its wire form, with ttl in seconds.
func (r CreateTokenRequest) MarshalJSON() ([]byte, error) {
	if r.TTL > 0 && r.TTL < time.Second {
		return nil, fmt.Errorf("TTL %v is under a second; it is a time.Duration, such as 5*time.Minute", r.TTL)
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
// themself; an Admin also for a service account.
func (c *Client) CreateToken(ctx context.Context, username string, in CreateTokenRequest) (*Token, error) {
	var out Token
	if err := c.call(ctx, request{method: http.MethodPost, url: c.userPath(username, "tokens"), body: in, auth: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListTokens returns the live tokens of the user, oldest first, without
// their values (operation users-listTokens). A user may list their own; an
// Admin those of anyone in the organization.
func (c *Client) ListTokens(ctx context.Context, username string) ([]Token, error) {
	var out struct {
		Tokens []Token `json:"tokens"`
	}
	if err := c.call(ctx, request{method: http.MethodGet, url: c.userPath(username, "tokens"), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// DeleteToken invalidates the token tokenID of the user, at once
// (operation users-deleteToken). An unknown token is a 404 *Error.
func (c *Client) DeleteToken(ctx context.Context, username, tokenID string) error {
	return c.call(ctx, request{method: http.MethodDelete, url: c.userPath(username, "tokens", tokenID), auth: true, retry: true}, nil)
}
