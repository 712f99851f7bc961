package httpserver

import (
	"net/http"

	"github.com/orgadmin/orgadmin"
)

// tokenAnswer is the answer of create token: the token with its value.
// It writes its own JSON (appendToken), in the wire form of the OpenAPI
// document; tokenJSON in the tests is that form for encoding/json.
type tokenAnswer orgadmin.Token

// tokenList is the answer of list tokens, {"tokens": [...]}.
type tokenList []orgadmin.Token

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
	return tokenAnswer(t), nil
}

// listTokens authenticates and lists in one Service call, which is one
// store round trip where the store allows.
func (h *Handler) listTokens(_ http.ResponseWriter, r *http.Request, token string) (any, error) {
	_, ts, err := h.svc.AuthenticateListTokens(r.Context(), token, r.PathValue("username"))
	if err != nil {
		return nil, err
	}
	return tokenList(ts), nil
}

func (h *Handler) deleteToken(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller) (any, error) {
	if err := h.svc.DeleteToken(r.Context(), c, r.PathValue("username"), r.PathValue("token_id")); err != nil {
		return nil, err
	}
	return emptyResponse{}, nil
}
