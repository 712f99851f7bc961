package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/orgadmin/orgadmin"
)

// Role is a user's role: the orgadmin package's type.
type Role = orgadmin.Role

// The roles.
const (
	RoleAdmin  = orgadmin.RoleAdmin
	RoleMember = orgadmin.RoleMember
)

// User is a user of the organization, as list users shows it: the
// orgadmin package's type, with the fields the API shows (Org and
// Privileges are not shown, and stay empty). Description, Email,
// FirstName and LastName are "" when unset; only human users have an
// email or a name.
type User = orgadmin.User

// userWire is a user in its wire form.
type userWire struct {
	ID               string    `json:"id"`
	Username         string    `json:"username"`
	IsServiceAccount bool      `json:"is_service_account"`
	Roles            []Role    `json:"roles"`
	CreatedAt        time.Time `json:"created_ts"`
	Description      string    `json:"description"`
	Email            string    `json:"email"`
	FirstName        string    `json:"first_name"`
	LastName         string    `json:"last_name"`
}

func (u userWire) user() User {
	out := User{ID: u.ID, Username: u.Username, IsServiceAccount: u.IsServiceAccount, CreatedAt: u.CreatedAt,
		Description: u.Description, Email: u.Email, FirstName: u.FirstName, LastName: u.LastName}
	if len(u.Roles) > 0 {
		out.Role = u.Roles[0]
	}
	return out
}

// CreateServiceAccountRequest is the body of CreateServiceAccount.
type CreateServiceAccountRequest struct {
	// Username is 1 to 255 characters: a letter, then letters, digits or
	// underscores. It is unique in the organization, compared
	// case-insensitively.
	Username string `json:"username"`
	// Description is at most 1000 characters; "" sends none.
	Description string `json:"description,omitempty"`
}

// ServiceAccount is a service account just created.
type ServiceAccount struct {
	Username    string `json:"username"`
	Description string `json:"description,omitempty"`
}

// CreateServiceAccount creates a service account (role Member) in the
// caller's organization (operation users-createServiceAccount). The caller
// must be an Admin. A taken username, or one user more than the
// organization may hold, is a 400 *Error.
func (c *Client) CreateServiceAccount(ctx context.Context, in CreateServiceAccountRequest) (*ServiceAccount, error) {
	var out ServiceAccount
	if err := c.call(ctx, request{method: http.MethodPost, url: c.base + "/v1/users", body: in, auth: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListUsersOptions selects a page of users. Zero fields take the server's
// defaults.
type ListUsersOptions struct {
	// Limit is the page size, 1 to 1000; unset means the server's
	// default (100).
	Limit Optional[int]
	// Offset skips that many users, 0 or more; unset means 0. PageToken
	// takes precedence.
	Offset Optional[int]
	// PageToken is the NextPageToken of a previous page. It carries that
	// listing's ServiceAccount filter: the next page keeps it when
	// ServiceAccount is unset here.
	PageToken string
	// ServiceAccount, when set, keeps only service accounts (true) or only
	// human users (false). With a PageToken of a filtered listing, the
	// other value is a 400 naming page_token.
	ServiceAccount Optional[bool]
}

func (o ListUsersOptions) query() url.Values {
	q := url.Values{}
	if o.Limit.Set {
		q.Set("limit", strconv.Itoa(o.Limit.Value))
	}
	if o.Offset.Set {
		q.Set("offset", strconv.Itoa(o.Offset.Value))
	}
	if o.PageToken != "" {
		q.Set("page_token", o.PageToken)
	}
	if sa, ok := o.ServiceAccount.Get(); ok {
		q.Set("is_service_account", strconv.FormatBool(sa))
	}
	return q
}

// UserPage is one page of users, ordered by case-folded username, the
// orgadmin package's type: TotalCount counts the users that match the
// filter, on every page; NextPageToken fetches the next page (as
// ListUsersOptions.PageToken), "" on the last page.
type UserPage = orgadmin.UserPage

// ListUsers returns one page of the users of the caller's organization
// (operation users-list). The caller needs the privilege
// member_management.view_all_members. See AllUsers to walk every page.
func (c *Client) ListUsers(ctx context.Context, opts ListUsersOptions) (*UserPage, error) {
	var out struct {
		Users         []userWire `json:"users"`
		TotalCount    int        `json:"total_count"`
		NextPageToken *string    `json:"next_page_token"`
	}
	if err := c.call(ctx, request{method: http.MethodGet, url: c.base + "/v1/users", query: opts.query(), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	page := &UserPage{Users: make([]User, len(out.Users)), TotalCount: out.TotalCount}
	for i, u := range out.Users {
		page.Users[i] = u.user()
	}
	if out.NextPageToken != nil {
		page.NextPageToken = *out.NextPageToken
	}
	return page, nil
}

// AllUsers iterates over every user that opts selects, from opts.Offset or
// opts.PageToken on, fetching pages of opts.Limit users as the loop needs
// them. A failure is yielded once, with a zero User, and ends the
// iteration:
//
//	for u, err := range c.AllUsers(ctx, client.ListUsersOptions{}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(u.Username)
//	}
func (c *Client) AllUsers(ctx context.Context, opts ListUsersOptions) iter.Seq2[User, error] {
	return all(func(next string) ([]User, string, error) {
		if next != "" {
			opts.PageToken, opts.Offset = next, Optional[int]{}
		}
		page, err := c.ListUsers(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		return page.Users, page.NextPageToken, nil
	})
}

// all iterates over the items of the pages fetch returns, from the first
// (next "") to the one whose next page token is "" or that is empty. A
// failure is yielded once, with a zero item, and ends the iteration; so
// does a next page token that was followed before, which would lead the
// walk round the same pages for ever (a broken server, or a cache in
// front of it that ignores the query).
func all[T any](fetch func(next string) (items []T, nextToken string, err error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		next := ""
		followed := map[string]bool{}
		for {
			if followed[next] {
				var zero T
				yield(zero, errPageTokenAgain)
				return
			}
			followed[next] = true
			items, token, err := fetch(next)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if token == "" || len(items) == 0 {
				return
			}
			next = token
		}
	}
}

// errPageTokenAgain ends a walk of pages whose server gave a next page
// token the walk had followed already.
var errPageTokenAgain = errors.New("orgadmin: the server gave a next page token it had given before: the walk would not end")

// DeletedUser is a user just deleted.
type DeletedUser struct {
	// Username is spelled as it was stored.
	Username string `json:"username"`
}

// DeleteUser permanently deletes the user and all of their data (operation
// users-delete). The caller must be an Admin, and may not delete
// themself. A missing user is a 404 *Error (errors.Is(err,
// ErrNotFound)); one that a retry finds gone after an earlier attempt may
// have deleted it also matches ErrDeletedOnRetry.
func (c *Client) DeleteUser(ctx context.Context, username string) (*DeletedUser, error) {
	if err := invalid(checkSegment(nil, "username", username)); err != nil {
		return nil, err
	}
	var out DeletedUser
	if err := c.call(ctx, request{method: http.MethodDelete, url: c.userPath(username), auth: true, retry: true}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
