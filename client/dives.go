package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/orgadmin/orgadmin"
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

// Resource is a database an embedded Dive needs: the orgadmin package's
// type (URL required, Alias optional).
type Resource = orgadmin.Resource

// resourceWire is a Resource in its wire form.
type resourceWire struct {
	URL   string `json:"url"`
	Alias string `json:"alias,omitempty"`
}

// MarshalJSON encodes r in its wire form.
func (r CreateEmbedSessionRequest) MarshalJSON() ([]byte, error) {
	type plain CreateEmbedSessionRequest // without this method
	wire := struct {
		plain
		RequiredResources []resourceWire `json:"required_resources,omitzero"`
	}{plain: plain(r)}
	if r.RequiredResources != nil {
		wire.RequiredResources = make([]resourceWire, len(r.RequiredResources))
		for i, res := range r.RequiredResources {
			wire.RequiredResources[i] = resourceWire(res)
		}
	}
	return json.Marshal(wire)
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
	if err := invalid(checkSegment(nil, "dive_id", diveID)); err != nil {
		return nil, err
	}
	var out EmbedSession
	u := c.base + "/v1/dives/" + url.PathEscape(diveID) + "/embed-session"
	if err := c.call(ctx, request{method: http.MethodPost, url: u, body: in, auth: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
