package client

import (
	"context"
	"net/http"
	"net/url"
)

// CreateEmbedSessionRequest is the body of CreateEmbedSession.
type CreateEmbedSessionRequest struct {
	// Username names the service account the session is minted for.
	Username string `json:"username"`
	// SessionName makes requests with the same name share one read-scaling
	// session; "" sends none.
	SessionName string `json:"session_name,omitempty"`
	// SessionHint is the former name of SessionName, ignored when
	// SessionName is set.
	//
	// Deprecated: use SessionName.
	SessionHint string `json:"session_hint,omitempty"`
	// RequiredResources, when not nil, replaces the Dive's own declared
	// databases for this session (an empty, non-nil slice: none).
	RequiredResources []Resource `json:"required_resources,omitzero"`
	// InitialState, when not nil, seeds the UI state of the embedded Dive.
	InitialState map[string]any `json:"initial_state,omitzero"`
	// Version pins the Dive version, from 1; zero means the latest.
	Version int `json:"version,omitempty"`
}

// Resource is a database an embedded Dive needs.
type Resource struct {
	URL   string `json:"url"`
	Alias string `json:"alias,omitempty"`
}

// EmbedSession is an embed session just created.
type EmbedSession struct {
	// Session is the opaque value the renderer takes. It is not an API
	// credential.
	Session string `json:"session"`
}

// CreateEmbedSession creates an embed session of the Dive diveID (a UUID)
// for a service account (operation dashboards-createEmbedSession). The
// caller must be an Admin.
func (c *Client) CreateEmbedSession(ctx context.Context, diveID string, in CreateEmbedSessionRequest) (*EmbedSession, error) {
	var out EmbedSession
	u := c.base + "/v1/dives/" + url.PathEscape(diveID) + "/embed-session"
	if err := c.call(ctx, request{method: http.MethodPost, url: u, body: in, auth: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
