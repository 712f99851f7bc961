package httpserver

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"

	"github.com/orgadmin/orgadmin"
)

// userPage is the answer of list users: {"users": [...], "total_count":
// n, "next_page_token": a token, or null on the last page}. It writes its
// own JSON (appendJSON); userPageJSON in the tests is that form for
// encoding/json.
type userPage orgadmin.UserPage

type serviceAccountResponse struct {
	Username    string `json:"username"`
	Description string `json:"description,omitempty"`
}

type deleteUserResponse struct {
	Username string `json:"username"`
}

func (h *Handler) createServiceAccount(w http.ResponseWriter, r *http.Request, c orgadmin.Caller, _ pathParams) (any, error) {
	if err := h.svc.Authorize(c, orgadmin.OpCreateServiceAccount, ""); err != nil {
		return nil, err
	}
	o, err := readObject(w, r, h.maxBody)
	if err != nil {
		return nil, err
	}
	var d decoder
	in := orgadmin.CreateServiceAccountInput{
		Username:    deref(d.string(o, "username", true)),
		Description: d.string(o, "description", false),
	}
	if err := d.typeErrors(func() error { return orgadmin.ValidateCreateServiceAccount(in) }); err != nil {
		return nil, err
	}
	u, err := h.svc.CreateServiceAccount(r.Context(), c, in)
	if err != nil {
		return nil, err
	}
	return serviceAccountResponse{Username: u.Username, Description: u.Description}, nil
}

func (h *Handler) listUsers(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller, _ pathParams) (any, error) {
	if err := h.svc.Authorize(c, orgadmin.OpListUsers, ""); err != nil {
		return nil, err
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, queryError("Malformed query string", nil)
	}
	var d decoder
	opt := orgadmin.ListUsersOptions{
		Limit:     d.queryInt(q, "limit"),
		Offset:    d.queryInt(q, "offset"),
		PageToken: q.Get("page_token"),
	}
	if q.Has("is_service_account") {
		switch v := q.Get("is_service_account"); v {
		case "true", "false":
			opt.ServiceAccount = orgadmin.Ptr(v == "true")
		default:
			d.add(orgadmin.IssueInvalidType, `Expected "true" or "false"`, []any{"is_service_account"})
		}
	}
	if err := d.typeErrors(func() error { return orgadmin.ValidateListUsers(opt) }); err != nil {
		return nil, err
	}
	page, err := h.svc.ListUsers(r.Context(), c, opt)
	if err != nil {
		return nil, err
	}
	return userPage(page), nil
}

// queryInt decodes an integer query parameter; absent yields nil. Values
// beyond the int range are clamped so that range checks report them.
func (d *decoder) queryInt(q url.Values, key string) *int {
	if !q.Has(key) {
		return nil
	}
	n, err := strconv.ParseInt(q.Get(key), 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		d.add(orgadmin.IssueInvalidType, "Expected integer", []any{key})
		return nil
	}
	v := int(max(math.MinInt32, min(math.MaxInt32+1, n)))
	return &v
}

func queryError(msg string, path []any) error {
	if path == nil {
		path = []any{}
	}
	return &orgadmin.Error{Code: orgadmin.CodeBadRequest, Issues: []orgadmin.Issue{{Message: msg, Path: path, Code: orgadmin.IssueInvalidString}}}
}

func (h *Handler) deleteUser(_ http.ResponseWriter, r *http.Request, c orgadmin.Caller, p pathParams) (any, error) {
	u, err := h.svc.DeleteUser(r.Context(), c, p.username)
	if err != nil {
		return nil, err
	}
	return deleteUserResponse{Username: u.Username}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
