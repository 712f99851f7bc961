package client

import (
	"context"
	"net/http"
	"time"

	"github.com/orgadmin/orgadmin"
)

// Size is a compute instance size: the orgadmin package's type.
type Size = orgadmin.Size

// The instance sizes, smallest first.
const (
	SizePulse    = orgadmin.SizePulse
	SizeStandard = orgadmin.SizeStandard
	SizeJumbo    = orgadmin.SizeJumbo
	SizeMega     = orgadmin.SizeMega
	SizeGiga     = orgadmin.SizeGiga
)

// InstanceConfig is a user's compute instance configuration, the
// orgadmin package's type; both sides are always sent and always
// answered:
//
//	client.InstanceConfig{
//		ReadWrite:   client.InstanceSide{Size: client.SizeJumbo, Cooldown: client.Some(5 * time.Minute)},
//		ReadScaling: client.InstanceSide{Size: client.SizeStandard, FlockSize: 2},
//	}
//
// A side's Cooldown, when set, is sent as cooldown_seconds. It must be a
// whole number of seconds (else a *ValidationError, before any request)
// from orgadmin.MinCooldown to orgadmin.MaxCooldown (else the API's
// BAD_REQUEST). Answers set it, to the effective cooldown, on every side
// but a pulse one.
type InstanceConfig = orgadmin.InstanceConfig

// InstanceSide configures one instance kind: the orgadmin package's type.
type InstanceSide = orgadmin.InstanceSide

// Optional is a field that may be unset: the orgadmin package's type.
type Optional[T any] = orgadmin.Optional[T]

// Some returns an Optional set to v.
func Some[T any](v T) Optional[T] { return orgadmin.Some(v) }

// configWire is an instance configuration in its wire form.
type configWire struct {
	ReadWrite   sideWire `json:"read_write"`
	ReadScaling sideWire `json:"read_scaling"`
}

// sideWire is a side in its wire form; flock_size is sent on the
// read-scaling side only.
type sideWire struct {
	InstanceSize    Size   `json:"instance_size"`
	FlockSize       *int   `json:"flock_size,omitempty"`
	CooldownSeconds *int64 `json:"cooldown_seconds,omitempty"`
}

// wireConfig returns cfg in its wire form, and issues with those of cfg
// (a cooldown it cannot carry) as a *ValidationError.
func wireConfig(issues []Issue, cfg InstanceConfig) (configWire, error) {
	side := func(s InstanceSide, name string, scaling bool) sideWire {
		w := sideWire{InstanceSize: s.Size}
		if scaling {
			w.FlockSize = &s.FlockSize
		}
		if d, ok := s.Cooldown.Get(); ok {
			issues = checkSeconds(issues, d, "config", name, "cooldown_seconds")
			n := int64(d / time.Second)
			w.CooldownSeconds = &n
		}
		return w
	}
	w := configWire{ReadWrite: side(cfg.ReadWrite, "read_write", false), ReadScaling: side(cfg.ReadScaling, "read_scaling", true)}
	return w, invalid(issues)
}

func (w configWire) config() InstanceConfig {
	side := func(s sideWire) InstanceSide {
		out := InstanceSide{Size: s.InstanceSize}
		if s.FlockSize != nil {
			out.FlockSize = *s.FlockSize
		}
		if s.CooldownSeconds != nil {
			out.Cooldown = Some(time.Duration(*s.CooldownSeconds) * time.Second)
		}
		return out
	}
	return InstanceConfig{ReadWrite: side(w.ReadWrite), ReadScaling: side(w.ReadScaling)}
}

// GetInstanceConfig returns the instance configuration of the user
// (operation instances-getInstanceConfigForUser). The caller must be an
// Admin or that user.
func (c *Client) GetInstanceConfig(ctx context.Context, username string) (*InstanceConfig, error) {
	if err := invalid(checkSegment(nil, "username", username)); err != nil {
		return nil, err
	}
	var out configWire
	if err := c.call(ctx, request{method: http.MethodGet, url: c.userPath(username, "instances"), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	cfg := out.config()
	return &cfg, nil
}

// SetInstanceConfig replaces the whole instance configuration of the user
// and returns the result (operation instances-setInstanceConfigForUser).
// The caller must be an Admin or that user. A cooldown the API cannot
// carry is a *ValidationError, before any request.
func (c *Client) SetInstanceConfig(ctx context.Context, username string, cfg InstanceConfig) (*InstanceConfig, error) {
	w, err := wireConfig(checkSegment(nil, "username", username), cfg)
	if err != nil {
		return nil, err
	}
	body := struct {
		Config configWire `json:"config"`
	}{w}
	var out configWire
	if err := c.call(ctx, request{method: http.MethodPut, url: c.userPath(username, "instances"), body: body, auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	res := out.config()
	return &res, nil
}

// DucklingState is the state of a running instance; DucklingType its
// kind: the orgadmin package's types.
type (
	DucklingState = orgadmin.DucklingState
	DucklingType  = orgadmin.DucklingType
)

// Duckling states and types.
const (
	StatusActive   = orgadmin.StatusActive
	StatusCooldown = orgadmin.StatusCooldown

	DucklingReadWrite   = orgadmin.DucklingReadWrite
	DucklingReadScaling = orgadmin.DucklingReadScaling
)

// ActiveAccount is an account with at least one running instance, its
// Ducklings "rw" first, then "rs.N" by N: the orgadmin package's type.
type ActiveAccount = orgadmin.ActiveAccount

// Duckling is one running instance of an account: the orgadmin package's
// type.
type Duckling = orgadmin.Duckling

// GetActiveAccounts returns the accounts of the organization with running
// instances, ordered by username (operation instances-getActiveAccounts, a
// preview). The caller must be an Admin.
func (c *Client) GetActiveAccounts(ctx context.Context) ([]ActiveAccount, error) {
	var out struct {
		Accounts []struct {
			Username  string `json:"username"`
			Ducklings []struct {
				ID     string        `json:"id"`
				Type   DucklingType  `json:"type"`
				Status DucklingState `json:"status"`
			} `json:"ducklings"`
		} `json:"accounts"`
	}
	if err := c.call(ctx, request{method: http.MethodGet, url: c.base + "/v1/active_accounts", auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	accs := make([]ActiveAccount, len(out.Accounts))
	for i, a := range out.Accounts {
		accs[i] = ActiveAccount{Username: a.Username, Ducklings: make([]Duckling, len(a.Ducklings))}
		for j, d := range a.Ducklings {
			accs[i].Ducklings[j] = Duckling{ID: d.ID, Type: d.Type, Status: d.Status}
		}
	}
	return accs, nil
}
