package httpserver

import (
	"net/http"

	"github.com/orgadmin/orgadmin"
)

type instanceSideJSON struct {
	InstanceSize    string `json:"instance_size"`
	FlockSize       *int   `json:"flock_size,omitempty"`
	CooldownSeconds *int   `json:"cooldown_seconds,omitempty"`
}

type instanceConfigJSON struct {
	ReadWrite   instanceSideJSON `json:"read_write"`
	ReadScaling instanceSideJSON `json:"read_scaling"`
}

func configToJSON(c orgadmin.InstanceConfig) instanceConfigJSON {
	side := func(s *orgadmin.InstanceSide) instanceSideJSON {
		return instanceSideJSON{InstanceSize: s.InstanceSize, FlockSize: s.FlockSize, CooldownSeconds: s.CooldownSeconds}
	}
	return instanceConfigJSON{ReadWrite: side(c.ReadWrite), ReadScaling: side(c.ReadScaling)}
}

type activeAccountsResponse struct {
	Accounts []activeAccountJSON `json:"accounts"`
}

type activeAccountJSON struct {
	Username  string         `json:"username"`
	Ducklings []ducklingJSON `json:"ducklings"`
}

type ducklingJSON struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status string `json:"status"`
}

func (h *Handler) getInstanceConfig(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error) {
	cfg, err := h.svc.GetInstanceConfig(r.Context(), c, p.username)
	if err != nil {
		return nil, err
	}
	return configToJSON(cfg), nil
}

func (h *Handler) setInstanceConfig(w http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error) {
	username := p.username
	if err := h.svc.Authorize(c, orgadmin.OpSetInstances, username); err != nil {
		return nil, err
	}
	o, err := readObject(w, r, h.maxBody)
	if err != nil {
		return nil, err
	}
	var d decoder
	var in orgadmin.SetInstanceConfigInput
	if cfg := d.object(o, "config", true); cfg != nil {
		in.Config = &orgadmin.InstanceConfig{
			ReadWrite:   d.instanceSide(cfg, "read_write", false),
			ReadScaling: d.instanceSide(cfg, "read_scaling", true),
		}
	}
	if err := d.typeErrors(func() error { return orgadmin.ValidateSetInstanceConfig(in) }); err != nil {
		return nil, err
	}
	cfg, err := h.svc.SetInstanceConfig(r.Context(), c, username, in)
	if err != nil {
		return nil, err
	}
	return configToJSON(cfg), nil
}

// instanceSide decodes config[key]; flock_size is read on the read-scaling
// side only.
func (d *decoder) instanceSide(cfg object, key string, scaling bool) *orgadmin.InstanceSide {
	o := d.object(cfg, key, true, "config")
	if o == nil {
		return nil
	}
	path := []any{"config", key}
	s := &orgadmin.InstanceSide{
		InstanceSize:    deref(d.string(o, "instance_size", true, path...)),
		CooldownSeconds: d.int(o, "cooldown_seconds", false, path...),
	}
	if scaling {
		s.FlockSize = d.int(o, "flock_size", true, path...)
	}
	return s
}

func (h *Handler) getActiveAccounts(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller, _ pathParams) (any, error) {
	accs, err := h.svc.GetActiveAccounts(r.Context(), c)
	if err != nil {
		return nil, err
	}
	resp := activeAccountsResponse{Accounts: make([]activeAccountJSON, len(accs))}
	for i, a := range accs {
		ds := make([]ducklingJSON, len(a.Ducklings))
		for j, d := range a.Ducklings {
			ds[j] = ducklingJSON{ID: d.ID, Type: d.Type, Status: d.Status}
		}
		resp.Accounts[i] = activeAccountJSON{Username: a.Username, Ducklings: ds}
	}
	return resp, nil
}
