package orgadmin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orgadmin/orgadmin/internal/casefold"
	"github.com/orgadmin/orgadmin/internal/jsonobject"
	"github.com/orgadmin/orgadmin/storage"
)

// Seed is a fixture: organizations with their users, tokens, instance
// configurations, Duckling activity and Dives, in the JSON form the example
// server's -seed flag reads. Every field but an organization's id, a user's
// username and a token's name and value is optional. Its types are the
// file's, not the Service's: enumerations are strings, and numbers
// (seconds, counts, versions) *float64, nil when absent, so that Validate
// can name a fixture's 2.5 or 1e300 where it is; a Go program that builds
// its world in code may call the Service's methods instead (CreateUser,
// SeedToken, SetInstanceConfig, RegisterDive).
type Seed struct {
	Organizations []SeedOrg `json:"organizations"`
}

// SeedOrg is an organization of a Seed.
type SeedOrg struct {
	ID    string     `json:"id"`
	Users []SeedUser `json:"users"`
	Dives []SeedDive `json:"dives"`
}

// SeedUser is a user of a SeedOrg. Role defaults to Member.
type SeedUser struct {
	Username         string         `json:"username"`
	Role             string         `json:"role"`
	IsServiceAccount bool           `json:"is_service_account"`
	Description      string         `json:"description"`
	Email            string         `json:"email"`
	FirstName        string         `json:"first_name"`
	LastName         string         `json:"last_name"`
	Privileges       []string       `json:"privileges"`
	Tokens           []SeedToken    `json:"tokens"`
	Instances        *SeedInstances `json:"instances"`
	Ducklings        []SeedDuckling `json:"ducklings"`
}

// SeedToken is a token with a known value. TTL counts from loading.
type SeedToken struct {
	Name        string   `json:"name"`
	Value       string   `json:"value"`
	TokenType   string   `json:"token_type"`
	TTL         *float64 `json:"ttl"`
	Description string   `json:"description"`
}

// SeedInstances is an instance configuration in its wire form.
type SeedInstances struct {
	ReadWrite   *SeedInstanceSide `json:"read_write"`
	ReadScaling *SeedInstanceSide `json:"read_scaling"`
}

// SeedInstanceSide is one side of SeedInstances. FlockSize is for the
// read_scaling side only: Validate refuses it on read_write.
type SeedInstanceSide struct {
	InstanceSize    string   `json:"instance_size"`
	FlockSize       *float64 `json:"flock_size"`
	CooldownSeconds *float64 `json:"cooldown_seconds"`
}

// SeedDuckling is a Duckling marked at load time: "active", or "cooldown"
// (marked idle at load time).
type SeedDuckling struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// SeedDive is a Dive of a SeedOrg; Version defaults to 1.
type SeedDive struct {
	ID                string         `json:"id"`
	Title             string         `json:"title"`
	Version           *float64       `json:"version"`
	RequiredResources []SeedResource `json:"required_resources"`
}

// SeedResource is a resource of a SeedDive.
type SeedResource struct {
	URL   string `json:"url"`
	Alias string `json:"alias"`
}

// The names of a seed's entries in messages: the entry's path with its
// id, username or name, quoted and cut to maxQuoted bytes (a seed's
// strings are checked after they are named).
func orgEntry(i int, id string) string { return fmt.Sprintf("organizations[%d] (%s)", i, quoted(id)) }
func userEntry(org string, j int, name string) string {
	return fmt.Sprintf("%s.users[%d] (%s)", org, j, quoted(name))
}
func tokenEntry(user string, k int, name string) string {
	return fmt.Sprintf("%s.tokens[%d] (%s)", user, k, quoted(name))
}

// maxQuoted bounds what a message quotes of a seed's string.
const maxQuoted = 64

// quoted quotes s, cut to maxQuoted bytes at a rune boundary and marked
// as cut.
func quoted(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// checkWhole returns an error naming where and field when n, a number of
// the seed, is set and not a whole number (4 and 4.0 alike are) that fits
// an int32. The field's own bounds (a TTL's, a cooldown's) are the
// Service's to check, as it loads the seed.
func checkWhole(where, field string, n *float64) error {
	switch {
	case n == nil:
	case *n != math.Trunc(*n):
		return fmt.Errorf("seed: %s: %s: %v is not a whole number", where, field, *n)
	case math.Abs(*n) > math.MaxInt32:
		return fmt.Errorf("seed: %s: %s: %v is out of range", where, field, *n)
	}
	return nil
}

// seconds returns n, a number of seconds which checkWhole accepts, as a
// duration; unset when n is nil.
func seconds(n *float64) Optional[time.Duration] {
	if n == nil {
		return Optional[time.Duration]{}
	}
	return Some(time.Duration(*n) * time.Second)
}

// whole returns n, which checkWhole accepts, as an int; 0 when n is nil.
func whole(n *float64) int {
	if n == nil {
		return 0
	}
	return int(*n)
}

// DecodeSeed reads a Seed from its JSON form, one JSON object in UTF-8
// (without a byte order mark) and nothing after it. A key the format does
// not have (keys are matched exactly), one an object gives twice, or a
// value of the wrong JSON type (or a number beyond a float64, or one that
// is not whole but rounds to a whole float64), is an error
// naming its path, such as organizations[0].users[1].rol; null, like any
// other non-object, is an error.
func DecodeSeed(r io.Reader) (Seed, error) {
	br := bufio.NewReader(r)
	if b, _ := br.Peek(len(byteOrderMark)); string(b) == byteOrderMark {
		return Seed{}, errors.New("seed: the file starts with a byte order mark, which JSON does not have (save it as UTF-8 without one)")
	}
	dec := json.NewDecoder(br)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var syntax *json.SyntaxError
		switch {
		case err == io.EOF:
			return Seed{}, errors.New("seed: no JSON object (the file is empty)")
		case errors.As(err, &syntax):
			return Seed{}, fmt.Errorf("seed: at byte %d: %w", syntax.Offset, err)
		}
		return Seed{}, fmt.Errorf("seed: %w", err)
	}
	if i := invalidUTF8(raw); i >= 0 {
		// encoding/json would read each bad byte as U+FFFD.
		return Seed{}, fmt.Errorf("seed: not valid UTF-8, at byte %d of the JSON object", i+1)
	}
	if i := jsonobject.LoneSurrogateAt(raw); i >= 0 {
		// Likewise read as U+FFFD; the API refuses it in a body.
		return Seed{}, fmt.Errorf("seed: a lone surrogate escape (%s), which is no character, at byte %d of the JSON object", raw[i:i+6], i+1)
	}
	// Only white space may follow. (dec.More would let a stray "]" or "}"
	// through.)
	if _, err := dec.Token(); err != io.EOF {
		return Seed{}, errors.New("seed: data after the JSON object")
	}
	if err := checkKeys(raw, reflect.TypeFor[Seed](), ""); err != nil {
		return Seed{}, fmt.Errorf("seed: %w", err)
	}
	if kind := jsonKind(raw); kind != "an object" && kind != "null" {
		return Seed{}, fmt.Errorf("seed: want a JSON object, not %s", kind)
	}
	// Through a pointer, which a JSON null leaves nil: null is no seed.
	var sd *Seed
	if err := json.Unmarshal(raw, &sd); err != nil {
		return Seed{}, fmt.Errorf("seed: %w", err)
	}
	if sd == nil {
		return Seed{}, errors.New("seed: want a JSON object, not null")
	}
	return *sd, nil
}

// byteOrderMark is the UTF-8 encoding of U+FEFF.
const byteOrderMark = "\ufeff"

// invalidUTF8 returns the index of the first byte of b that is not part
// of valid UTF-8, or -1.
func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// checkKeys returns an error naming the first key, at any depth of raw
// (valid JSON at path), that the JSON form of t does not have, that an
// object gives twice, or whose value is of the wrong JSON type (a number
// for a string, say; null is the zero value of any type, as
// json.Unmarshal has it).
func checkKeys(raw json.RawMessage, t reflect.Type, path string) error {
	if t.Kind() != reflect.Pointer && path != "" {
		if want, got := kindOf(t), jsonKind(raw); got != "null" && got != want {
			return fmt.Errorf("%s: want %s, not %s", path, want, got)
		}
		if t.Kind() == reflect.Float64 && jsonKind(raw) == "a number" {
			lit := bytes.TrimSpace(raw)
			f, err := strconv.ParseFloat(string(lit), 64)
			switch {
			case err != nil:
				return fmt.Errorf("%s: %s is out of range", path, lit)
			case f == math.Trunc(f) && !jsonobject.WholeNumber(lit):
				// Every number of a seed is a whole one: one that
				// rounds to a whole float64 would pass for it.
				return fmt.Errorf("%s: %s is not a whole number", path, lit)
			}
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkKeys(raw, t.Elem(), path)
	case reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		// Members yields nothing of a value that is not an object and stops
		// at malformed JSON: the decoding reports both.
		seen := map[string]bool{}
		for key, v := range jsonobject.Members(raw) {
			at := key
			if path != "" {
				at = path + "." + key
			}
			f, ok := fieldOf(t, key)
			switch {
			case !ok:
				return fmt.Errorf("%s: unknown key", at)
			case seen[key]:
				return fmt.Errorf("%s: duplicate key", at)
			}
			seen[key] = true
			if err := checkKeys(v, f.Type, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// kindOf names the JSON type of the seed's Go type t, which is not a
// pointer, as jsonKind does.
func kindOf(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	default: // float64
		return "a number"
	}
}

// jsonKind names the JSON type of raw, a valid JSON value.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '{':
		return "an object"
	default:
		return "a number"
	}
}

// fieldOf returns the field of the struct type t whose json tag names key.
func fieldOf(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// seedUser turns a SeedUser into the inputs of CreateUser and SeedToken.
func (u SeedUser) newUser() NewUser {
	nu := NewUser{
		Username:         u.Username,
		Role:             Role(u.Role),
		IsServiceAccount: u.IsServiceAccount,
		Description:      u.Description,
		Email:            u.Email,
		FirstName:        u.FirstName,
		LastName:         u.LastName,
		Privileges:       u.Privileges,
	}
	if u.Instances != nil {
		nu.Instances = &InstanceConfig{ReadWrite: u.Instances.ReadWrite.side(), ReadScaling: u.Instances.ReadScaling.side()}
	}
	return nu
}

// side is s as an InstanceSide; a missing side (which Validate refuses)
// is the zero one.
func (s *SeedInstanceSide) side() InstanceSide {
	if s == nil {
		return InstanceSide{}
	}
	return InstanceSide{Size: Size(s.InstanceSize), FlockSize: whole(s.FlockSize), Cooldown: seconds(s.CooldownSeconds)}
}

func (t SeedToken) input() SeedTokenInput {
	in := SeedTokenInput{Value: t.Value, CreateTokenInput: CreateTokenInput{Name: t.Name, TTL: seconds(t.TTL), Description: t.Description}}
	if t.TokenType != "" {
		in.Type = Some(TokenType(t.TokenType))
	}
	return in
}

func (d SeedDive) dive() Dive {
	dv := Dive{ID: d.ID, Title: d.Title, RequiredResources: make([]Resource, len(d.RequiredResources))}
	if d.Version != nil {
		dv.Version = int(*d.Version)
		if dv.Version == 0 {
			dv.Version = -1 // explicit 0 is invalid, not the default
		}
	}
	for i, r := range d.RequiredResources {
		dv.RequiredResources[i] = Resource(r)
	}
	return dv
}

// Validate checks every entry of sd against the rules of the API and
// returns an error naming the first entry that breaks one: a BAD_REQUEST
// (ErrorCode, errors.Is(err, ErrBadRequest)) whose message is that.
func (sd Seed) Validate() error {
	return refusedSeed(sd.validate())
}

// validate is Validate, its errors plain.
func (sd Seed) validate() error {
	orgs := map[string]bool{}
	values := map[string]bool{}
	for i, o := range sd.Organizations {
		where := orgEntry(i, o.ID)
		if !validOrgID(o.ID) {
			return fmt.Errorf("seed: %s: invalid organization id", where)
		}
		if orgs[o.ID] {
			return fmt.Errorf("seed: %s: duplicate organization id", where)
		}
		orgs[o.ID] = true
		names := map[string]bool{}
		for j, u := range o.Users {
			where := userEntry(where, j, u.Username)
			if in := u.Instances; in != nil {
				for _, side := range []struct {
					name string
					s    *SeedInstanceSide
				}{{"read_write", in.ReadWrite}, {"read_scaling", in.ReadScaling}} {
					// The Go form has no missing side or flock size: they
					// are required here.
					var is issues
					switch {
					case side.s == nil:
						is.required("instances", side.name)
					case side.name == "read_scaling" && side.s.FlockSize == nil:
						is.required("instances", side.name, "flock_size")
					}
					if err := is.err(); err != nil {
						return fmt.Errorf("seed: %s: %w", where, err)
					}
					if side.name == "read_write" && side.s.FlockSize != nil {
						// A key of the Go form that the wire's read_write has not.
						return fmt.Errorf("seed: %s: instances.read_write.flock_size: unknown key (only read_scaling has a flock)", where)
					}
					if err := errors.Join(checkWhole(where, "instances."+side.name+".flock_size", side.s.FlockSize),
						checkWhole(where, "instances."+side.name+".cooldown_seconds", side.s.CooldownSeconds)); err != nil {
						return err
					}
				}
			}
			if err := validateNewUser(u.newUser()); err != nil {
				return fmt.Errorf("seed: %s: %w", where, err)
			}
			if f := FoldUsername(u.Username); names[f] {
				return fmt.Errorf("seed: %s: duplicate username", where)
			} else {
				names[f] = true
			}
			for k, t := range u.Tokens {
				where := tokenEntry(where, k, t.Name)
				if err := checkWhole(where, "ttl", t.TTL); err != nil {
					return err
				}
				var is issues
				t.input().check(&is)
				if err := is.err(); err != nil {
					return fmt.Errorf("seed: %s: %w", where, err)
				}
				if values[t.Value] {
					return fmt.Errorf("seed: %s: duplicate token value", where)
				}
				values[t.Value] = true
			}
			ducklings := map[string]bool{}
			for k, d := range u.Ducklings {
				if _, ok := parseDucklingID(d.ID); !ok || (DucklingState(d.Status) != StatusActive && DucklingState(d.Status) != StatusCooldown) {
					return fmt.Errorf("seed: %s.ducklings[%d] (%s): id must be \"rw\" or \"rs.N\" (N < 64) and status \"active\" or \"cooldown\"", where, k, quoted(d.ID))
				}
				if ducklings[d.ID] {
					return fmt.Errorf("seed: %s.ducklings[%d] (%s): duplicate duckling id", where, k, quoted(d.ID))
				}
				ducklings[d.ID] = true
			}
		}
		dives := map[string]bool{}
		for j, d := range o.Dives {
			where := fmt.Sprintf("%s.dives[%d] (%s)", where, j, quoted(d.ID))
			if err := checkWhole(where, "version", d.Version); err != nil {
				return err
			}
			if err := validateDive(d.dive()); err != nil {
				return fmt.Errorf("seed: %s: %w", where, err)
			}
			id, _ := canonicalUUID(d.ID)
			if dives[id] {
				return fmt.Errorf("seed: %s: duplicate dive id", where)
			}
			dives[id] = true
		}
	}
	return nil
}

// ApplySeed validates sd and then loads it. Each entry is loaded once in
// the life of a store: what exists already (an organization, a user with
// the same username, a token with the same value, a Dive) is left as it
// is, and a user or token that an earlier loading created and that was
// deleted, revoked or expired since is not created again (the store keeps
// a mark of each loaded user and token; see storage.Store.MarkSeeded). A
// token value revoked from another user (in another organization, say),
// while the store remembers the revocation, is refused: a seed gives a
// revoked value only to the user it was revoked from. So
// applying the same seed twice changes nothing, and brings back nothing,
// also when two processes sharing the store apply it at once (a user the
// other created meanwhile is one that exists).
// Duckling activity is recorded for users no loading completed before. On a
// validation error nothing is written, nor when the seed would take an
// organization past the limit of users or a user past the limit of live
// tokens, nor when an entry would add tokens to an existing user of
// another role or kind (user or service account) than it declares, nor
// for a value revoked from another user.
func (s *Service) ApplySeed(ctx context.Context, sd Seed) error {
	if err := sd.Validate(); err != nil {
		return err
	}
	marks := make([]seedMarks, len(sd.Organizations))
	for i, o := range sd.Organizations {
		keys, err := s.store.SeedMarks(ctx, o.ID)
		if err != nil {
			return fmt.Errorf("seed: %w", internal(ctx, "read seed marks", err))
		}
		marks[i] = make(seedMarks, len(keys))
		for _, k := range keys {
			marks[i][k] = true
		}
	}
	if err := s.checkSeedUsers(ctx, sd, marks); err != nil {
		return refusedSeed(err)
	}
	if err := s.checkSeedTokens(ctx, sd, marks); err != nil {
		return refusedSeed(err)
	}
	for i, o := range sd.Organizations {
		org := orgEntry(i, o.ID)
		if err := s.CreateOrg(ctx, o.ID); err != nil {
			return fmt.Errorf("seed: %s: %w", org, err)
		}
		for j, u := range o.Users {
			if err := s.seedUser(ctx, o.ID, userEntry(org, j, u.Username), u, marks[i]); err != nil {
				return err
			}
		}
		for j, d := range o.Dives {
			if err := s.seedDive(ctx, o.ID, d.dive()); err != nil {
				return fmt.Errorf("seed: %s.dives[%d] (%s): %w", org, j, quoted(d.ID), err)
			}
		}
	}
	return nil
}

// refusedSeed makes err, a seed's refusal, a BAD_REQUEST for ErrorCode
// and errors.Is, keeping its message; an error that carries an *Error
// already (a store's failure, INTERNAL_SERVER_ERROR) is left as it is.
func refusedSeed(err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return seedRefusal{err}
}

// seedRefusal is a seed refused: its message names the entry; as an
// *Error it is a BAD_REQUEST with that message as its one issue.
type seedRefusal struct{ err error }

func (r seedRefusal) Error() string { return r.err.Error() }
func (r seedRefusal) Unwrap() error { return r.err }

// Is makes errors.Is(err, ErrBadRequest) hold.
func (r seedRefusal) Is(target error) bool { return target == ErrBadRequest }

// As gives errors.As (and so ErrorCode) a BAD_REQUEST *Error whose cause
// is the refusal.
func (r seedRefusal) As(target any) bool {
	t, ok := target.(**Error)
	if ok {
		*t = &Error{Code: CodeBadRequest, Issues: []Issue{{Message: r.err.Error(), Code: IssueNotAllowed}}, Err: r.err}
	}
	return ok
}

// seedMarks are the users and tokens that loadings of seeds put into one
// organization, each by its mark (storage.Store.MarkSeeded).
type seedMarks map[string]bool

// The seed marks of a user and of a token.
func userMark(u SeedUser) string { return "user:" + FoldUsername(u.Username) }
func tokenMark(t SeedToken) string {
	d := digestOf(t.Value)
	return "token:" + hex.EncodeToString(d[:])
}

// deleted reports whether u, which the organization does not hold, was
// loaded before: it was deleted since, and stays deleted. A mark an
// earlier version wrote holds the username under its fold
// (casefold.Earlier).
func (m seedMarks) deleted(u SeedUser) bool {
	return m[userMark(u)] || m["user:"+casefold.Earlier(u.Username)]
}

// loaded reports whether t was loaded before: held still, or revoked or
// expired since, it is left as it is.
func (m seedMarks) loaded(t SeedToken) bool { return m[tokenMark(t)] }

// checkSeedUsers refuses, before anything is written, an organization
// whose new seeded users would take it past the limit of users (which
// would otherwise stop the loading half-way), naming the first user past
// it. A user loaded before and deleted since is not created again, so it
// takes no place. An organization with room for every user of the seed
// costs one store call. marks are the seed marks of each organization of
// sd.
func (s *Service) checkSeedUsers(ctx context.Context, sd Seed, marks []seedMarks) error {
	if s.maxUsers == 0 {
		return nil
	}
	for i, o := range sd.Organizations {
		page, err := s.store.ListUsers(ctx, o.ID, storage.UserQuery{Limit: 1})
		if err != nil {
			return fmt.Errorf("seed: %w", internal(ctx, "check users", err))
		}
		held := page.Total
		if held+len(o.Users) <= s.maxUsers {
			continue
		}
		n := held
		for j, u := range o.Users {
			_, err := s.store.GetUser(ctx, o.ID, FoldUsername(u.Username))
			switch {
			case err == nil || errors.Is(err, storage.ErrNotFound) && marks[i].deleted(u):
				continue // held, or deleted since it was loaded: no new place
			case !errors.Is(err, storage.ErrNotFound):
				return fmt.Errorf("seed: %w", internal(ctx, "check user", err))
			}
			if n++; n > s.maxUsers {
				return fmt.Errorf("seed: %s: the organization would hold more than the limit of %d users (it holds %d)",
					userEntry(orgEntry(i, o.ID), j, u.Username), s.maxUsers, held)
			}
		}
	}
	return nil
}

// checkSeedTokens refuses, before anything is written, a seed token value
// that the store already holds for a user other than the one the seed
// gives it to or that was revoked from another user (while the store
// remembers the revocation), new tokens for a user that exists with
// another role or kind (user or service account) than its entry
// declares, and a user
// whose new seeded tokens would take it past the limit of live tokens
// (which would otherwise stop the loading half-way).
// marks are the seed marks of each organization of sd.
func (s *Service) checkSeedTokens(ctx context.Context, sd Seed, marks []seedMarks) error {
	now := s.clock()
	for i, o := range sd.Organizations {
		for j, u := range o.Users {
			rec, err := s.store.GetUser(ctx, o.ID, FoldUsername(u.Username))
			found := err == nil
			switch {
			case err != nil && !errors.Is(err, storage.ErrNotFound):
				return fmt.Errorf("seed: %w", internal(ctx, "check user", err))
			case !found && marks[i].deleted(u):
				continue // deleted since it was loaded: nothing of it is created
			}
			added := 0
			for k, t := range u.Tokens {
				if marks[i].loaded(t) {
					continue // it is not created again
				}
				a, err := s.store.ReadAccess(ctx, storage.AccessQuery{Digest: digestOf(t.Value), LiveAt: now})
				switch {
				case errors.Is(err, storage.ErrRevoked):
					// Revoked, and not loaded by this organization's
					// seed (that one stays revoked, above). Given again
					// only to the user it was revoked from, as when a
					// loading cut short withdrew its creation: a seed
					// does not hand a revoked, perhaps leaked,
					// credential to anyone else.
					if found && !revokedFromAnother(a, o.ID, rec.ID) {
						added++
						continue
					}
					return fmt.Errorf("seed: %s: token value was revoked from another user; a seed does not give it to anyone else (give the entry another value)", tokenEntry(userEntry(orgEntry(i, o.ID), j, u.Username), k, t.Name))
				case errors.Is(err, storage.ErrNotFound):
					added++
					continue
				case err != nil:
					return fmt.Errorf("seed: %w", internal(ctx, "check token", err))
				}
				if cred := a.Credential; cred.User.Org != o.ID || cred.User.FoldedUsername != FoldUsername(u.Username) {
					return fmt.Errorf("seed: %s: token value already belongs to another user", tokenEntry(userEntry(orgEntry(i, o.ID), j, u.Username), k, t.Name))
				}
			}
			if added == 0 {
				continue
			}
			// The tokens would be the existing user's, with its role and
			// privileges: refused when it is not the kind of user the
			// entry declares (a role and being a service account never
			// change), lest a token declared for a Member be an Admin's.
			if want := u.newUser(); found && (Role(rec.Role) != cmp.Or(want.Role, RoleMember) || rec.IsServiceAccount != want.IsServiceAccount) {
				return fmt.Errorf("seed: %s: the organization's user %q is %s, the entry declares %s: its new tokens would be that user's",
					userEntry(orgEntry(i, o.ID), j, u.Username), rec.Username, userKind(Role(rec.Role), rec.IsServiceAccount), userKind(cmp.Or(want.Role, RoleMember), want.IsServiceAccount))
			}
			live := 0
			if found {
				ts, err := s.store.ListTokens(ctx, o.ID, rec.ID, now)
				if err != nil {
					return fmt.Errorf("seed: %w", internal(ctx, "check tokens", err))
				}
				live = len(ts)
			}
			if live+added > s.maxTokens {
				return fmt.Errorf("seed: %s: %d new tokens would pass the limit of %d live tokens a user (it holds %d)",
					userEntry(orgEntry(i, o.ID), j, u.Username), added, s.maxTokens, live)
			}
		}
	}
	return nil
}

// userKind says in words what kind of user a role and the service
// account flag make, for a message.
func userKind(r Role, serviceAccount bool) string {
	article, kind := "a", "user"
	if r == RoleAdmin {
		article = "an"
	}
	if serviceAccount {
		kind = "service account"
	}
	return fmt.Sprintf("%s %s %s", article, r, kind)
}

// seedUser loads u into org unless it was loaded before and deleted
// since (marked is the org's seed marks), with those of its tokens not
// loaded before, then marks the user and its tokens as loaded. Its errors
// name the entry where, or the entry's token or Duckling.
func (s *Service) seedUser(ctx context.Context, org, where string, u SeedUser, marked seedMarks) error {
	_, err := s.GetUser(ctx, org, u.Username)
	if ErrorCode(err) == CodeNotFound {
		if marked.deleted(u) {
			return nil
		}
		_, err = s.CreateUser(ctx, org, u.newUser())
		if taken(err) { // created since, by another process loading it
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("seed: %s: %w", where, err)
	}
	loaded := []string{userMark(u)}
	for k, t := range u.Tokens {
		if marked.loaded(t) {
			continue
		}
		if _, err := s.seedToken(ctx, org, u.Username, t.input(), true); err != nil {
			return fmt.Errorf("seed: %s: %w", tokenEntry(where, k, t.Name), err)
		}
		loaded = append(loaded, tokenMark(t))
	}
	// A user not marked yet is one no loading completed: this one
	// records its Ducklings, also when an earlier loading created the
	// user and stopped before (its creation's answer lost, say).
	if !marked[userMark(u)] {
		for k, d := range u.Ducklings {
			if err := s.markDuckling(ctx, org, u.Username, d.ID, DucklingState(d.Status) == StatusActive); err != nil {
				return fmt.Errorf("seed: %s.ducklings[%d] (%s): %w", where, k, quoted(d.ID), err)
			}
		}
	}
	// Marked last: should the loading stop before, the next one finds
	// what this one created and completes it.
	if err := s.store.MarkSeeded(ctx, org, loaded); err != nil {
		return fmt.Errorf("seed: %s: %w", where, internal(ctx, "mark seeded", err))
	}
	return nil
}

// seedDive registers d in org unless a Dive with its id exists. It reads
// first, so that loading a seed again writes nothing; the creation alone
// settles a race with another process seeding the same store, so that
// the Dive is registered, and its event recorded, once.
func (s *Service) seedDive(ctx context.Context, org string, d Dive) error {
	id, _ := canonicalUUID(d.ID) // Validate checked it
	_, err := s.store.GetDive(ctx, org, id)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, storage.ErrNotFound):
		return internal(ctx, "get dive", err)
	}
	if err := s.registerDive(ctx, org, d, true); !errors.Is(err, storage.ErrAlreadyExists) {
		return err
	}
	return nil
}
