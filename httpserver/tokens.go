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

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error) {
	username := p.username
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
// store round trip where the store allows. Where the store versions token
// records, the Handler keeps the encoded listing under its stamp, and
// answers it again while the Service says it is still the answer.
func (h *Handler) listTokens(_ http.ResponseWriter, r *http.Request, token string, p pathParams) (any, error) {
	ctx, username := r.Context(), p.username
	_, l, err := h.svc.AuthenticateListing(ctx, token, username, h.keptStamp)
	if err == nil && l.Known {
		// The listing kept under l.Stamp is the answer, and it is still
		// kept unless the Handler forgot it since (when full) or kept
		// another in its place. Then it is made afresh.
		if kept, ok := h.listings.Get(l.Stamp.Version); ok && kept.stamp == l.Stamp {
			return kept.answer, nil
		}
		_, l, err = h.svc.AuthenticateListing(ctx, token, username, nil)
	}
	switch {
	case err != nil:
		return nil, err
	case l.Stamp.Version == 0:
		return tokenList(l.Tokens), nil
	}
	body := append(tokenList(l.Tokens).appendJSON(nil), '\n')
	var answer any = encodedJSON(body)
	if len(body) <= maxKeptListing {
		h.listings.Put(l.Stamp.Version, keptListing{stamp: l.Stamp, answer: answer})
	}
	return answer, nil
}

// keptStampOf is listTokens' known function: the stamp of the listing
// kept under version, if any. The Handler holds it as a func value
// (keptStamp), made once in New rather than a closure on every request.
func (h *Handler) keptStampOf(version uint64) (orgadmin.ListingStamp, bool) {
	kept, ok := h.listings.Get(version)
	return kept.stamp, ok
}

// keptListing is an encoded token listing, with the stamp that says when
// it is the answer.
type keptListing struct {
	stamp orgadmin.ListingStamp
	// answer is the listing's encodedJSON, boxed once for every answer
	// that shares it; never changed once kept.
	answer any
}

// A Handler keeps up to maxKeptListings listings (then forgets them all),
// each of up to maxKeptListing bytes: at most 16 MiB.
const (
	maxKeptListings = 1024
	maxKeptListing  = 16 << 10
)

func (h *Handler) deleteToken(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error) {
	if err := h.svc.DeleteToken(r.Context(), c, p.username, p.tokenID); err != nil {
		return nil, err
	}
	return emptyResponse{}, nil
}
