package httpserver

import (
	"net/http"

	"github.com/orgadmin/orgadmin"
)

type embedSessionResponse struct {
	Session string `json:"session"`
}

func (h *Handler) createEmbedSession(w http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error) {
	if err := h.svc.Authorize(c, orgadmin.OpCreateEmbedSession, ""); err != nil {
		return nil, err
	}
	o, err := readObject(w, r, h.maxBody)
	if err != nil {
		return nil, err
	}
	var d decoder
	in := orgadmin.CreateEmbedSessionInput{
		Username:     deref(d.string(o, "username", true)),
		SessionName:  d.string(o, "session_name", false),
		SessionHint:  d.string(o, "session_hint", false),
		InitialState: d.raw(o, "initial_state"),
		Version:      d.int(o, "version", false),
	}
	if items := d.array(o, "required_resources"); items != nil {
		in.RequiredResources = make([]orgadmin.Resource, 0, len(items))
		for i, raw := range items {
			path := []any{"required_resources", i}
			var res orgadmin.Resource // a mistyped item stays zero, keeping indexes
			if ro := d.item(raw, path); ro != nil {
				res.URL = deref(d.string(ro, "url", true, path...))
				res.Alias = deref(d.string(ro, "alias", false, path...))
			}
			in.RequiredResources = append(in.RequiredResources, res)
		}
	}
	if err := d.typeErrors(func() error { return orgadmin.ValidateCreateEmbedSession(in) }); err != nil {
		return nil, err
	}
	s, err := h.svc.CreateEmbedSession(r.Context(), c, p.diveID, in)
	if err != nil {
		return nil, err
	}
	return embedSessionResponse{Session: s}, nil
}
