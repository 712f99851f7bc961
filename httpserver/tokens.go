package httpserver

import (
	"net/http"

	"github.com/orgadmin/orgadmin"
)

// tokenJSON is a token on the wire; Token is set only on creation.
type tokenJSON struct {
	Token       string `json:"token,omitempty"`
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	ExpireAt    string `json:"expire_at,omitempty"`
	CreatedTS   string `json:"created_ts"`
	ReadOnly    bool   `json:"read_only"`
	TokenType   string `json:"token_type"`
}

func tokenToJSON(t orgadmin.Token) tokenJSON {
	out := tokenJSON{
		Token:       t.Value,
		ID:          t.ID,
		Name:        t.Name,
		Description: t.Description,
		CreatedTS:   orgadmin.FormatTime(t.CreatedAt),
		ReadOnly:    t.ReadOnly(),
		TokenType:   string(t.Type),
	}
	if !t.ExpireAt.IsZero() {
		out.ExpireAt = orgadmin.FormatTime(t.ExpireAt)
	}
	return out
}

type listTokensResponse struct {
	Tokens []tokenJSON `json:"tokens"`
}

type emptyResponse struct{}

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, c orgadmin.Caller) (any, error) {
	username := r.PathValue("username")
	if err := h.svc.Authorize(c, orgadmin.OpCreateToken, username); err != nil {
		return nil, err
	}
	o, err := readObject(w, r, h.maxBody)
	if err != nil {
		return nil, err
	}
	var d decoder
	in := orgadmin.CreateTokenInput{
		Name:        deref(d.string(o, "name", true)),
		TTL:         d.int(o, "ttl", false),
		Description: d.string(o, "description", false),
		TokenType:   d.string(o, "token_type", false),
	}
	if err := d.typeErrors(func() error { return orgadmin.ValidateCreateToken(in) }); err != nil {
		return nil, err
	}
	t, err := h.svc.CreateToken(r.Context(), c, username, in)
	if err != nil {
		return nil, err
	}
	return tokenToJSON(t), nil
}

// listTokens authenticates and lists in one Service call, which is one
// store round trip where the store allows.
func (h *Handler) listTokens(_ http.ResponseWriter, r *http.Request, token string) (any, error) {
	_, ts, err := h.svc.AuthenticateListTokens(r.Context(), token, r.PathValue("username"))
	if err != nil {
		return nil, err
	}
	resp := listTokensResponse{Tokens: make([]tokenJSON, len(ts))}
	for i, t := range ts {
		resp.Tokens[i] = tokenToJSON(t)
	}
	return resp, nil
}

func (h *Handler) deleteToken(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller) (any, error) {
	if err := h.svc.DeleteToken(r.Context(), c, r.PathValue("username"), r.PathValue("token_id")); err != nil {
		return nil, err
	}
	return emptyResponse{}, nil
}
