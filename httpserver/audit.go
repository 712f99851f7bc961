package httpserver

import (
	"net/http"
	"net/url"
	"time"

	"github.com/orgadmin/orgadmin"
)

// AuditEventsPath is the path of the audit trail, an extension beside
// the hosted API's /v1 operations (under Config.Prefix).
const AuditEventsPath = "/ext/audit/events"

// auditFilters are the string query parameters of the audit trail.
var auditFilters = []string{"action", "actor", "target_kind", "target_id", "target_username"}

// listAuditEvents serves GET /ext/audit/events?limit=&page_token=&action=
// &actor=&target_kind=&target_id=&target_username=&since=&until=.
func (h *Handler) listAuditEvents(_ http.ResponseWriter, r *http.Request, c credential) (auditPage, error) {
	var d decoder
	var q orgadmin.AuditQuery
	if v, ok := d.query(r); ok {
		q.Limit = d.queryInt(v, "limit")
		q.PageToken = d.queryString(v, "page_token")
		fields := []*string{&q.Action, &q.Actor, &q.TargetKind, &q.TargetID, &q.TargetUsername}
		for i, name := range auditFilters {
			*fields[i] = d.queryString(v, name)
		}
		q.Since = d.queryTime(v, "since")
		q.Until = d.queryTime(v, "until")
	}
	q.DecodeIssues = d.issues
	page, err := h.svc.AuditEvents(r.Context(), c.auth(), q)
	return auditPage(page), err
}

// queryTime decodes an RFC 3339 time query parameter; absent yields the
// zero time.
func (d *decoder) queryTime(q url.Values, key string) time.Time {
	v, ok := d.queryValue(q, key)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		d.add(orgadmin.IssueInvalidString, "Expected an RFC 3339 time", []any{key})
		return time.Time{}
	}
	return t
}

// auditPage is the answer of the audit trail: {"events": [...],
// "next_page_token": a token, or null on the last page}.
type auditPage orgadmin.AuditPage

func (p auditPage) appendJSON(b []byte) []byte {
	b = appendArray(append(b, `{"events":`...), p.Events, appendAuditEvent)
	b = appendKey(b, "next_page_token")
	if p.NextPageToken == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, p.NextPageToken)
	}
	return append(b, '}')
}

// appendAuditEvent appends e, its optional fields only when set.
func appendAuditEvent(b []byte, e orgadmin.AuditEvent) []byte {
	b = append(b, '{')
	b = appendField(b, "id", e.ID)
	b = appendTime(appendKey(b, "time"), e.At)
	b = appendField(b, "action", e.Action)
	b = append(appendKey(b, "actor"), '{')
	b = appendOptField(b, "id", e.ActorID)
	b = appendField(b, "username", e.ActorUsername)
	b = appendOptField(b, "token_id", e.ActorTokenID)
	b = append(b, '}')
	b = append(appendKey(b, "target"), '{')
	b = appendField(b, "kind", e.TargetKind)
	b = appendOptField(b, "id", e.TargetID)
	b = appendOptField(b, "username", e.TargetUsername)
	b = append(b, '}')
	b = appendOptField(b, "request_id", e.RequestID)
	if len(e.Before) > 0 {
		b = append(appendKey(b, "before"), e.Before...)
	}
	if len(e.After) > 0 {
		b = append(appendKey(b, "after"), e.After...)
	}
	return append(b, '}')
}
