package httpserver

import (
	"net/http"

	"github.com/orgadmin/orgadmin"
)

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, c credential) (tokenAnswer, error) {
	d := h.readBody(w, r)
	defer d.release()
	in := orgadmin.CreateTokenInput{
		Name:        d.string(d.body, "name", true).Value,
		TTL:         d.seconds(d.body, "ttl", false),
		Description: d.string(d.body, "description", false).Value,
	}
	if typ, ok := d.string(d.body, "token_type", false).Get(); ok {
		in.Type = orgadmin.Some(orgadmin.TokenType(typ))
	}
	in.DecodeIssues = d.issues
	t, err := h.svc.CreateToken(d.context(r), c.auth(), r.PathValue("username"), in)
	return tokenAnswer(t), err
}

func (h *Handler) listTokens(_ http.ResponseWriter, r *http.Request, c credential) (tokenList, error) {
	ts, err := h.svc.ListTokens(r.Context(), c.auth(), r.PathValue("username"))
	return tokenList(ts), err
}

func (h *Handler) deleteToken(_ http.ResponseWriter, r *http.Request, c credential) (emptyAnswer, error) {
	err := h.svc.DeleteToken(r.Context(), c.auth(), r.PathValue("username"), r.PathValue("token_id"))
	return emptyAnswer{}, err
}

// tokenAnswer is the answer of create token: the token with its value.
type tokenAnswer orgadmin.Token

func (t tokenAnswer) appendJSON(b []byte) []byte {
	return appendToken(b, orgadmin.Token(t))
}

// tokenList is the answer of list tokens: {"tokens": [...]}.
type tokenList []orgadmin.Token

func (l tokenList) appendJSON(b []byte) []byte {
	return append(appendArray(append(b, `{"tokens":`...), l, appendToken), '}')
}

// appendToken appends t in its wire form: the value only when t carries
// one, as on creation.
func appendToken(b []byte, t orgadmin.Token) []byte {
	b = append(b, '{')
	b = appendOptField(b, "token", t.Value)
	b = appendField(b, "id", t.ID)
	b = appendOptField(b, "name", t.Name)
	b = appendOptField(b, "description", t.Description)
	if !t.ExpireAt.IsZero() {
		b = appendTime(appendKey(b, "expire_at"), t.ExpireAt)
	}
	b = appendTime(appendKey(b, "created_ts"), t.CreatedAt)
	b = appendBool(b, "read_only", t.ReadOnly())
	b = appendField(b, "token_type", string(t.Type))
	return append(b, '}')
}

// emptyAnswer is the answer {} of delete token.
type emptyAnswer struct{}

func (emptyAnswer) appendJSON(b []byte) []byte { return append(b, "{}"...) }
