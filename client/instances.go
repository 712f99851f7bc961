package client

import (
	"context"
	"net/http"
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

// InstanceConfig is a user's compute instance configuration; both sides
// are always sent and always answered.
type InstanceConfig struct {
	ReadWrite   ReadWriteInstance   `json:"read_write"`
	ReadScaling ReadScalingInstance `json:"read_scaling"`
}

// ReadWriteInstance configures the read-write instance.
type ReadWriteInstance struct {
	InstanceSize Size `json:"instance_size"`
	// CooldownSeconds is 60 to 86400, and may not be set on a pulse
	// instance; zero sends none (the size's default). Answers carry the
	// effective cooldown of every size but pulse.
	CooldownSeconds int `json:"cooldown_seconds,omitempty"`
}

// ReadScalingInstance configures the read-scaling flock.
type ReadScalingInstance struct {
	InstanceSize Size `json:"instance_size"`
	// FlockSize is the number of replicas, 0 to 64.
	FlockSize int `json:"flock_size"`
	// CooldownSeconds is as for ReadWriteInstance.
	CooldownSeconds int `json:"cooldown_seconds,omitempty"`
}

// GetInstanceConfig returns the instance configuration of the user
// (operation instances-getInstanceConfigForUser). The caller must be an
// Admin or that user.
func (c *Client) GetInstanceConfig(ctx context.Context, username string) (*InstanceConfig, error) {
	var out InstanceConfig
	if err := c.call(ctx, request{method: http.MethodGet, url: c.userPath(username, "instances"), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetInstanceConfig replaces the whole instance configuration of the user
// and returns the result (operation instances-setInstanceConfigForUser).
// The caller must be an Admin or that user.
func (c *Client) SetInstanceConfig(ctx context.Context, username string, cfg InstanceConfig) (*InstanceConfig, error) {
	var out InstanceConfig
	body := struct {
		Config InstanceConfig `json:"config"`
	}{cfg}
	if err := c.call(ctx, request{method: http.MethodPut, url: c.userPath(username, "instances"), body: body, auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Duckling statuses and types.
const (
	StatusActive   = "active"
	StatusCooldown = "cooldown"

	DucklingReadWrite   = "read_write"
	DucklingReadScaling = "read_scaling"
)

// ActiveAccount is an account with at least one running instance.
type ActiveAccount struct {
	Username string `json:"username"`
	// Ducklings are the running instances: "rw" first, then "rs.N" by N.
	Ducklings []Duckling `json:"ducklings"`
}

// Duckling is one running instance of an account.
type Duckling struct {
	// ID is "rw", or "rs.N" for read-scaling replica N.
	ID string `json:"id"`
	// Type is DucklingReadWrite or DucklingReadScaling.
	Type string `json:"type"`
	// Status is StatusActive or StatusCooldown.
	Status string `json:"status"`
}

// GetActiveAccounts returns the accounts of the organization with running
// instances, ordered by username (operation instances-getActiveAccounts, a
// preview). The caller must be an Admin.
func (c *Client) GetActiveAccounts(ctx context.Context) ([]ActiveAccount, error) {
	var out struct {
		Accounts []ActiveAccount `json:"accounts"`
	}
	if err := c.call(ctx, request{method: http.MethodGet, url: c.base + "/v1/active_accounts", auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	return out.Accounts, nil
}
