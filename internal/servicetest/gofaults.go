package servicetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage"
)

// goWrite is one write of the Go API in testGoReplyLost.
type goWrite struct {
	name string
	// action is the audit action of the write, made on the user named
	// prefix followed by the attempt's number; "" for a write that is
	// not audited.
	action, prefix string
	// prepare sets the write up, through the direct Service, for the
	// user name, and returns the write, made through svc, and a check,
	// through the direct Service, of whether it has taken effect.
	prepare func(t *testing.T, name string) (write func(svc *orgadmin.Service) error, landed func() bool)
	// retried says what a second run of the write, once the first one
	// took effect, may answer besides nil.
	retried func(err error) bool
	// done, when set, checks the user name once the write, run again
	// when it failed, has returned nil.
	done func(t *testing.T, name string)
}

// The answer to a write of the Go API is lost after the write took
// effect: the write returns nil or an error, and run again once the store
// is back, it succeeds (or answers what its documentation says a retry
// answers) without doing the write twice; the audit trail holds the
// write's event once.
func testGoReplyLost(t *testing.T, e *env) {
	ctx := t.Context()
	newAccount := func(t *testing.T, name string) {
		_, err := e.direct.CreateServiceAccount(ctx, e.admin, orgadmin.CreateServiceAccountInput{Username: name})
		require.NoError(t, err)
	}
	faultyAdmin := func(svc *orgadmin.Service) (orgadmin.Caller, error) { return svc.ActAs(ctx, "acme", "admin") }
	bootstrap := func(org string) func(*orgadmin.Service) error {
		return func(svc *orgadmin.Service) error {
			_, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: org, Username: "root", Token: "the-bootstrap-value-of-" + org})
			return err
		}
	}
	// bootstrappedOnce checks what Bootstrap, run again, leaves: one
	// organization, one Admin, one token (the value given), each created
	// once in the trail.
	bootstrappedOnce := func(t *testing.T, org string) {
		root, err := e.direct.Authenticate(ctx, "the-bootstrap-value-of-"+org)
		require.NoError(t, err)
		toks, err := e.direct.ListTokens(ctx, root, "root")
		require.NoError(t, err)
		require.Len(t, toks, 1, "the tokens of the Admin of %s", org)
		page, err := e.direct.ListUsers(ctx, root, orgadmin.ListUsersOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, page.TotalCount, "the users of %s", org)
		for action, n := range map[string]int{orgadmin.ActionOrgCreate: 1, orgadmin.ActionUserCreate: 1} {
			events, err := e.direct.AuditEvents(ctx, root, orgadmin.AuditQuery{Action: action})
			require.NoError(t, err)
			require.Len(t, events.Events, n, "%s events of %s", action, org)
		}
	}
	// holds checks that the user holds exactly privileges, in that order.
	holds := func(privileges ...string) func(t *testing.T, name string) {
		return func(t *testing.T, name string) {
			u, err := e.direct.GetUser(ctx, "acme", name)
			require.NoError(t, err)
			require.Equal(t, privileges, u.Privileges, "the privileges of %s", name)
		}
	}
	writes := []goWrite{
		{"CreateUser", orgadmin.ActionUserCreate, "human", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			return func(svc *orgadmin.Service) error {
					_, err := svc.CreateUser(ctx, "acme", orgadmin.NewUser{Username: name, Email: name + "@example.com"})
					return err
				}, func() bool {
					_, err := e.direct.GetUser(ctx, "acme", name)
					return err == nil
				}
		}, func(err error) bool { return orgadmin.ErrorCode(err) == orgadmin.CodeBadRequest }, nil},
		{"GrantPrivilege", orgadmin.ActionUserGrant, "granted", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			newAccount(t, name)
			return func(svc *orgadmin.Service) error {
					return svc.GrantPrivilege(ctx, "acme", name, "member_management.view_all_members")
				}, func() bool {
					u, err := e.direct.GetUser(ctx, "acme", name)
					return err == nil && len(u.Privileges) == 1
				}
		}, nil, holds("member_management.view_all_members")},
		// A grant to a user that holds a privilege already: run again
		// after it landed, it reads again and finds the privilege held,
		// whatever the store answered the first time.
		{"GrantPrivilege, a second one", orgadmin.ActionUserGrant, "regranted", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			newAccount(t, name)
			u, err := e.direct.GetUser(ctx, "acme", name)
			require.NoError(t, err)
			require.NoError(t, e.directStore.SetPrivileges(ctx, "acme", u.ID, nil, []string{"first"}, nil))
			return func(svc *orgadmin.Service) error {
					return svc.GrantPrivilege(ctx, "acme", name, "member_management.view_all_members")
				}, func() bool {
					u, err := e.direct.GetUser(ctx, "acme", name)
					return err == nil && len(u.Privileges) == 2
				}
		}, nil, holds("first", "member_management.view_all_members")},
		{"SeedToken", orgadmin.ActionTokenSeed, "seeded", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			newAccount(t, name)
			value := "seeded-value-of-" + name
			return func(svc *orgadmin.Service) error {
					_, err := svc.SeedToken(ctx, "acme", name, orgadmin.SeedTokenInput{Value: value, CreateTokenInput: orgadmin.CreateTokenInput{Name: "ci"}})
					return err
				}, func() bool {
					_, err := e.direct.Authenticate(ctx, value)
					return err == nil
				}
		}, nil, nil},
		{"CreateEmbedSession", orgadmin.ActionEmbedSessionCreate, "embedded", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			newAccount(t, name)
			landed := func() bool {
				page, err := e.directStore.ListEvents(ctx, "acme", storageEventQuery(orgadmin.ActionEmbedSessionCreate, name))
				return err == nil && len(page.Events) > 0
			}
			return func(svc *orgadmin.Service) error {
				c, err := faultyAdmin(svc)
				if err != nil {
					return err
				}
				_, err = svc.CreateEmbedSession(ctx, c, e.dive, orgadmin.CreateEmbedSessionInput{Username: name})
				return err
			}, landed
		}, nil, nil},
		{"MarkDucklingActive", "", "running", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			newAccount(t, name)
			return func(svc *orgadmin.Service) error {
					return svc.MarkDucklingActive(ctx, "acme", name, "rw")
				}, func() bool {
					accts, err := e.direct.GetActiveAccounts(ctx, e.admin)
					if err != nil {
						return false
					}
					for _, a := range accts {
						if a.Username == name {
							return true
						}
					}
					return false
				}
		}, nil, nil},
		{"Bootstrap", "", "org", func(t *testing.T, org string) (func(*orgadmin.Service) error, func() bool) {
			return bootstrap(org), func() bool {
				_, err := e.direct.GetUser(ctx, org, "root")
				return err == nil
			}
		}, nil, bootstrappedOnce},
		{"Bootstrap, its token", "", "tokenorg", func(t *testing.T, org string) (func(*orgadmin.Service) error, func() bool) {
			return bootstrap(org), func() bool {
				_, err := e.direct.Authenticate(ctx, "the-bootstrap-value-of-"+org)
				return err == nil
			}
		}, nil, bootstrappedOnce},
		{"ApplySeed", orgadmin.ActionUserCreate, "seeded_user", func(t *testing.T, name string) (func(*orgadmin.Service) error, func() bool) {
			sd := orgadmin.Seed{Organizations: []orgadmin.SeedOrg{{ID: "acme", Users: []orgadmin.SeedUser{{
				Username: name, IsServiceAccount: true,
				Ducklings: []orgadmin.SeedDuckling{{ID: "rw", Status: "active"}},
			}}}}}
			return func(svc *orgadmin.Service) error {
					return svc.ApplySeed(ctx, sd)
				}, func() bool {
					_, err := e.direct.GetUser(ctx, "acme", name)
					return err == nil
				}
		}, nil, func(t *testing.T, name string) {
			// The loading that failed half-way is completed by the next:
			// the user has the Ducklings the seed gives it.
			accts, err := e.direct.GetActiveAccounts(ctx, e.admin)
			require.NoError(t, err)
			i := slices.IndexFunc(accts, func(a orgadmin.ActiveAccount) bool { return a.Username == name })
			require.GreaterOrEqual(t, i, 0, "%s, seeded again after a loading failed, has no running Duckling", name)
			require.Equal(t, []orgadmin.Duckling{{ID: "rw", Type: orgadmin.DucklingReadWrite, Status: orgadmin.StatusActive}}, accts[i].Ducklings)
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			for n := 1; ; n++ {
				name := fmt.Sprint(w.prefix, n)
				write, landed := w.prepare(t, name)
				require.False(t, landed(), "the write has taken effect before it was made")
				require.Equal(t, 200, e.waitFor("GET", "/healthz").status, "healthy before the fault")
				err, lost := loseAnswer(t, e, n, landed, func() error { return write(e.faulty) })
				require.True(t, err == nil || orgadmin.ErrorCode(err) == orgadmin.CodeInternal, "%s answered %v", w.name, err)
				if !lost {
					if n == 3 {
						t.Logf("the answer came before the write was seen to land, %d times: nothing lost", n)
						return
					}
					continue
				}
				t.Logf("the write took effect and its answer was lost; it answered %v", err)
				require.Equal(t, 200, e.waitFor("GET", "/healthz").status, "healthy after the fault")
				if err != nil {
					// A retry, with the store healthy.
					err = write(e.faulty)
					if err != nil && w.retried != nil && w.retried(err) {
						err = nil
					}
					require.NoError(t, err, "%s retried", w.name)
				}
				require.True(t, landed(), "%s was retried and has not taken effect", w.name)
				if w.action != "" && w.action != orgadmin.ActionTokenSeed && w.action != orgadmin.ActionEmbedSessionCreate {
					e.requireAudited(t, w.action, name, true)
				}
				if w.action == orgadmin.ActionTokenSeed {
					u, err := e.direct.GetUser(ctx, "acme", name)
					require.NoError(t, err)
					require.Equal(t, 1, e.requireTokensWork(t, u), "tokens of %s after its seeded token was retried", name)
					seeds, deletes := e.countEvents(t, orgadmin.ActionTokenSeed, name), e.countEvents(t, orgadmin.ActionTokenDelete, name)
					require.Equal(t, 1, seeds-deletes, "%d seeds and %d deletions in the trail for one token", seeds, deletes)
				}
				if w.done != nil {
					w.done(t, name)
				}
				return
			}
		})
	}
}

// countEvents counts the events of action on the user named name.
func (e *env) countEvents(t *testing.T, action, name string) int {
	t.Helper()
	page, err := e.direct.AuditEvents(t.Context(), e.admin, orgadmin.AuditQuery{Action: action, TargetUsername: name})
	require.NoError(t, err)
	return len(page.Events)
}

func storageEventQuery(action, name string) storage.EventQuery {
	return storage.EventQuery{Action: action, TargetUsername: name, Limit: 10}
}
