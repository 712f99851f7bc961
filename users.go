package orgadmin

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/orgadmin/orgadmin/storage"
)

// User is a user of an organization as the API shows it.
type User struct {
	ID               string
	Org              string
	Username         string
	Description      string
	IsServiceAccount bool
	Role             Role
	Privileges       []string
	Email            string
	FirstName        string
	LastName         string
	CreatedAt        time.Time
}

func userFromRecord(u *storage.User) User {
	var out User
	setUser(&out, u)
	return out
}

// setUser sets every field of *dst from the record u, field by field: a
// page's users are written where the page holds them, without a User
// built aside and copied over.
func setUser(dst *User, u *storage.User) {
	dst.ID, dst.Org, dst.Username, dst.Description = u.ID, u.Org, u.Username, u.Description
	dst.IsServiceAccount, dst.Role, dst.Privileges = u.IsServiceAccount, Role(u.Role), u.Privileges
	dst.Email, dst.FirstName, dst.LastName = u.Email, u.FirstName, u.LastName
	dst.CreatedAt = u.CreatedAt
}

// CreateServiceAccountInput is the body of create service account.
type CreateServiceAccountInput struct {
	Username string
	// Description is at most 1000 characters; "" means none.
	Description string
	// DecodeIssues are the problems found while decoding the input from
	// its wire form; see CreateTokenInput.DecodeIssues.
	DecodeIssues []Issue
}

// problems returns every problem of in.
func (in CreateServiceAccountInput) problems() issues {
	var is issues
	is.checkUsername(in.Username, "username")
	is.checkString(in.Description, 0, MaxDescriptionLen, "description")
	return is.withDecoded(in.DecodeIssues)
}

// CreateServiceAccount creates a service account with the Member role in
// the caller's org. It fails with FORBIDDEN unless the caller is an Admin
// and with BAD_REQUEST when the input breaks a rule, the username is taken
// or the org holds the maximum number of users (Config.MaxUsersPerOrg).
func (s *Service) CreateServiceAccount(ctx context.Context, a Auth, in CreateServiceAccountInput) (User, error) {
	var c call
	if err := s.begin(ctx, &c, a, opCreateServiceAccount, nil, readNone, nil); err != nil {
		return User{}, err
	}
	if err := in.problems().err(); err != nil {
		return User{}, err
	}
	return s.createUser(ctx, c.org, NewUser{
		Username:         in.Username,
		Description:      in.Description,
		IsServiceAccount: true,
		Role:             RoleMember,
	}, actorOf(c.Caller))
}

// NewUser describes a user created through the Go API (CreateUser), which,
// unlike the HTTP API, can create human users and Admins. Username follows
// the username rule (ValidUsername); Description is at most 1000
// characters; Email, FirstName, LastName and each privilege at most 1024
// (a privilege at least 1); Privileges at most MaxPrivileges. Only a human user may have an email or a name:
// a service account with one is a BAD_REQUEST at is_service_account.
type NewUser struct {
	Username         string
	Role             Role // "" means Member
	IsServiceAccount bool
	Description      string
	Email            string
	FirstName        string
	LastName         string
	Privileges       []string
	// Instances, when not nil, replaces the default instance configuration.
	Instances *InstanceConfig
}

// CreateUser creates a user in org, which must exist. It fails with
// BAD_REQUEST when nu breaks a rule, the username is taken or the org holds
// the maximum number of users (Config.MaxUsersPerOrg), and with NOT_FOUND
// when org does not exist.
func (s *Service) CreateUser(ctx context.Context, org string, nu NewUser) (User, error) {
	if err := validateNewUser(nu); err != nil {
		return User{}, err
	}
	return s.createUser(ctx, org, nu, system)
}

func validateNewUser(nu NewUser) error {
	var is issues
	is.checkUsername(nu.Username, "username")
	if nu.Role != "" {
		checkEnum(&is, nu.Role, []Role{RoleAdmin, RoleMember}, "role")
	}
	is.checkString(nu.Description, 0, MaxDescriptionLen, "description")
	is.checkString(nu.Email, 0, maxShortString, "email")
	is.checkString(nu.FirstName, 0, maxShortString, "first_name")
	is.checkString(nu.LastName, 0, maxShortString, "last_name")
	if nu.IsServiceAccount && (nu.Email != "" || nu.FirstName != "" || nu.LastName != "") {
		is.add(IssueNotAllowed, "Only human users have an email or a name", "is_service_account")
	}
	if len(nu.Privileges) > MaxPrivileges {
		is.add(IssueTooBig, fmt.Sprintf("Array must contain at most %d element(s)", MaxPrivileges), "privileges")
	} else {
		for i, p := range nu.Privileges {
			is.checkString(p, 1, maxShortString, "privileges", i)
		}
	}
	if nu.Instances != nil {
		nu.Instances.check(&is, "instances")
	}
	return is.err()
}

func (s *Service) createUser(ctx context.Context, org string, nu NewUser, who actor) (User, error) {
	id, err := s.newID()
	if err != nil {
		return User{}, err
	}
	role := nu.Role
	if role == "" {
		role = RoleMember
	}
	rec := storage.User{
		ID:               id,
		Org:              org,
		Username:         nu.Username,
		FoldedUsername:   FoldUsername(nu.Username),
		Description:      nu.Description,
		IsServiceAccount: nu.IsServiceAccount,
		Role:             string(role),
		Privileges:       dedupe(nu.Privileges),
		Email:            nu.Email,
		FirstName:        nu.FirstName,
		LastName:         nu.LastName,
		Instances:        s.defaults,
	}
	if nu.Instances != nil {
		rec.Instances = nu.Instances.record() // checked by validateNewUser
	}
	aud, ev, err := s.audited(ctx, org, who, change{action: ActionUserCreate, kind: TargetUser, targetID: id, targetUsername: rec.Username})
	if err != nil {
		return User{}, err
	}
	rec.CreatedAt = ev.At
	switch err := s.store.CreateUser(ctx, rec, storage.UserLimit{Max: s.maxUsers}, aud); {
	case errors.Is(err, storage.ErrAlreadyExists):
		return User{}, badRequest(Issue{Message: "Username is already taken", Path: NewPath("username"), Code: IssueAlreadyExists})
	case errors.Is(err, storage.ErrLimitExceeded):
		return User{}, badRequest(Issue{Message: "The organization holds the maximum number of users", Path: NewPath("username"), Code: IssueTooBig})
	case errors.Is(err, storage.ErrNotFound):
		return User{}, notFound("organization")
	case err != nil:
		return User{}, internal(ctx, "create user", err)
	}
	s.emit(ctx, ev)
	return userFromRecord(&rec), nil
}

// taken reports whether err is createUser's answer to a username that is
// taken.
func taken(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == CodeBadRequest && len(e.Issues) == 1 && e.Issues[0].Code == IssueAlreadyExists
}

func dedupe(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// GetUser returns the user of org named username (compared case-folded),
// or NOT_FOUND. It is a Go API for inspection; the HTTP API has no such
// operation.
func (s *Service) GetUser(ctx context.Context, org, username string) (User, error) {
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return User{}, err
	}
	return userFromRecord(&u), nil
}

// GrantPrivilege adds a privilege to the user of org named username;
// granting one the user holds changes nothing. It fails with BAD_REQUEST
// for a privilege that is empty or longer than 1024 characters, or one
// more for a user who holds MaxPrivileges, and with NOT_FOUND when the
// user does not exist. Grants of one user made at once all land: each
// writes only over the privileges it read (storage.Store.SetPrivileges),
// and reads again when another change came first.
func (s *Service) GrantPrivilege(ctx context.Context, org, username, privilege string) error {
	var is issues
	is.checkString(privilege, 1, maxShortString, "privilege")
	if err := is.err(); err != nil {
		return err
	}
	// Each conflict means another change of the privileges landed, and
	// privileges only grow, to MaxPrivileges: so many attempts are enough
	// unless the user is deleted and created again meanwhile.
	var err error
	for range grantAttempts {
		if err = s.grantOnce(ctx, org, username, privilege); !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return s.storeErr(ctx, "grant privilege", fmt.Errorf("changed concurrently %d times: %w", grantAttempts, err), "user", "username")
}

// grantAttempts bounds the reads and writes of one GrantPrivilege.
const grantAttempts = MaxPrivileges + 1

// grantOnce makes one attempt of GrantPrivilege: it returns the error
// storage.ErrConflict, unwrapped, when the user's privileges changed
// between its read and its write, and the Service's error otherwise.
func (s *Service) grantOnce(ctx context.Context, org, username, privilege string) error {
	u, err := s.resolveUser(ctx, org, username)
	if err != nil {
		return err
	}
	if contains(u.Privileges, privilege) {
		return nil
	}
	if len(u.Privileges) >= MaxPrivileges {
		return badRequest(Issue{Message: fmt.Sprintf("The user holds the maximum number of privileges (%d)", MaxPrivileges), Path: NewPath("privilege"), Code: IssueTooBig})
	}
	to := append(slices.Clip(u.Privileges), privilege)
	aud, ev, err := s.audited(ctx, org, system, change{
		action: ActionUserGrant, kind: TargetUser, targetID: u.ID, targetUsername: u.Username,
		before: privilegesJSON(u.Privileges), after: privilegesJSON(to),
	})
	if err != nil {
		return err
	}
	switch err := s.store.SetPrivileges(ctx, org, u.ID, u.Privileges, to, aud); {
	case errors.Is(err, storage.ErrConflict):
		return storage.ErrConflict
	case err != nil:
		return s.storeErr(ctx, "grant privilege", err, "user", "username")
	}
	s.emit(ctx, ev)
	return nil
}

// DeleteUser permanently deletes the user named username from the caller's
// org, with its tokens, instance configuration, Duckling activity and embed
// sessions, and returns the deleted user. It fails with FORBIDDEN unless
// the caller is an Admin, with BAD_REQUEST for a malformed username or the
// caller's own, and with NOT_FOUND when no such user exists.
func (s *Service) DeleteUser(ctx context.Context, a Auth, username string) (User, error) {
	t := pathTarget(username)
	var c call
	if err := s.begin(ctx, &c, a, opDeleteUser, &t, readUser, nil); err != nil {
		return User{}, err
	}
	if c.isSelf(t.folded) {
		return User{}, badRequest(Issue{Message: "Users cannot delete themselves", Path: NewPath("username"), Code: IssueNotAllowed})
	}
	target, ok := c.target()
	if !t.canExist || !ok {
		return User{}, notFound("user", "username")
	}
	aud, ev, err := s.audited(ctx, c.org, actorOf(c.Caller), change{action: ActionUserDelete, kind: TargetUser, targetID: target.ID, targetUsername: target.Username})
	if err != nil {
		return User{}, err
	}
	u, err := s.store.DeleteUser(ctx, c.org, target.ID, aud)
	if err != nil {
		return User{}, s.storeErr(ctx, "delete user", err, "user", "username")
	}
	s.emit(ctx, ev)
	return userFromRecord(&u), nil
}

// ListUsersOptions selects a page of users. Unset fields take their
// defaults.
type ListUsersOptions struct {
	// Limit is the page size, 1 to 1000; unset means 100.
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
	// other value is BAD_REQUEST.
	ServiceAccount Optional[bool]
	// DecodeIssues are the problems found while decoding the options from
	// their wire form (a query parameter that is not a number, say); see
	// CreateTokenInput.DecodeIssues.
	DecodeIssues []Issue
	// Into, when its capacity is not zero, is the array the page is put
	// in: UserPage.Users is then Into[:0] with the page appended (in a
	// new array when it outgrows Into's). A caller that lists pages
	// often can hand back the array of a page it is done with, which
	// saves allocating one per page.
	Into []User
}

// UserPage is one page of users.
type UserPage struct {
	Users []User
	// TotalCount counts the users that match the filter.
	TotalCount int
	// NextPageToken fetches the next page; "" on the last page.
	NextPageToken string
}

// Limits of list users.
const (
	DefaultUserPageSize = 100
	MaxUserPageSize     = 1000
)

// ListUsers returns a page of the users of the caller's org, ordered by
// folded username. It fails with FORBIDDEN unless the caller holds
// member_management.view_all_members, and with BAD_REQUEST for an
// out-of-range limit or offset or a malformed page token.
func (s *Service) ListUsers(ctx context.Context, a Auth, opt ListUsersOptions) (UserPage, error) {
	q, is := opt.query()
	var c call
	if err := s.begin(ctx, &c, a, opListUsers, nil, readNone, is); err != nil {
		return UserPage{}, err
	}
	recs := userRecords.get()
	q.Into = *recs
	page, err := s.store.ListUsers(ctx, c.org, q)
	defer userRecords.put(recs, page.Users)
	if err != nil {
		return UserPage{}, internal(ctx, "list users", err)
	}
	out := UserPage{Users: slices.Grow(opt.Into[:0], len(page.Users)), TotalCount: page.Total}
	out.Users = out.Users[:len(page.Users)]
	for i := range page.Users {
		setUser(&out.Users[i], &page.Users[i])
	}
	if out.Users == nil {
		out.Users = []User{} // an empty page, not none
	}
	if n := len(page.Users); page.More && n > 0 {
		out.NextPageToken = encodePageToken(page.Users[n-1].FoldedUsername, q.ServiceAccount)
	}
	return out, nil
}

// AllUsers iterates over every user of the caller's org that opt
// selects, from opt.Offset or opt.PageToken on, in ListUsers' order,
// reading pages of opt.Limit users as the loop needs them. A failure
// (ListUsers') is yielded once, with a zero User, and ends the
// iteration:
//
//	for u, err := range svc.AllUsers(ctx, caller, orgadmin.ListUsersOptions{}) {
//		if err != nil {
//			return err
//		}
//		fmt.Println(u.Username)
//	}
func (s *Service) AllUsers(ctx context.Context, a Auth, opt ListUsersOptions) iter.Seq2[User, error] {
	return func(yield func(User, error) bool) {
		for {
			page, err := s.ListUsers(ctx, a, opt)
			if err != nil {
				yield(User{}, err)
				return
			}
			for _, u := range page.Users {
				if !yield(u, nil) {
					return
				}
			}
			if page.NextPageToken == "" || len(page.Users) == 0 {
				return
			}
			opt.PageToken, opt.Offset = page.NextPageToken, Optional[int]{}
		}
	}
}

// query turns opt into a store query, with every problem of opt.
func (opt ListUsersOptions) query() (storage.UserQuery, issues) {
	var is issues
	q := storage.UserQuery{Limit: DefaultUserPageSize}
	if sa, ok := opt.ServiceAccount.Get(); ok {
		q.ServiceAccount = &sa
	}
	if n, ok := opt.Limit.Get(); ok && is.checkRange(int64(n), 1, MaxUserPageSize, "limit") {
		q.Limit = n
	}
	if n, ok := opt.Offset.Get(); ok && is.checkRange(int64(n), 0, maxInt, "offset") {
		q.Offset = n
	}
	if opt.PageToken != "" {
		after, filter, ok := decodePageToken(opt.PageToken)
		switch {
		case !ok:
			is.add(IssueInvalidString, "Invalid page token", "page_token")
		case filter == nil:
		case q.ServiceAccount == nil:
			q.ServiceAccount = filter
		case *q.ServiceAccount != *filter:
			is.add(IssueInvalidString, "Page token belongs to a listing with is_service_account="+strconv.FormatBool(*filter), "page_token")
		}
		q.After, q.Offset = after, 0
	}
	return q, is.withDecoded(opt.DecodeIssues)
}

const maxInt = int64(^uint(0) >> 1)

// A page token's first byte says what the listing it resumes keeps: every
// user ('u', which tokens made before the filter was carried hold for
// every listing: the filter given with it applies), service accounts
// ('s') or humans ('h').
const (
	pageTokenAll      = 'u'
	pageTokenServices = 's'
	pageTokenHumans   = 'h'
)

// encodePageToken makes the opaque cursor that resumes after folded the
// listing filter (nil: every user) selects.
func encodePageToken(folded string, filter *bool) string {
	kind := byte(pageTokenAll)
	if filter != nil && *filter {
		kind = pageTokenServices
	} else if filter != nil {
		kind = pageTokenHumans
	}
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, folded...))
}

// decodePageToken reverses encodePageToken; it reports false for anything
// encodePageToken cannot have made.
func decodePageToken(tok string) (folded string, filter *bool, ok bool) {
	if len(tok) > 2048 {
		return "", nil, false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) < 2 || !utf8.Valid(b[1:]) {
		return "", nil, false
	}
	switch b[0] {
	case pageTokenAll:
	case pageTokenServices, pageTokenHumans:
		sa := b[0] == pageTokenServices
		filter = &sa
	default:
		return "", nil, false
	}
	folded = string(b[1:])
	// The folded form of a valid username is one (letters fold to
	// letters): no other cursor, such as one holding a NUL that a store's
	// keys use as a separator, is taken. Nor is a name under the fold of
	// earlier versions (casefold.Earlier), which the stores no longer hold.
	if !ValidUsername(folded) || FoldUsername(folded) != folded {
		return "", nil, false
	}
	return folded, filter, true
}
