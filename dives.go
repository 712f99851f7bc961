package orgadmin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/orgadmin/orgadmin/internal/jsonobject"
	"github.com/orgadmin/orgadmin/storage"
)

// Dive is a saved interactive view that can be embedded.
type Dive struct {
	// ID is a UUID.
	ID    string
	Title string
	// Version is the latest version, from 1; zero means 1.
	Version int
	// RequiredResources are the databases the Dive declares it needs.
	RequiredResources []Resource
}

// Resource is a database an embedded Dive needs.
type Resource struct {
	// URL is at least 1 character.
	URL string
	// Alias is optional.
	Alias string
}

// Limits of Dives and embed sessions.
const (
	MaxResourcesJSON    = 8192
	MaxInitialStateJSON = 64 << 10
	// MaxSessionName bounds session_name and session_hint, which the
	// specification leaves open.
	MaxSessionName = 8192
	maxDiveTitle   = MaxDescriptionLen
	// MaxResources is the most items a list of required resources can
	// have: each takes at least 12 bytes of its JSON ({"url":"x"} and a
	// comma), so no more fit in MaxResourcesJSON. A longer list is refused
	// for its length alone, with one issue, its items unchecked: the
	// answer to a request stays small however many items it sends.
	MaxResources = (MaxResourcesJSON - 1) / 12
)

// checkResources adds every problem of rs under path, including a total size
// over MaxResourcesJSON bytes of JSON; of a list of more than MaxResources
// items, only that. The size is that of the compact
// JSON, with "&", "<" and ">" written as themselves (as clients write
// them; encoding/json escapes them for HTML, in six bytes each).
func checkResources(is *issues, rs []Resource, path ...any) {
	if len(rs) > MaxResources {
		is.add(IssueTooBig, fmt.Sprintf("Array must contain at most %d element(s)", MaxResources), path...)
		return
	}
	size := 2 + max(len(rs)-1, 0) // brackets and commas
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, r := range rs {
		at := func(field string) []any { return append(slices.Clip(path), i, field) }
		// Each string is bounded by the total below.
		is.checkString(r.URL, 1, MaxResourcesJSON, at("url")...)
		is.checkString(r.Alias, 0, MaxResourcesJSON, at("alias")...)
		buf.Reset()
		_ = enc.Encode(struct {
			URL   string `json:"url"`
			Alias string `json:"alias,omitempty"`
		}{r.URL, r.Alias}) // strings always encode
		size += buf.Len() - 1 // but the newline Encode ends with
	}
	if size > MaxResourcesJSON {
		is.add(IssueTooBig, "required_resources must be at most 8192 bytes of JSON", path...)
	}
}

// canonicalUUID returns the canonical lower-case form of a UUID written as
// 36 characters, and false for anything else.
func canonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return "", false
	}
	return id.String(), true
}

// RegisterDive creates or replaces a Dive of org (which must exist). It
// fails with BAD_REQUEST when d breaks a rule and NOT_FOUND when org does
// not exist. Registering a Dive exactly as it is stored changes nothing,
// and records no audit event.
func (s *Service) RegisterDive(ctx context.Context, org string, d Dive) error {
	return s.registerDive(ctx, org, d, false)
}

// registerDive validates d and stores it in org, recording its event:
// replacing a Dive with its id unless it is stored as d already, or, when
// create, only where there is none (storage.ErrAlreadyExists, returned as
// it is, when there is).
func (s *Service) registerDive(ctx context.Context, org string, d Dive, create bool) error {
	if err := validateDive(d); err != nil {
		return err
	}
	id, _ := canonicalUUID(d.ID)
	if d.Version == 0 {
		d.Version = 1
	}
	rec := storage.Dive{ID: id, Org: org, Title: d.Title, Version: d.Version, RequiredResources: resourceRecords(d.RequiredResources)}
	if !create {
		switch was, err := s.store.GetDive(ctx, org, id); {
		case err == nil && sameDive(was, rec):
			return nil
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return s.storeErr(ctx, "get dive", err, "organization")
		}
	}
	aud, ev, err := s.audited(ctx, org, system, change{action: ActionDiveRegister, kind: TargetDive, targetID: id})
	if err != nil {
		return err
	}
	write, op := s.store.PutDive, "put dive"
	if create {
		write, op = s.store.CreateDive, "create dive"
	}
	switch err := write(ctx, rec, aud); {
	case errors.Is(err, storage.ErrAlreadyExists):
		return err
	case err != nil:
		return s.storeErr(ctx, op, err, "organization")
	}
	s.emit(ctx, ev)
	return nil
}

// sameDive reports whether a and b are one Dive stored alike.
func sameDive(a, b storage.Dive) bool {
	return a.ID == b.ID && a.Org == b.Org && a.Title == b.Title && a.Version == b.Version &&
		slices.Equal(a.RequiredResources, b.RequiredResources)
}

const maxInt32 = 1<<31 - 1

func validateDive(d Dive) error {
	var is issues
	if _, ok := canonicalUUID(d.ID); !ok {
		is.add(IssueInvalidString, "Invalid uuid", "id")
	}
	is.checkString(d.Title, 0, maxDiveTitle, "title")
	if d.Version != 0 {
		is.checkRange(int64(d.Version), 1, maxInt32, "version")
	}
	checkResources(&is, d.RequiredResources, "required_resources")
	return is.err()
}

func resourceRecords(rs []Resource) []storage.Resource {
	out := make([]storage.Resource, len(rs))
	for i, r := range rs {
		out[i] = storage.Resource{URL: r.URL, Alias: r.Alias}
	}
	return out
}

func resourcesFromRecords(rs []storage.Resource) []Resource {
	out := make([]Resource, len(rs))
	for i, r := range rs {
		out[i] = Resource{URL: r.URL, Alias: r.Alias}
	}
	return out
}

// CreateEmbedSessionInput is the body of create embed session.
type CreateEmbedSessionInput struct {
	// Username names the service account the session is minted for.
	Username string
	// SessionName, at least 1 character, makes equal requests share one
	// read-scaling session.
	SessionName Optional[string]
	// SessionHint is the deprecated alias of SessionName, ignored when
	// SessionName is set.
	SessionHint Optional[string]
	// RequiredResources, when not nil, replaces the Dive's own.
	RequiredResources []Resource
	// InitialState, when not nil, is a JSON object of at most 64 KiB, in
	// valid UTF-8 and valid Unicode (no lone surrogate escapes), none of
	// whose objects names a key twice. It is kept compact, each string
	// written with the fewest escapes ("\u00e9" as "é") but for U+2028 and
	// U+2029, always escaped (as encoding/json writes them), and measured
	// so: one value has one size, whichever escapes its writer chose.
	InitialState json.RawMessage
	// Version pins the Dive version, from 1 (BAD_REQUEST below) to the
	// latest (NOT_FOUND above, however far).
	Version Optional[int]
	// DecodeIssues are the problems found while decoding the input from
	// its wire form; see CreateTokenInput.DecodeIssues.
	DecodeIssues []Issue
}

// problems returns every problem of in.
func (in CreateEmbedSessionInput) problems() issues {
	var is issues
	is.checkString(in.Username, 1, MaxUsernameLen, "username")
	if name, ok := in.SessionName.Get(); ok {
		is.checkString(name, 1, MaxSessionName, "session_name")
	}
	if hint, ok := in.SessionHint.Get(); ok {
		is.checkString(hint, 1, MaxSessionName, "session_hint")
	}
	checkResources(&is, in.RequiredResources, "required_resources")
	if in.InitialState != nil {
		var buf bytes.Buffer
		switch err := json.Compact(&buf, in.InitialState); {
		case err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{':
			is.add(IssueInvalidType, "Expected object", "initial_state")
		case !utf8.Valid(buf.Bytes()):
			// As a body is refused: the renderer would read something
			// else than what was sent (Unescaped writes U+FFFD for a bad
			// byte in a string it rewrites).
			is.add(IssueInvalidString, "initial_state must be valid UTF-8", "initial_state")
		case jsonobject.LoneSurrogate(buf.Bytes()):
			// The renderer's parser would read it as something else
			// than what was sent, or refuse it.
			is.add(IssueInvalidString, "initial_state must be valid Unicode (no lone surrogate escapes)", "initial_state")
		case len(jsonobject.Unescaped(buf.Bytes())) > MaxInitialStateJSON:
			// Counted as stored: one value is one size, however its
			// writer escaped its strings.
			is.add(IssueTooBig, "initial_state must be at most 65536 bytes of JSON", "initial_state")
		default:
			// Which of two values of a key counts depends on the
			// parser that reads it: refused, as in a body.
			if at, dup := jsonobject.DuplicateKey(buf.Bytes()); dup {
				is.add(IssueDuplicateKey, fmt.Sprintf("Duplicate key %q", at[len(at)-1]), append([]any{"initial_state"}, at...)...)
			}
		}
	}
	if v, ok := in.Version.Get(); ok {
		// Above the latest, however far, is NOT_FOUND (after the
		// Dive is read), not a malformed body.
		is.checkRange(int64(v), 1, math.MaxInt64, "version")
	}
	return is.withDecoded(in.DecodeIssues)
}

// EmbedSession is what a renderer needs to show an embedded Dive.
type EmbedSession struct {
	Org     string
	DiveID  string
	Version int
	// Username is the service account the session renders for.
	Username string
	// RequiredResources are the request's, else the Dive's.
	RequiredResources []Resource
	// InitialState is a JSON object, or nil.
	InitialState json.RawMessage
	// AffinityKey is equal for sessions of equal (org, username, session
	// name), so they reuse one read-scaling session.
	AffinityKey string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// CreateEmbedSession mints an embed session of the Dive diveID for a service
// account of the caller's org and returns its opaque value. It fails with
// FORBIDDEN unless the caller is an Admin; BAD_REQUEST for a malformed Dive
// id or body, a username that is not a service account, or a service
// account that holds the maximum number of live embed sessions
// (Config.MaxEmbedSessionsPerUser); NOT_FOUND for a missing Dive, version
// or user.
func (s *Service) CreateEmbedSession(ctx context.Context, a Auth, diveID string, in CreateEmbedSessionInput) (string, error) {
	var is issues
	id, ok := canonicalUUID(diveID)
	if !ok {
		is.add(IssueInvalidString, "Invalid uuid", "dive_id")
	}
	var c call
	if err := s.begin(ctx, &c, a, opCreateEmbedSession, nil, readNone, nil); err != nil {
		return "", err
	}
	if err := append(is, in.problems()...).err(); err != nil {
		return "", err
	}
	// The username can only name a user if it is a valid one; either way,
	// one read fetches the Dive and the user.
	folded := FoldUsername(in.Username)
	if !ValidUsername(in.Username) {
		folded = ""
	}
	target, err := s.store.GetEmbedTarget(ctx, c.org, id, folded)
	if err != nil {
		return "", internal(ctx, "get embed target", err)
	}
	if !target.DiveFound {
		return "", notFound("dive", "dive_id")
	}
	dive := target.Dive
	version := dive.Version
	if v, ok := in.Version.Get(); ok {
		if v > dive.Version {
			return "", notFound("dive version", "version")
		}
		version = v
	}
	if !target.UserFound || folded == "" {
		return "", notFound("user", "username")
	}
	u := target.User
	if !u.IsServiceAccount {
		return "", badRequest(Issue{Message: "Embed sessions can only be created for service accounts", Path: NewPath("username"), Code: IssueNotAllowed})
	}
	value, err := s.newSecret(sessionPrefix)
	if err != nil {
		return "", internal(ctx, "mint session", err)
	}
	// The session is created at the time of its event (which a store
	// without transactions compares, to tell whether it was made).
	aud, ev, err := s.audited(ctx, c.org, actorOf(c.Caller), change{action: ActionEmbedSessionCreate, kind: TargetEmbedSession, targetID: id, targetUsername: u.Username})
	if err != nil {
		return "", err
	}
	now := ev.At
	rec := storage.EmbedSession{
		Digest:    sha256.Sum256([]byte(value)),
		Org:       c.org,
		DiveID:    id,
		Version:   version,
		UserID:    u.ID,
		Username:  u.Username,
		Resources: dive.RequiredResources,
		CreatedAt: now,
		ExpiresAt: now.Add(s.sessionTTL),
	}
	if in.RequiredResources != nil {
		rec.Resources = resourceRecords(in.RequiredResources)
	}
	if in.InitialState != nil {
		var buf bytes.Buffer
		_ = json.Compact(&buf, in.InitialState) // validated above
		rec.InitialState = jsonobject.Unescaped(buf.Bytes())
	}
	name := in.SessionName
	if !name.Set {
		name = in.SessionHint
	}
	if name.Set {
		sum := sha256.Sum256([]byte(c.org + "\x00" + u.FoldedUsername + "\x00" + name.Value))
		rec.AffinityKey = hex.EncodeToString(sum[:16])
	} else {
		rec.AffinityKey = hex.EncodeToString(rec.Digest[16:])
	}
	switch err := s.store.CreateEmbedSession(ctx, rec, storage.SessionLimit{Max: s.maxSessions, LiveAt: now}, aud); {
	case errors.Is(err, storage.ErrLimitExceeded):
		return "", badRequest(Issue{Message: "The service account holds the maximum number of embed sessions", Path: Path{}, Code: IssueTooBig})
	case err != nil:
		return "", s.storeErr(ctx, "create embed session", err, "user", "username")
	}
	s.emit(ctx, ev)
	return value, nil
}

// ResolveEmbedSession returns the embed session a value names, for the
// renderer. It fails with NOT_FOUND when the value is unknown, expired, or
// its user was deleted.
func (s *Service) ResolveEmbedSession(ctx context.Context, value string) (EmbedSession, error) {
	if len(value) == 0 || len(value) > maxTokenLen {
		return EmbedSession{}, notFound("embed session")
	}
	rec, err := s.store.EmbedSessionByDigest(ctx, digestOf(value))
	if err != nil {
		return EmbedSession{}, s.storeErr(ctx, "get embed session", err, "embed session")
	}
	if !s.now().Before(rec.ExpiresAt) {
		return EmbedSession{}, notFound("embed session")
	}
	// Deleting a user ends its sessions; check the user as well, so a
	// session can never outlive it whatever the store.
	u, err := s.store.GetUser(ctx, rec.Org, FoldUsername(rec.Username))
	if err != nil || u.ID != rec.UserID {
		if err == nil || errors.Is(err, storage.ErrNotFound) {
			return EmbedSession{}, notFound("embed session")
		}
		return EmbedSession{}, internal(ctx, "get embed session user", err)
	}
	return EmbedSession{
		Org:               rec.Org,
		DiveID:            rec.DiveID,
		Version:           rec.Version,
		Username:          rec.Username,
		RequiredResources: resourcesFromRecords(rec.Resources),
		InitialState:      rec.InitialState,
		AffinityKey:       rec.AffinityKey,
		CreatedAt:         rec.CreatedAt,
		ExpiresAt:         rec.ExpiresAt,
	}, nil
}
