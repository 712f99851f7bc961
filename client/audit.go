package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/orgadmin/orgadmin"
)

// AuditEventsPath is the path of the audit trail, relative to the base
// URL: an orgadmin extension beside the /v1 operations.
const AuditEventsPath = "/ext/audit/events"

// AuditEventsOptions selects a page of audit events; zero fields take
// the server's defaults, and every filter set must match.
type AuditEventsOptions struct {
	// Limit is the page size, 1 to 1000; unset means the server's
	// default (100).
	Limit Optional[int]
	// PageToken is the NextPageToken of a previous page.
	PageToken string
	// Action keeps events of that action (orgadmin.ActionTokenCreate...).
	Action string
	// Actor keeps events made by the user of that id (in either case) or
	// username (exactly as spelled when the event was recorded), or by
	// orgadmin.SystemActor.
	Actor string
	// TargetKind, TargetID and TargetUsername keep events of that target:
	// an id written as a UUID in either case (an org id exactly), a
	// username exactly as spelled when the event was recorded.
	TargetKind     string
	TargetID       string
	TargetUsername string
	// Since keeps events at or after it; Until events before it, and must
	// be after Since when both are set (else a 400 naming until).
	Since time.Time
	Until time.Time
}

func (o AuditEventsOptions) query() url.Values {
	q := url.Values{}
	if o.Limit.Set {
		q.Set("limit", strconv.Itoa(o.Limit.Value))
	}
	for k, v := range map[string]string{
		"page_token": o.PageToken, "action": o.Action, "actor": o.Actor,
		"target_kind": o.TargetKind, "target_id": o.TargetID, "target_username": o.TargetUsername,
	} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !o.Since.IsZero() {
		q.Set("since", o.Since.UTC().Format(time.RFC3339Nano))
	}
	if !o.Until.IsZero() {
		q.Set("until", o.Until.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// AuditEvent is one administrative change, the orgadmin package's type.
type AuditEvent = orgadmin.AuditEvent

// AuditPage is one page of audit events, newest first; NextPageToken
// fetches the next page (as AuditEventsOptions.PageToken), "" on the
// last page.
type AuditPage = orgadmin.AuditPage

// auditEventWire is an event as the server sends it.
type auditEventWire struct {
	ID     string    `json:"id"`
	Time   time.Time `json:"time"`
	Action string    `json:"action"`
	Actor  struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		TokenID  string `json:"token_id"`
	} `json:"actor"`
	Target struct {
		Kind     string `json:"kind"`
		ID       string `json:"id"`
		Username string `json:"username"`
	} `json:"target"`
	RequestID string          `json:"request_id"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
}

// AuditEvents returns one page of the audit trail of the caller's
// organization, newest first (operation audit-listEvents, an orgadmin
// extension). The caller must be an Admin. See AllAuditEvents to walk
// every page. The events' Org is left empty: it is the caller's.
func (c *Client) AuditEvents(ctx context.Context, opts AuditEventsOptions) (*AuditPage, error) {
	var out struct {
		Events        []auditEventWire `json:"events"`
		NextPageToken *string          `json:"next_page_token"`
	}
	if err := c.call(ctx, request{method: http.MethodGet, url: c.base + AuditEventsPath, query: opts.query(), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	page := &AuditPage{Events: make([]AuditEvent, len(out.Events))}
	for i, e := range out.Events {
		page.Events[i] = AuditEvent{
			ID: e.ID, At: e.Time.UTC(), Action: e.Action,
			ActorID: e.Actor.ID, ActorUsername: e.Actor.Username, ActorTokenID: e.Actor.TokenID,
			TargetKind: e.Target.Kind, TargetID: e.Target.ID, TargetUsername: e.Target.Username,
			RequestID: e.RequestID, Before: e.Before, After: e.After,
		}
	}
	if out.NextPageToken != nil {
		page.NextPageToken = *out.NextPageToken
	}
	return page, nil
}

// AllAuditEvents iterates over every event that opts selects, newest
// first, fetching pages of opts.Limit events as the loop needs them. A
// failure is yielded once, with a zero AuditEvent, and ends the
// iteration.
func (c *Client) AllAuditEvents(ctx context.Context, opts AuditEventsOptions) iter.Seq2[AuditEvent, error] {
	return all(func(next string) ([]AuditEvent, string, error) {
		if next != "" {
			opts.PageToken = next
		}
		page, err := c.AuditEvents(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return page.Events, page.NextPageToken, nil
	})
}
