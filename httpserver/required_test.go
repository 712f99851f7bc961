package httpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
)

// A required field that is absent is "Required", and one given as null
// "Expected a value, received null", both invalid_type at the field's
// path: the decoder's issue, not a rule of the value (a missing username
// is not an empty one).
func TestRequiredFieldAbsentOrNull(t *testing.T) {
	t.Parallel()
	f := newFixture(t, orgadmin.Config{})
	for _, op := range []struct {
		name, method, path, field string
	}{
		{"create service account", "POST", "/v1/users", "username"},
		{"create token", "POST", userPath("robot", "tokens"), "name"},
		{"create embed session", "POST", embedPath(acmeDiveID), "username"},
		{"set instance config", "PUT", userPath("robot", "instances"), "config"},
	} {
		t.Run(op.name, func(t *testing.T) {
			f := f.with(t)
			for body, message := range map[string]string{
				`{}`:                        "Required",
				`{"` + op.field + `":null}`: "Expected a value, received null",
			} {
				env := requireError(t, f.do(op.method, op.path, bearer(f.admin), body), 400)
				require.Len(t, env.Issues, 1, "%s: %+v", body, env.Issues)
				assert.Equal(t, issue{Message: message, Path: []any{op.field}, Code: "invalid_type"}, env.Issues[0], body)
			}
		})
	}
}
