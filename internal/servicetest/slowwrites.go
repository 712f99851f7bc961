package servicetest

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// Every answer of the database is delayed by a part of the store's
// timeout, so that a write of several round trips runs out of time part
// of the way through: the API answers 200 with the write's own answer, or
// 500. With the network healthy again, what is stored is whole and agrees
// with the audit trail, and the write sent again succeeds or answers what
// README says a retry of a write that took effect answers.
func testSlowWrites(t *testing.T, e *env) {
	writes := e.lostWrites(t)
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			for n, part := range []int64{8, 5, 3, 2} {
				n++
				method, path, body, ok, landed := w.prepare(t, n)
				name := fmt.Sprint(w.prefix, n)
				require.Equal(t, http.StatusOK, e.waitFor(http.MethodGet, "/healthz").status, "healthy before the fault")
				slow := fault{name: "slow answers", toxics: []toxic{{Name: "slow", Type: "latency", Stream: "downstream",
					Attributes: map[string]int64{"latency": e.timeout.Milliseconds() / part}}}}
				require.NoError(t, e.inject(slow))
				a := e.do(method, path, body)
				require.NoError(t, e.heal(slow))
				switch {
				case a.failed():
				case ok == "" && a.err == nil && a.status == http.StatusOK:
					checkTokenAnswer(t, a, "ci")
				case ok != "" && a.is(http.StatusOK, ok):
				default:
					t.Fatalf("answers delayed by 1/%d of the timeout: unexpected answer %s", part, a)
				}
				require.Equal(t, http.StatusOK, e.waitFor(http.MethodGet, "/healthz").status, "healthy after the fault")
				there := landed()
				if a.status == http.StatusOK {
					require.True(t, there, "the write answered 200 and has not taken effect")
				}
				t.Logf("answers delayed by 1/%d of the timeout: %s; taken effect: %v", part, a, there)
				e.requireAudited(t, w.action, name, there)
				e.requireWhole(t, name)
				e.requireListedTokensWork(t, path)
				if a.status == http.StatusOK {
					continue
				}
				again := e.do(method, path, body)
				switch {
				case ok == "" && again.err == nil && again.status == http.StatusOK:
					checkTokenAnswer(t, again, "ci")
				case ok != "" && again.is(http.StatusOK, ok):
				case there && method == http.MethodPost && again.status == http.StatusBadRequest && again.code() == string(orgadmin.CodeBadRequest):
					// the username taken: by the first attempt
				case there && method == http.MethodDelete && again.status == http.StatusNotFound:
					// gone: by the first attempt
				default:
					t.Fatalf("sent again after %s (taken effect: %v), the write answered %s", a, there, again)
				}
				require.True(t, landed(), "sent again, the write has not taken effect")
				e.requireWhole(t, name)
				e.requireListedTokensWork(t, path)
			}
		})
	}
}

// requireWhole requires that the user name is there or gone as a whole,
// in agreement with the audit trail.
func (e *env) requireWhole(t *testing.T, name string) {
	t.Helper()
	_, err := e.direct.GetUser(t.Context(), "acme", name)
	if err != nil {
		require.ErrorIs(t, err, orgadmin.ErrNotFound)
	}
	checkTrail(t, e, name, err == nil)
}
