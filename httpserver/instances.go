package httpserver

import (
	"net/http"
	"time"

	"github.com/orgadmin/orgadmin"
)

func (h *Handler) getInstanceConfig(_ http.ResponseWriter, r *http.Request, c credential) (configAnswer, error) {
	cfg, err := h.svc.GetInstanceConfig(r.Context(), c.auth(), r.PathValue("username"))
	return configAnswer(cfg), err
}

func (h *Handler) setInstanceConfig(w http.ResponseWriter, r *http.Request, c credential) (configAnswer, error) {
	d := h.readBody(w, r)
	defer d.release()
	var in orgadmin.SetInstanceConfigInput
	if cfg := d.object(d.body, "config", true); cfg != nil {
		in.Config = orgadmin.InstanceConfig{
			ReadWrite:   d.instanceSide(cfg, readWritePath, false),
			ReadScaling: d.instanceSide(cfg, readScalingPath, true),
		}
	}
	in.DecodeIssues = d.issues
	cfg, err := h.svc.SetInstanceConfig(d.context(r), c.auth(), r.PathValue("username"), in)
	return configAnswer(cfg), err
}

// The paths of the sides of a configuration in the body: made once, as
// a side's path is made for every request, and read only (an issue's
// path is a copy).
var (
	readWritePath   = []any{"config", "read_write"}
	readScalingPath = []any{"config", "read_scaling"}
)

// instanceSide decodes the side of the configuration cfg at path (config,
// then its key); flock_size is read on the read-scaling side only. What
// is missing or mistyped is a decode issue, and left zero.
func (d *decoder) instanceSide(cfg object, path []any, scaling bool) orgadmin.InstanceSide {
	o := d.object(cfg, path[1].(string), true, path[:1]...)
	if o == nil {
		return orgadmin.InstanceSide{}
	}
	s := orgadmin.InstanceSide{
		Size:     orgadmin.Size(d.string(o, "instance_size", true, path...).Value),
		Cooldown: d.seconds(o, "cooldown_seconds", false, path...),
	}
	if scaling {
		s.FlockSize = d.int(o, "flock_size", true, path...).Value
	}
	return s
}

func (h *Handler) getActiveAccounts(_ http.ResponseWriter, r *http.Request, c credential) (activeAccounts, error) {
	accs, err := h.svc.GetActiveAccounts(r.Context(), c.auth())
	return activeAccounts(accs), err
}

// configAnswer is an instance configuration: {"read_write": side,
// "read_scaling": side}, each side {"instance_size", "flock_size"?,
// "cooldown_seconds"?}.
type configAnswer orgadmin.InstanceConfig

func (c configAnswer) appendJSON(b []byte) []byte {
	b = appendSide(appendKey(append(b, '{'), "read_write"), c.ReadWrite, false)
	b = appendSide(appendKey(b, "read_scaling"), c.ReadScaling, true)
	return append(b, '}')
}

// appendSide appends s; flock_size on the read-scaling side only.
func appendSide(b []byte, s orgadmin.InstanceSide, scaling bool) []byte {
	b = appendField(append(b, '{'), "instance_size", string(s.Size))
	if scaling {
		b = appendInt(b, "flock_size", s.FlockSize)
	}
	if cd, ok := s.Cooldown.Get(); ok {
		b = appendInt(b, "cooldown_seconds", int(cd/time.Second))
	}
	return append(b, '}')
}

// activeAccounts is the answer of get active accounts: {"accounts":
// [{"username", "ducklings": [{"id", "type", "status"}]}]}.
type activeAccounts []orgadmin.ActiveAccount

func (as activeAccounts) appendJSON(b []byte) []byte {
	return append(appendArray(append(b, `{"accounts":`...), as, appendAccount), '}')
}

func appendAccount(b []byte, a orgadmin.ActiveAccount) []byte {
	b = appendField(append(b, '{'), "username", a.Username)
	return append(appendArray(appendKey(b, "ducklings"), a.Ducklings, appendDuckling), '}')
}

func appendDuckling(b []byte, d orgadmin.Duckling) []byte {
	b = appendField(append(b, '{'), "id", d.ID)
	b = appendField(b, "type", string(d.Type))
	return append(appendField(b, "status", string(d.Status)), '}')
}
