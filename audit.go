package orgadmin

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"iter"
	"log/slog"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// The actions of audit events: stable dotted names.
const (
	ActionOrgCreate          = "org.create"
	ActionUserCreate         = "user.create"
	ActionUserDelete         = "user.delete"
	ActionUserGrant          = "user.grant_privilege"
	ActionInstancesSet       = "instances.set"
	ActionTokenCreate        = "token.create"
	ActionTokenSeed          = "token.seed"
	ActionTokenDelete        = "token.delete"
	ActionDiveRegister       = "dive.register"
	ActionEmbedSessionCreate = "embed_session.create"
)

// The kinds of the targets of audit events.
const (
	TargetOrg          = "org"
	TargetUser         = "user"
	TargetToken        = "token"
	TargetDive         = "dive"
	TargetEmbedSession = "embed_session"
)

// targetKinds are the kinds of the targets of audit events.
var targetKinds = []string{TargetOrg, TargetUser, TargetToken, TargetDive, TargetEmbedSession}

// SystemActor is the ActorUsername of an event of a change made through
// the Go API on no user's behalf (CreateOrg, CreateUser, Bootstrap,
// seeding, RegisterDive, GrantPrivilege).
const SystemActor = "system"

// Defaults of the audit trail.
const (
	// DefaultAuditRetention is how long events are kept when
	// Config.AuditRetention is zero: 90 days.
	DefaultAuditRetention = 90 * 24 * time.Hour
	// DefaultMaxAuditEventsPerOrg bounds the events kept for one
	// organization when Config.MaxAuditEventsPerOrg is zero.
	DefaultMaxAuditEventsPerOrg = 100_000
)

// AuditSettleAfter is how old an event that a store left unconfirmed
// (a MongoDB write whose process died between the event and its change;
// see storage.EventQuery.SettleBefore) must be for a listing to drop it
// when its change was not made: far longer than any store operation may
// take. One whose change was made is shown at the next listing, at any
// age.
const AuditSettleAfter = time.Minute

// Bounds of an audit listing.
const (
	DefaultAuditPageSize = 100
	MaxAuditPageSize     = 1000
)

// AuditEvent is one administrative change: who made it, when, to what.
// It never holds a token or session value, digest or secret.
type AuditEvent struct {
	ID  string
	Org string
	// At is when the change was made (the Service's clock, to the
	// millisecond).
	At time.Time
	// ActorID and ActorUsername name the user who made the change;
	// ActorUsername is SystemActor, and ActorID empty, for a change made
	// by the Go API on no user's behalf (or by ActAsOrg's Caller, which
	// is no user).
	ActorID       string
	ActorUsername string
	// ActorTokenID is the id of the token the actor presented, if any.
	ActorTokenID string
	// Action is one of the Action constants.
	Action string
	// TargetKind is one of the Target constants; TargetID and
	// TargetUsername name the target (for an embed session: the Dive's
	// id and the service account's username).
	TargetKind     string
	TargetID       string
	TargetUsername string
	// RequestID is the id of the HTTP request that made the change (see
	// WithRequestID), if any.
	RequestID string
	// Before and After are, for a change of an instance configuration,
	// the configuration before and after it, as JSON shaped like the
	// API's (effective cooldowns shown), and for a granted privilege the
	// user's privileges, {"privileges": [...]}; nil otherwise. Before is
	// what the operation read as it began.
	Before json.RawMessage
	After  json.RawMessage
}

// AuditQuery selects a page of audit events. Unset fields take their
// defaults; every filter set must match.
type AuditQuery struct {
	// Limit is the page size, 1 to 1000; unset means 100.
	Limit Optional[int]
	// PageToken is the NextPageToken of a previous page.
	PageToken string
	// Action keeps events of that action.
	Action string
	// Actor keeps events whose actor has that user id (in either case)
	// or username (exactly as spelled when the event was recorded: "Bob"
	// does not match "bob"), or SystemActor. A user may be named
	// "system": SystemActor then keeps that user's events too, which
	// have an ActorID where the Go API's have none (filter by the user's
	// id to keep its events alone).
	Actor string
	// TargetKind, TargetID and TargetUsername keep events of that target.
	// A TargetID written as a UUID matches in either case, unless
	// TargetKind is TargetOrg: an org id, like a TargetUsername, matches
	// only exactly as recorded (org ids are case-sensitive; a username is
	// as spelled when the event was recorded).
	TargetKind     string
	TargetID       string
	TargetUsername string
	// Since keeps events at or after it; Until events before it. With
	// both, Until must be after Since (else BAD_REQUEST naming until).
	Since time.Time
	Until time.Time
	// DecodeIssues are the problems found while decoding the query from
	// its wire form; see CreateTokenInput.DecodeIssues.
	DecodeIssues []Issue
}

// AuditPage is one page of audit events, newest first.
type AuditPage struct {
	Events []AuditEvent
	// NextPageToken resumes after the last event; "" on the last page.
	NextPageToken string
}

type requestIDKey struct{}

// RequestIDKey is the context key of the id of the HTTP request a context
// serves: ctx.Value(RequestIDKey) is that id, a string. The audit events
// of the changes made under the context record it. WithRequestID sets it;
// a server with a context type of its own (the httpserver package's) may
// answer it from its Value method instead, sparing an allocation.
var RequestIDKey any = requestIDKey{}

// WithRequestID returns a copy of ctx that carries the id of the HTTP
// request it serves (see RequestIDKey).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDOf returns the id WithRequestID put in ctx, or "".
func RequestIDOf(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// actor is who makes a change.
type actor struct {
	id, username, tokenID string
}

// system is the actor of the Go API's changes.
var system = actor{username: SystemActor}

// actorOf is the actor of c: its user, or the system for ActAsOrg's
// Caller.
func actorOf(c Caller) actor {
	if c.userID == "" {
		return system
	}
	return actor{id: c.userID, username: c.username, tokenID: c.tokenID}
}

// change is an audit event under way: what a store method records with
// its change.
type change struct {
	action, kind, targetID, targetUsername string
	before, after                          []byte
}

// audited returns the Audit of the event of ch, made by who in org, for
// the store method that makes the change, and the event for emit.
func (s *Service) audited(ctx context.Context, org string, who actor, ch change) (*storage.Audit, storage.Event, error) {
	id, err := s.newID()
	if err != nil {
		return nil, storage.Event{}, err
	}
	now := s.clock()
	ev := storage.Event{
		ID:             id,
		Org:            org,
		At:             now,
		ActorID:        who.id,
		ActorUsername:  who.username,
		ActorTokenID:   who.tokenID,
		Action:         ch.action,
		TargetKind:     ch.kind,
		TargetID:       ch.targetID,
		TargetUsername: ch.targetUsername,
		RequestID:      RequestIDOf(ctx),
		Before:         ch.before,
		After:          ch.after,
	}
	return &storage.Audit{
		Event:      ev,
		DropBefore: now.Add(-s.auditRetention),
		MaxPerOrg:  s.maxAuditEvents,
	}, ev, nil
}

// emit sends ev, stored with its change, to Config.AuditLog.
func (s *Service) emit(ctx context.Context, ev storage.Event) {
	if s.auditLog == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String("id", ev.ID),
		slog.String("org", ev.Org),
		slog.Time("at", ev.At),
		slog.String("action", ev.Action),
		slog.String("actor_username", ev.ActorUsername),
	}
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("actor_id", ev.ActorID)
	add("actor_token_id", ev.ActorTokenID)
	add("target_kind", ev.TargetKind)
	add("target_id", ev.TargetID)
	add("target_username", ev.TargetUsername)
	add("request_id", ev.RequestID)
	add("before", string(ev.Before))
	add("after", string(ev.After))
	s.auditLog.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, "audit", attrs...)
}

// configJSON is an instance configuration in the API's shape, for the
// before and after of an event.
// Its sides are values, not pointers, each of which would be an
// allocation: an effective cooldown is never zero, so zero is an unset one
// (on a pulse side), and flock_size is a field of the read-scaling side
// only.
func configJSON(c storage.InstanceConfig) []byte {
	type readWrite struct {
		Size     Size  `json:"instance_size"`
		Cooldown int64 `json:"cooldown_seconds,omitzero"`
	}
	type readScaling struct {
		Size      Size  `json:"instance_size"`
		FlockSize int   `json:"flock_size"`
		Cooldown  int64 `json:"cooldown_seconds,omitzero"`
	}
	secs := func(s InstanceSide) int64 { return int64(s.Cooldown.Value / time.Second) } // 0 when unset
	cfg := configFromRecord(c)
	b, _ := json.Marshal(struct {
		ReadWrite   readWrite   `json:"read_write"`
		ReadScaling readScaling `json:"read_scaling"`
	}{
		readWrite{cfg.ReadWrite.Size, secs(cfg.ReadWrite)},
		readScaling{cfg.ReadScaling.Size, cfg.ReadScaling.FlockSize, secs(cfg.ReadScaling)},
	}) // cannot fail
	return b
}

// privilegesJSON is a user's privileges, for the before and after of an
// event.
func privilegesJSON(ps []string) []byte {
	if ps == nil {
		ps = []string{}
	}
	b, _ := json.Marshal(struct {
		Privileges []string `json:"privileges"`
	}{ps}) // cannot fail
	return b
}

// maxAuditFilterLen bounds each string filter of an audit query.
const maxAuditFilterLen = 255

// query turns q into a store query, with every problem of q.
func (q AuditQuery) query() (storage.EventQuery, issues) {
	var is issues
	eq := storage.EventQuery{
		Limit:          DefaultAuditPageSize,
		Action:         q.Action,
		TargetKind:     q.TargetKind,
		TargetID:       q.TargetID,
		TargetUsername: q.TargetUsername,
	}
	// Ids of users, tokens and Dives are recorded in lower case, and taken
	// in either case everywhere else.
	if id, ok := canonicalUUID(q.TargetID); ok && q.TargetKind != TargetOrg {
		eq.TargetID = id
	}
	for _, f := range []struct {
		t    time.Time
		into *time.Time
		name string
	}{{q.Since, &eq.Since, "since"}, {q.Until, &eq.Until, "until"}} {
		switch {
		case f.t.IsZero():
		case f.t.Year() < 1970 || f.t.Year() > 9999:
			// Stores keep milliseconds since 1970; before it, or past
			// year 9999, is no time an event can have.
			is.add(IssueInvalidString, "Expected a time from 1970 to 9999", f.name)
		default:
			*f.into = f.t.UTC()
		}
	}
	if n, ok := q.Limit.Get(); ok && is.checkRange(int64(n), 1, MaxAuditPageSize, "limit") {
		eq.Limit = n
	}
	for _, f := range []struct{ v, name string }{
		{q.Action, "action"}, {q.Actor, "actor"}, {q.TargetKind, "target_kind"},
		{q.TargetID, "target_id"}, {q.TargetUsername, "target_username"},
	} {
		is.checkString(f.v, 0, maxAuditFilterLen, f.name)
	}
	if q.TargetKind != "" {
		checkEnum(&is, q.TargetKind, targetKinds, "target_kind")
	}
	if !eq.Since.IsZero() && !eq.Until.IsZero() && !eq.Since.Before(eq.Until) {
		is.add(IssueInvalidString, "until must be after since", "until")
	}
	if q.PageToken != "" {
		seq, ok := decodeAuditToken(q.PageToken)
		if !ok {
			is.add(IssueInvalidString, "Invalid page token: pass back a next_page_token as it came (a token of an earlier version of the service no longer works; start again without one)", "page_token")
		}
		eq.BeforeSeq = seq
	}
	return eq, is.withDecoded(q.DecodeIssues)
}

// auditTokenVersion prefixes every audit page token. Version 'a' (a
// time and an id, the order before events had a sequence) is refused.
const auditTokenVersion = 'b'

// auditTokenLen is the length of a decoded page token: the version, the
// sequence and a check byte.
const auditTokenLen = 10

// encodeAuditToken makes the opaque cursor that resumes after the event
// of sequence seq, newest first.
func encodeAuditToken(seq int64) string {
	b := make([]byte, 1, auditTokenLen)
	b[0] = auditTokenVersion
	b = binary.BigEndian.AppendUint64(b, uint64(seq)) // #nosec G115 -- a bit pattern, decoded back the same way
	b = append(b, auditTokenCheck(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

// auditTokenCheck is the check byte of a token's first nine bytes: it
// tells a token mistyped or cut from one the Service made.
func auditTokenCheck(b []byte) byte {
	var c byte = 0x5a
	for _, x := range b {
		c = c<<1 | c>>7
		c ^= x
	}
	return c
}

// decodeAuditToken reverses encodeAuditToken; it reports false for
// anything encodeAuditToken cannot have made (zero is never a sequence).
func decodeAuditToken(tok string) (int64, bool) {
	if len(tok) > 64 {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != auditTokenLen || b[0] != auditTokenVersion || b[9] != auditTokenCheck(b[:9]) {
		return 0, false
	}
	seq := int64(binary.BigEndian.Uint64(b[1:9])) // #nosec G115 -- the bit pattern encodeAuditToken wrote
	return seq, seq != 0
}

// AuditEvents returns a page of the audit events of the caller's org,
// newest first, filtered as q says. The order is the sequence the store
// gives each event as it stores it with its change (within an org, the
// order in which changes are stored), not the events' times: paging
// with NextPageToken neither skips nor repeats an event, whatever is
// written meanwhile, by this process or another sharing the store,
// whatever its clock. A walk of pages shows the events stored when its
// first page was read; those stored later come before that page (a new
// walk from the first page shows them).
// It fails with FORBIDDEN unless the caller is an Admin, and with
// BAD_REQUEST for an out-of-range limit, a malformed page token, a
// filter that is too long or an unknown TargetKind, or an Until not after
// Since.
func (s *Service) AuditEvents(ctx context.Context, a Auth, q AuditQuery) (AuditPage, error) {
	eq, is := q.query()
	var c call
	if err := s.begin(ctx, &c, a, opAuditEvents, nil, readNone, is); err != nil {
		return AuditPage{}, err
	}
	// Events past the retention may linger in a store a while: never
	// show them.
	now := s.clock()
	if oldest := now.Add(-s.auditRetention); eq.Since.Before(oldest) {
		eq.Since = oldest
	}
	eq.SettleBefore = now.Add(-AuditSettleAfter)
	// An actor is a user id (a UUID, which holds hyphens) or a username
	// (which cannot): never both, so one filter decides.
	if q.Actor != "" {
		if id, ok := canonicalUUID(q.Actor); ok {
			eq.ActorID = id
		} else {
			eq.ActorUsername = q.Actor
		}
	}
	page, err := s.store.ListEvents(ctx, c.org, eq)
	if err != nil {
		return AuditPage{}, internal(ctx, "list events", err)
	}
	out := AuditPage{Events: eventsFromRecords(page.Events)}
	if n := len(page.Events); page.More && n > 0 {
		out.NextPageToken = encodeAuditToken(page.Events[n-1].Seq)
	}
	return out, nil
}

// AllAuditEvents iterates over every audit event AuditEvents selects with
// q, newest first, reading pages as the loop needs them. A failure is
// yielded once, with a zero AuditEvent, and ends the iteration.
func (s *Service) AllAuditEvents(ctx context.Context, a Auth, q AuditQuery) iter.Seq2[AuditEvent, error] {
	return func(yield func(AuditEvent, error) bool) {
		for {
			page, err := s.AuditEvents(ctx, a, q)
			if err != nil {
				yield(AuditEvent{}, err)
				return
			}
			for _, e := range page.Events {
				if !yield(e, nil) {
					return
				}
			}
			if page.NextPageToken == "" || len(page.Events) == 0 {
				return
			}
			q.PageToken = page.NextPageToken
		}
	}
}

func eventsFromRecords(recs []storage.Event) []AuditEvent {
	out := make([]AuditEvent, len(recs))
	for i, e := range recs {
		out[i] = AuditEvent{
			ID:             e.ID,
			Org:            e.Org,
			At:             e.At,
			ActorID:        e.ActorID,
			ActorUsername:  e.ActorUsername,
			ActorTokenID:   e.ActorTokenID,
			Action:         e.Action,
			TargetKind:     e.TargetKind,
			TargetID:       e.TargetID,
			TargetUsername: e.TargetUsername,
			RequestID:      e.RequestID,
			Before:         rawOrNil(e.Before),
			After:          rawOrNil(e.After),
		}
	}
	return out
}

// rawOrNil is b as JSON, nil when empty: a store may give none as an
// empty slice, which json.Marshal refuses as a json.RawMessage.
func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}
