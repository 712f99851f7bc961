package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// Audit events of an org live in one sorted set of its slot,
// "<prefix>{o:<org>}:events", every member of score 0 so that they sort
// byte-wise: "<at>\n<id>\n<record>", with at the event's millisecond in
// 15 digits. So the set is ordered by time, then id; a page reads it
// backwards from a cursor (BYLEX, REV), and the oldest are at its head.
//
// The script of each change adds the change's event with auditScript's
// audit function, in the same script: on one server and on a Cluster
// (the set shares the org's hash tag), the change and its event are one
// atomic step. In the same step it drops up to eventTrimBatch events
// older than the Audit's DropBefore and, when the set holds more than
// MaxPerOrg, the oldest beyond it (up to eventTrimBatch): each write
// removes more than it adds, so the set never stays above the bound.

// eventTrimBatch bounds the events one write drops, in the Lua text of
// auditScript.
const eventTrimBatch = "128"

// auditScript defines audit(b, i), which records the event of ARGV[i]
// (the member; ” for none), dropping those older than the bound ARGV[i+1]
// (” for none) and the oldest beyond ARGV[i+2] events (0 for no bound).
const auditScript = `
local function audit(b, i)
  if ARGV[i] == nil or ARGV[i] == '' then return end
  local z = b..'events'
  redis.call('ZADD', z, 0, ARGV[i])
  if ARGV[i+1] ~= '' then
    local old = redis.call('ZRANGE', z, '-', '('..ARGV[i+1], 'BYLEX', 'LIMIT', 0, ` + eventTrimBatch + `)
    if #old > 0 then redis.call('ZREM', z, unpack(old)) end
  end
  local max = tonumber(ARGV[i+2])
  if max > 0 then
    local over = redis.call('ZCARD', z) - max
    if over > 0 then redis.call('ZREMRANGEBYRANK', z, 0, math.min(over, ` + eventTrimBatch + `) - 1) end
  end
end
`

// createOrgScript creates the org's record, with its event.
var createOrgScript = redis.NewScript(orgBase + auditScript + `
-- ARGV: record, then the audit's
if redis.call('SETNX', KEYS[1], ARGV[1]) == 0 then return 'EXISTS' end
audit(b, 2)
return 'OK'
`)

// eventDoc is the record of an event in its member.
type eventDoc struct {
	Org            string `json:"o"`
	At             int64  `json:"at"`
	ID             string `json:"id"`
	ActorID        string `json:"ai,omitempty"`
	ActorUsername  string `json:"au,omitempty"`
	ActorTokenID   string `json:"tid,omitempty"`
	Action         string `json:"a"`
	TargetKind     string `json:"tk,omitempty"`
	TargetID       string `json:"ti,omitempty"`
	TargetUsername string `json:"tu,omitempty"`
	RequestID      string `json:"r,omitempty"`
	Before         string `json:"b,omitempty"`
	After          string `json:"af,omitempty"`
	HasBefore      bool   `json:"hb,omitempty"`
	HasAfter       bool   `json:"ha,omitempty"`
}

// eventKey is the sort key of an event: its time and id.
func eventKey(ms int64, id string) string {
	return fmt.Sprintf("%015d\n%s", max(ms, 0), id)
}

// auditArgs are the arguments audit reads: the event of ctx as its
// member, the retention's bound and the per-org bound; empty ones when
// ctx carries no event.
func auditArgs(ctx context.Context) []any {
	a, ok := storage.AuditOf(ctx)
	if !ok {
		return []any{"", "", 0}
	}
	e := a.Event
	doc := eventDoc{
		Org: e.Org, At: e.At.UnixMilli(), ID: e.ID, ActorID: e.ActorID, ActorUsername: e.ActorUsername,
		ActorTokenID: e.ActorTokenID, Action: e.Action, TargetKind: e.TargetKind, TargetID: e.TargetID,
		TargetUsername: e.TargetUsername, RequestID: e.RequestID,
		Before: string(e.Before), After: string(e.After), HasBefore: e.Before != nil, HasAfter: e.After != nil,
	}
	bound := ""
	if !a.DropBefore.IsZero() {
		bound = fmt.Sprintf("%015d", max(a.DropBefore.UnixMilli(), 0))
	}
	return []any{eventKey(doc.At, e.ID) + "\n" + encode(doc), bound, max(a.MaxPerOrg, 0)}
}

// withAudit is args followed by auditArgs(ctx).
func withAudit(ctx context.Context, args ...any) []any {
	return append(args, auditArgs(ctx)...)
}

// eventChunk is how many members ListEvents reads at a time.
const eventChunk = 256

// ListEvents implements storage.Store: it reads the org's set backwards
// from the cursor (or Until), in chunks, and keeps the events that match
// until it has a page and one more, or reaches Since.
func (s *Store) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	page := storage.EventPage{Events: q.Into}
	upper := "+"
	if !q.Until.IsZero() {
		upper = fmt.Sprintf("(%015d", max(q.Until.UnixMilli(), 0))
	}
	if q.BeforeID != "" {
		if c := "(" + eventKey(q.BeforeAt.UnixMilli(), q.BeforeID); upper == "+" || c < upper {
			upper = c
		}
	}
	lower := "-"
	if !q.Since.IsZero() {
		lower = fmt.Sprintf("[%015d", max(q.Since.UnixMilli(), 0))
	}
	key := s.orgBase(org) + "events"
	for {
		ms, err := s.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: key, Start: upper, Stop: lower, ByLex: true, Rev: true, Count: eventChunk}).Result()
		if err != nil {
			return storage.EventPage{}, failed("list events", err)
		}
		for _, m := range ms {
			e, err := eventFrom(m)
			if err != nil {
				return storage.EventPage{}, err
			}
			if !q.Matches(e) {
				continue
			}
			if len(page.Events)-len(q.Into) == q.Limit {
				page.More = true
				return page, nil
			}
			page.Events = append(page.Events, e)
		}
		if len(ms) < eventChunk {
			return page, nil
		}
		last := ms[len(ms)-1]
		upper = "(" + last
	}
}

// eventFrom decodes a member of the events set.
func eventFrom(m string) (storage.Event, error) {
	parts := strings.SplitN(m, "\n", 3)
	if len(parts) != 3 {
		return storage.Event{}, fmt.Errorf("redisstore: corrupt event %q", parts[0])
	}
	var d eventDoc
	if err := decode(parts[2], &d); err != nil {
		return storage.Event{}, err
	}
	e := storage.Event{
		ID: d.ID, Org: d.Org, At: fromMillis(d.At), ActorID: d.ActorID, ActorUsername: d.ActorUsername,
		ActorTokenID: d.ActorTokenID, Action: d.Action, TargetKind: d.TargetKind, TargetID: d.TargetID,
		TargetUsername: d.TargetUsername, RequestID: d.RequestID,
	}
	if d.HasBefore {
		e.Before = []byte(d.Before)
	}
	if d.HasAfter {
		e.After = []byte(d.After)
	}
	return e, nil
}
