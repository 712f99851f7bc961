package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/orgadmin/orgadmin/storage"
)

// Audit events of an org live in one sorted set of its slot,
// "<prefix>{o:<org>}:events", each member "<at>\n<id>\n<record>" (at,
// the event's millisecond in 15 digits) and its score the event's Seq:
// the counter "<prefix>{o:<org>}:eseq", which the script that stores the
// event increments (INCR) in the same step. So the set is ordered as the
// events were stored; a page reads it backwards from a cursor (BYSCORE,
// REV), and the oldest are at its head.
//
// The script of each change adds the change's event with auditScript's
// audit function, in the same script: on one server and on a Cluster
// (the set and the counter share the org's hash tag), the change, its
// event and its Seq are one atomic step, so an event is visible as soon
// as it has its Seq and every lower Seq of its org already is. In the
// same step it drops the events at the head of the set (the oldest
// stored) that are older than the Audit's DropBefore, up to
// eventTrimBatch (one whose writer's clock ran behind a later one's
// lingers until it reaches the head; listings filter it out). Reading the
// head costs more than the rest of the audit but INCR and ZADD, so the
// org's key "<prefix>{o:<org>}:etrim" keeps the DropBefore of the last
// write that left no event older than it at the head, and a write whose
// DropBefore is less than eventTrimEvery milliseconds later skips the
// check: an expired event lingers that much longer at most, which the
// listings' own filter hides. One write
// in eventBoundEvery (those whose Seq is a multiple of it) counts the set
// and, when it holds more than MaxPerOrg, drops the oldest beyond it (up
// to eventTrimBatch): so the set holds at most MaxPerOrg plus
// eventBoundEvery events, and counting it costs a write a fraction of a
// command.
//
// Events stored by an earlier version of this package have score 0 and
// no Seq. The first listing of their org that meets one gives them all,
// in one script, Seqs below every other, -1 for the newest down to -n
// for the oldest, in their former order (time, then id).

// eventTrimBatch bounds the events one write drops, in the Lua text of
// auditScript.
const eventTrimBatch = "128"

// eventTrimEvery is how far (in milliseconds) a write's DropBefore must
// pass the last one checked for the write to check the head of the set
// again, in the Lua text of auditScript.
const eventTrimEvery = "1000"

// eventBoundEvery is how often (in Seqs) a write enforces MaxPerOrg, in
// the Lua text of auditScript.
const eventBoundEvery = "16"

// auditScript defines audit(b, i), which records the event of ARGV[i]
// (the member; ” for none) with the org's next Seq, unless the set holds
// it already (a script run again: the Seq taken is given back), dropping
// those at the head older than the bound ARGV[i+1] (” for none; see
// eventTrimEvery for when it looks) and,
// when the Seq is a multiple of eventBoundEvery, the oldest beyond
// ARGV[i+2] events (0 for no bound). ZADD NX tells whether the member was
// new, so the long member is hashed once, not once to look it up and
// again to add it.
const auditScript = `
local function audit(b, i)
  if ARGV[i] == nil or ARGV[i] == '' then return end
  local z, q = b..'events', b..'eseq'
  local seq = redis.call('INCR', q)
  if redis.call('ZADD', z, 'NX', seq, ARGV[i]) == 0 then
    redis.call('DECR', q)
    return
  end
  local bound = ARGV[i+1]
  if bound ~= '' then
    local t = b..'etrim'
    local last = redis.call('GET', t)
    if not last or tonumber(bound) - tonumber(last) >= ` + eventTrimEvery + ` then
      local done = false
      for _ = 1, ` + eventTrimBatch + ` do
        local head = redis.call('ZRANGE', z, 0, 0)
        if #head == 0 or string.sub(head[1], 1, 15) >= bound then
          done = true
          break
        end
        redis.call('ZREMRANGEBYRANK', z, 0, 0)
      end
      if done then redis.call('SET', t, bound) else redis.call('DEL', t) end
    end
  end
  local max = tonumber(ARGV[i+2])
  if max > 0 and seq % ` + eventBoundEvery + ` == 0 then
    local over = redis.call('ZCARD', z) - max
    if over > 0 then redis.call('ZREMRANGEBYRANK', z, 0, math.min(over, ` + eventTrimBatch + `) - 1) end
  end
end
`

// sequenceOldEventsScript gives the org's events of score 0 (stored
// before events had a Seq) Seqs below every other: -n to -1 in their
// order (time, then id). It returns how many it changed.
var sequenceOldEventsScript = redis.NewScript(orgBase + `
local z = b..'events'
local old = redis.call('ZRANGE', z, 0, 0, 'BYSCORE')
local n = #old
for k, m in ipairs(old) do
  redis.call('ZADD', z, k - n - 1, m)
end
return n
`)

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

// eventKey is the head of an event's member: its time and id.
func eventKey(ms int64, id string) string {
	return fmt.Sprintf("%015d\n%s", max(ms, 0), id)
}

// auditArgs are the arguments audit reads: the event of a as its
// member, the retention's bound and the per-org bound; empty ones when a
// is nil.
func auditArgs(a *storage.Audit) []any {
	if a == nil {
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

// withAudit is args followed by auditArgs(a).
func withAudit(a *storage.Audit, args ...any) []any {
	return append(args, auditArgs(a)...)
}

// eventChunk is how many members ListEvents reads at a time.
const eventChunk = 256

// ListEvents implements storage.Store: it reads the org's set backwards
// from the cursor, in chunks, and keeps the events that match until it
// has a page and one more, or reaches the end of the set. The events it
// reads have each a Seq no higher than the newest when it began, so a
// walk that goes on from its last Seq sees what was stored when its first
// page was read.
func (s *Store) ListEvents(ctx context.Context, org string, q storage.EventQuery) (storage.EventPage, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	page := storage.EventPage{Events: q.Into}
	upper := "+inf"
	if q.BeforeSeq != 0 {
		upper = "(" + strconv.FormatInt(q.BeforeSeq, 10)
	}
	key := s.orgBase(org) + "events"
	sequenced := false
	for {
		zs, err := s.c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: upper, Stop: "-inf", ByScore: true, Rev: true, Count: eventChunk}).Result()
		if err != nil {
			return storage.EventPage{}, failed("list events", err)
		}
		reread := false
		for _, z := range zs {
			if z.Score == 0 {
				if sequenced {
					// Written since by a process of an earlier version:
					// not listed.
					upper = "(0"
					continue
				}
				// Events of an earlier version: give them Seqs, then
				// read on from the same place.
				if err := s.run(ctx, sequenceOldEventsScript, org).Err(); err != nil {
					return storage.EventPage{}, failed("sequence old events", err)
				}
				sequenced, reread = true, true
				break
			}
			m, _ := z.Member.(string)
			e, err := eventFrom(m, int64(z.Score))
			if err != nil {
				return storage.EventPage{}, err
			}
			upper = "(" + strconv.FormatInt(e.Seq, 10)
			if !q.Matches(e) {
				continue
			}
			if len(page.Events)-len(q.Into) == q.Limit {
				page.More = true
				return page, nil
			}
			page.Events = append(page.Events, e)
		}
		if !reread && len(zs) < eventChunk {
			return page, nil
		}
	}
}

// eventFrom decodes a member of the events set, of score seq.
func eventFrom(m string, seq int64) (storage.Event, error) {
	parts := strings.SplitN(m, "\n", 3)
	if len(parts) != 3 {
		return storage.Event{}, fmt.Errorf("redisstore: corrupt event %q", parts[0])
	}
	var d eventDoc
	if err := decode(parts[2], &d); err != nil {
		return storage.Event{}, err
	}
	e := storage.Event{
		ID: d.ID, Org: d.Org, Seq: seq, At: fromMillis(d.At), ActorID: d.ActorID, ActorUsername: d.ActorUsername,
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
