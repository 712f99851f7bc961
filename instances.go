package orgadmin

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orgadmin/orgadmin/storage"
)

// Size is a compute instance size.
type Size string

// The instance sizes, smallest first.
const (
	SizePulse    Size = "pulse"
	SizeStandard Size = "standard"
	SizeJumbo    Size = "jumbo"
	SizeMega     Size = "mega"
	SizeGiga     Size = "giga"
)

var sizes = []Size{SizePulse, SizeStandard, SizeJumbo, SizeMega, SizeGiga}

// DefaultCooldown returns the effective cooldown of a size when none is set:
// standard and jumbo 60 seconds, mega 300, giga 600. Pulse instances have no
// configurable cooldown; they cool down for one second.
func DefaultCooldown(size Size) time.Duration {
	switch size {
	case SizeMega:
		return 300 * time.Second
	case SizeGiga:
		return 600 * time.Second
	case SizePulse:
		return time.Second
	default:
		return 60 * time.Second
	}
}

// InstanceConfig is a user's compute instance configuration: both sides
// are required in requests and always present in responses.
type InstanceConfig struct {
	ReadWrite   InstanceSide
	ReadScaling InstanceSide
}

// InstanceSide configures one instance kind.
type InstanceSide struct {
	// Size is one of the Size constants; required.
	Size Size
	// FlockSize is the number of read-scaling replicas, 0 to 64, on the
	// read-scaling side; it is ignored on the read-write side.
	FlockSize int
	// Cooldown is a whole number of seconds from MinCooldown to
	// MaxCooldown (on the wire, cooldown_seconds); it may not be set on a
	// pulse side. Unset means the size's default (DefaultCooldown). In
	// answers it is set, to the effective cooldown, on every non-pulse
	// side, and unset on pulse sides.
	Cooldown Optional[time.Duration]
}

// check adds every problem of c to is, under path.
func (c InstanceConfig) check(is *issues, path ...any) {
	var buf [maxCheckDepth]any // the sides' paths, on the stack
	checkSide(is, c.ReadWrite, false, append(append(buf[:0], path...), "read_write")...)
	checkSide(is, c.ReadScaling, true, append(append(buf[:0], path...), "read_scaling")...)
}

// maxCheckDepth is the depth of path a check builds on its stack; a
// deeper one (a seed's) is built on the heap.
const maxCheckDepth = 8

func checkSide(is *issues, s InstanceSide, scaling bool, path ...any) {
	var buf [maxCheckDepth]any // a field's path, on the stack
	at := func(field string) []any { return append(append(buf[:0], path...), field) }
	// An empty size is a value outside the enumeration, as an empty
	// token_type is; a body without the field has its decode issue,
	// "Required", instead.
	checkEnum(is, s.Size, sizes, at("instance_size")...)
	if scaling {
		is.checkRange(int64(s.FlockSize), 0, MaxFlockSize, at("flock_size")...)
	}
	if d, ok := s.Cooldown.Get(); ok {
		if s.Size == SizePulse {
			is.add(IssueNotAllowed, "cooldown_seconds cannot be set on a pulse instance", at("cooldown_seconds")...)
		} else {
			is.checkSeconds(d, int64(MinCooldown/time.Second), int64(MaxCooldown/time.Second), at("cooldown_seconds")...)
		}
	}
}

// record converts c, which check finds nothing wrong with.
func (c InstanceConfig) record() storage.InstanceConfig {
	return storage.InstanceConfig{
		ReadWrite: storage.InstanceSide{
			Size:            string(c.ReadWrite.Size),
			CooldownSeconds: int(c.ReadWrite.Cooldown.Value / time.Second),
		},
		ReadScaling: storage.InstanceSide{
			Size:            string(c.ReadScaling.Size),
			FlockSize:       c.ReadScaling.FlockSize,
			CooldownSeconds: int(c.ReadScaling.Cooldown.Value / time.Second),
		},
	}
}

// effectiveCooldown is the cooldown of a stored side: as set, or the size's
// default.
func effectiveCooldown(s storage.InstanceSide) time.Duration {
	if s.CooldownSeconds > 0 && Size(s.Size) != SizePulse {
		return time.Duration(s.CooldownSeconds) * time.Second
	}
	return DefaultCooldown(Size(s.Size))
}

// configFromRecord is the answer form of a stored configuration.
func configFromRecord(c storage.InstanceConfig) InstanceConfig {
	side := func(s storage.InstanceSide, scaling bool) InstanceSide {
		out := InstanceSide{Size: Size(s.Size)}
		if scaling {
			out.FlockSize = s.FlockSize
		}
		if out.Size != SizePulse {
			out.Cooldown = Some(effectiveCooldown(s))
		}
		return out
	}
	return InstanceConfig{
		ReadWrite:   side(c.ReadWrite, false),
		ReadScaling: side(c.ReadScaling, true),
	}
}

// GetInstanceConfig returns the instance configuration of the user named
// username in the caller's org. It fails with FORBIDDEN unless the caller is
// an Admin or that user, with BAD_REQUEST for a malformed username and with
// NOT_FOUND when no such user exists.
func (s *Service) GetInstanceConfig(ctx context.Context, a Auth, username string) (InstanceConfig, error) {
	t := pathTarget(username)
	var c call
	if err := s.begin(ctx, &c, a, opGetInstances, &t, readUser, nil); err != nil {
		return InstanceConfig{}, err
	}
	u, ok := c.target()
	if !ok {
		return InstanceConfig{}, notFound("user", "username")
	}
	return configFromRecord(u.Instances), nil
}

// SetInstanceConfigInput is the body of set instance configuration.
type SetInstanceConfigInput struct {
	Config InstanceConfig
	// DecodeIssues are the problems found while decoding the input from
	// its wire form; see CreateTokenInput.DecodeIssues.
	DecodeIssues []Issue
}

// record returns the configuration in, with every problem of in.
func (in SetInstanceConfigInput) record() (storage.InstanceConfig, issues) {
	var is issues
	in.Config.check(&is, "config")
	is = is.withDecoded(in.DecodeIssues)
	if len(is) > 0 {
		return storage.InstanceConfig{}, is
	}
	return in.Config.record(), nil
}

// SetInstanceConfig replaces, atomically, the whole instance configuration
// of the user named username in the caller's org and returns it as
// GetInstanceConfig would. It fails like GetInstanceConfig, and with
// BAD_REQUEST when the configuration breaks a rule.
func (s *Service) SetInstanceConfig(ctx context.Context, a Auth, username string, in SetInstanceConfigInput) (InstanceConfig, error) {
	t := pathTarget(username)
	rec, is := in.record()
	var c call
	if err := s.begin(ctx, &c, a, opSetInstances, &t, readUser, is); err != nil {
		return InstanceConfig{}, err
	}
	u, ok := c.target()
	if !t.canExist || !ok {
		return InstanceConfig{}, notFound("user", "username")
	}
	aud, ev, err := s.audited(ctx, c.org, actorOf(c.Caller), change{
		action: ActionInstancesSet, kind: TargetUser, targetID: u.ID, targetUsername: u.Username,
		before: configJSON(u.Instances), after: configJSON(rec),
	})
	if err != nil {
		return InstanceConfig{}, err
	}
	if err := s.store.SetInstances(ctx, c.org, u.ID, rec, aud); err != nil {
		return InstanceConfig{}, s.storeErr(ctx, "set instances", err, "user", "username")
	}
	s.emit(ctx, ev)
	return configFromRecord(rec), nil
}

// DucklingState is the state of a running Duckling.
type DucklingState string

// Duckling states.
const (
	StatusActive   DucklingState = "active"
	StatusCooldown DucklingState = "cooldown"
)

// DucklingType is the kind of a Duckling: the side it runs.
type DucklingType string

// Duckling types.
const (
	DucklingReadWrite   DucklingType = "read_write"
	DucklingReadScaling DucklingType = "read_scaling"
)

// ActiveAccount is an account with at least one running Duckling.
type ActiveAccount struct {
	Username  string
	Ducklings []Duckling
}

// Duckling is one running instance of an account.
type Duckling struct {
	// ID is "rw" or "rs.N".
	ID     string
	Type   DucklingType
	Status DucklingState
}

// parseDucklingID returns the replica number of "rs.N" (N from 0 to 63,
// without leading zeros), or -1 for "rw". It reports false for anything
// else.
func parseDucklingID(id string) (int, bool) {
	if id == "rw" {
		return -1, true
	}
	digits, ok := strings.CutPrefix(id, "rs.")
	if !ok || digits == "" || len(digits) > 2 || (len(digits) > 1 && digits[0] == '0') ||
		strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || n >= MaxFlockSize {
		return 0, false
	}
	return n, true
}

// MarkDucklingActive records that the Duckling id ("rw" or "rs.N") of the
// user of org named username is running and busy. The mark lasts for the
// configured lease unless renewed. It fails with BAD_REQUEST for a
// malformed id and NOT_FOUND when the user does not exist.
func (s *Service) MarkDucklingActive(ctx context.Context, org, username, id string) error {
	return s.markDuckling(ctx, org, username, id, true)
}

// MarkDucklingIdle records that the Duckling id of the user of org named
// username went idle now: it is in cooldown for the effective cooldown of its
// side, then stops. It fails like MarkDucklingActive.
func (s *Service) MarkDucklingIdle(ctx context.Context, org, username, id string) error {
	return s.markDuckling(ctx, org, username, id, false)
}

func (s *Service) markDuckling(ctx context.Context, org, username, id string, active bool) error {
	if _, ok := parseDucklingID(id); !ok {
		return badRequest(Issue{Message: `Duckling id must be "rw" or "rs.N" with N from 0 to 63`, Path: NewPath("id"), Code: IssueInvalidString})
	}
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return err
	}
	d := storage.Duckling{Org: org, UserID: u.ID, ID: id, Active: active, At: s.clock()}
	if err := s.store.SetDuckling(ctx, d); err != nil {
		return s.storeErr(ctx, "set duckling", err, "user", "username")
	}
	return nil
}

// GetActiveAccounts returns the accounts of the caller's org that have at
// least one running Duckling, ordered by folded username, each with its
// Ducklings ("rw" first, then "rs.N" by N). It fails with FORBIDDEN unless
// the caller is an Admin.
func (s *Service) GetActiveAccounts(ctx context.Context, a Auth) ([]ActiveAccount, error) {
	var c call
	if err := s.begin(ctx, &c, a, opGetActiveAccounts, nil, readNone, nil); err != nil {
		return nil, err
	}
	acts, err := s.store.ListActivity(ctx, c.org)
	if err != nil {
		return nil, internal(ctx, "list activity", err)
	}
	now := s.now()
	out := []ActiveAccount{}
	for _, a := range acts {
		type running struct {
			n int
			d Duckling
		}
		var rs []running
		for _, d := range a.Ducklings {
			n, ok := parseDucklingID(d.ID)
			if !ok {
				continue
			}
			side, typ := a.User.Instances.ReadWrite, DucklingReadWrite
			if n >= 0 {
				side, typ = a.User.Instances.ReadScaling, DucklingReadScaling
				if n >= side.FlockSize {
					continue
				}
			}
			if st := s.ducklingStatus(d, side, now); st != "" {
				rs = append(rs, running{n, Duckling{ID: d.ID, Type: typ, Status: st}})
			}
		}
		if len(rs) == 0 {
			continue
		}
		slices.SortFunc(rs, func(a, b running) int { return a.n - b.n })
		acc := ActiveAccount{Username: a.User.Username, Ducklings: make([]Duckling, len(rs))}
		for i, r := range rs {
			acc.Ducklings[i] = r.d
		}
		out = append(out, acc)
	}
	return out, nil
}

// ducklingStatus returns "active", "cooldown" or "" (not running) for the
// latest report d of a Duckling on side, at now.
func (s *Service) ducklingStatus(d storage.Duckling, side storage.InstanceSide, now time.Time) DucklingState {
	idleSince := d.At
	if d.Active {
		if now.Before(d.At.Add(s.lease)) {
			return StatusActive
		}
		// An active mark not renewed within the lease counts as idle from
		// its last renewal.
	}
	if now.Before(idleSince.Add(effectiveCooldown(side))) {
		return StatusCooldown
	}
	return ""
}
