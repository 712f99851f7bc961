package httpserver

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/orgadmin/orgadmin"
)

func (h *Handler) createServiceAccount(w http.ResponseWriter, r *http.Request, c credential) (serviceAccountAnswer, error) {
	d := h.readBody(w, r)
	defer d.release()
	in := orgadmin.CreateServiceAccountInput{
		Username:    d.string(d.body, "username", true).Value,
		Description: d.string(d.body, "description", false).Value,
	}
	in.DecodeIssues = d.issues
	u, err := h.svc.CreateServiceAccount(d.context(r), c.auth(), in)
	return serviceAccountAnswer(u), err
}

func (h *Handler) listUsers(_ http.ResponseWriter, r *http.Request, c credential) (userPage, error) {
	var d decoder
	var opt orgadmin.ListUsersOptions
	if q, ok := d.query(r); ok {
		opt.Limit = d.queryInt(q, "limit")
		opt.Offset = d.queryInt(q, "offset")
		opt.PageToken = d.queryString(q, "page_token")
		opt.ServiceAccount = d.queryBool(q, "is_service_account")
	}
	opt.DecodeIssues = d.issues
	held := userArrays.Get().(*[]orgadmin.User)
	opt.Into = *held
	page, err := h.svc.ListUsers(r.Context(), c.auth(), opt)
	a := userPage{UserPage: page, held: held}
	if err != nil {
		a.release()
	}
	return a, err
}

// userArrays holds the arrays pages of users are listed into, each
// written and given back (userPage.release) by the request that took it.
var userArrays = sync.Pool{New: func() any { return new([]orgadmin.User) }}

// maxPooledUsers bounds the arrays userArrays keeps: an array grown
// past a page of the largest size is left to the garbage collector.
const maxPooledUsers = orgadmin.MaxUserPageSize

func (h *Handler) deleteUser(_ http.ResponseWriter, r *http.Request, c credential) (deletedUserAnswer, error) {
	u, err := h.svc.DeleteUser(r.Context(), c.auth(), r.PathValue("username"))
	return deletedUserAnswer(u), err
}

// query returns the query parameters of r. A malformed query string is
// an issue of its own, and then no parameter is read (false).
func (d *decoder) query(r *http.Request) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		d.add(orgadmin.IssueInvalidString, "Malformed query string", []any{})
		return nil, false
	}
	return q, true
}

// queryValue returns the value of the query parameter key; false when it
// is absent, or given more than once, which is an issue: which of its
// values counts would be a guess.
func (d *decoder) queryValue(q url.Values, key string) (string, bool) {
	switch vs := q[key]; len(vs) {
	case 0:
		return "", false
	case 1:
		return vs[0], true
	default:
		d.add(orgadmin.IssueInvalidType, fmt.Sprintf("Expected one value, received %d", len(vs)), []any{key})
		return "", false
	}
}

// queryString decodes a string query parameter; absent is "".
func (d *decoder) queryString(q url.Values, key string) string {
	v, _ := d.queryValue(q, key)
	return v
}

// queryInt decodes an integer query parameter; absent is unset. Values
// beyond the int32 range are clamped so that range checks report them.
func (d *decoder) queryInt(q url.Values, key string) orgadmin.Optional[int] {
	v, ok := d.queryValue(q, key)
	if !ok {
		return orgadmin.Optional[int]{}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		d.add(orgadmin.IssueInvalidType, "Expected integer", []any{key})
		return orgadmin.Optional[int]{}
	}
	return orgadmin.Some(int(max(math.MinInt32, min(math.MaxInt32+1, n))))
}

// queryBool decodes a boolean query parameter, "true" or "false"; absent
// is unset.
func (d *decoder) queryBool(q url.Values, key string) orgadmin.Optional[bool] {
	v, ok := d.queryValue(q, key)
	if !ok {
		return orgadmin.Optional[bool]{}
	}
	switch v {
	case "true", "false":
		return orgadmin.Some(v == "true")
	}
	d.add(orgadmin.IssueInvalidType, `Expected "true" or "false"`, []any{key})
	return orgadmin.Optional[bool]{}
}

// serviceAccountAnswer is the answer of create service account:
// {"username", "description"?}.
type serviceAccountAnswer orgadmin.User

func (u serviceAccountAnswer) appendJSON(b []byte) []byte {
	b = appendField(append(b, '{'), "username", u.Username)
	b = appendOptField(b, "description", u.Description)
	return append(b, '}')
}

// deletedUserAnswer is the answer of delete user: {"username"}.
type deletedUserAnswer orgadmin.User

func (u deletedUserAnswer) appendJSON(b []byte) []byte {
	return append(appendField(append(b, '{'), "username", u.Username), '}')
}

// userPage is the answer of list users: {"users": [...], "total_count":
// n, "next_page_token": a token, or null on the last page}.
type userPage struct {
	orgadmin.UserPage
	held *[]orgadmin.User // given back once the page is written
}

// release gives the page's array back to userArrays, cleared so that it
// keeps no user alive.
func (p userPage) release() {
	users := p.Users
	if cap(users) == 0 {
		users = *p.held
	}
	if cap(users) == 0 || cap(users) > maxPooledUsers {
		return
	}
	clear(users[:cap(users)])
	*p.held = users[:0]
	userArrays.Put(p.held)
}

func (p userPage) appendJSON(b []byte) []byte {
	b = appendArray(append(b, `{"users":`...), p.Users, appendUser)
	b = appendInt(b, "total_count", p.TotalCount)
	b = appendKey(b, "next_page_token")
	if p.NextPageToken == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, p.NextPageToken)
	}
	return append(b, '}')
}

// appendUser appends u as list users shows it: its one role in "roles",
// and the optional fields only when set.
func appendUser(b []byte, u orgadmin.User) []byte {
	b = append(b, '{')
	b = appendField(b, "id", u.ID)
	b = appendField(b, "username", u.Username)
	b = appendBool(b, "is_service_account", u.IsServiceAccount)
	b = appendString(append(appendKey(b, "roles"), '['), string(u.Role))
	b = append(b, ']')
	b = appendTime(appendKey(b, "created_ts"), u.CreatedAt)
	b = appendOptField(b, "description", u.Description)
	b = appendOptField(b, "email", u.Email)
	b = appendOptField(b, "first_name", u.FirstName)
	b = appendOptField(b, "last_name", u.LastName)
	return append(b, '}')
}
