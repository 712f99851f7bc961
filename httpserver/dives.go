package httpserver

import (
	"net/http"

	"github.com/orgadmin/orgadmin"
)

func (h *Handler) createEmbedSession(w http.ResponseWriter, r *http.Request, c credential) (embedSessionAnswer, error) {
	d := h.readBody(w, r)
	defer d.release()
	in := orgadmin.CreateEmbedSessionInput{
		Username:     d.string(d.body, "username", true).Value,
		SessionName:  d.optString(d.body, "session_name"),
		SessionHint:  d.optString(d.body, "session_hint"),
		InitialState: d.raw(d.body, "initial_state"),
		Version:      d.int(d.body, "version", false),
	}
	switch items := d.array(d.body, "required_resources"); {
	case len(items) > orgadmin.MaxResources:
		// Refused for its length alone: its items are neither decoded
		// nor their problems listed. One more than the Service allows
		// is enough for it to say so.
		in.RequiredResources = make([]orgadmin.Resource, orgadmin.MaxResources+1)
	case items != nil:
		in.RequiredResources = make([]orgadmin.Resource, 0, len(items))
		for i, raw := range items {
			path := []any{"required_resources", i}
			var res orgadmin.Resource // a mistyped item stays zero, keeping indexes
			if ro := d.item(raw, path); ro != nil {
				res.URL = d.string(ro, "url", true, path...).Value
				res.Alias = d.string(ro, "alias", false, path...).Value
			}
			in.RequiredResources = append(in.RequiredResources, res)
		}
	}
	in.DecodeIssues = d.issues
	s, err := h.svc.CreateEmbedSession(d.context(r), c.auth(), r.PathValue("dive_id"), in)
	return embedSessionAnswer(s), err
}

// embedSessionAnswer is the answer of create embed session: {"session"}.
type embedSessionAnswer string

func (s embedSessionAnswer) appendJSON(b []byte) []byte {
	return append(appendField(append(b, '{'), "session", string(s)), '}')
}
