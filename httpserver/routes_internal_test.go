package httpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// Every operation of the route table is in the OpenAPI document, and every
// operation of the document is in the route table (but for the feedback
// endpoint, which NewFeedback serves where the host mounts it).
func TestRouteTableMatchesOpenAPI(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDocument)
	require.NoError(t, err)
	h := New(orgadmin.New(memstore.New(), orgadmin.Config{}), Config{})

	var fromTable []string
	for _, rt := range h.routes() {
		fromTable = append(fromTable, rt.pattern)
	}
	var fromDoc []string
	for path, item := range doc.Paths.Map() {
		if path == "/docs/api/feedback/agent" {
			assert.NotNil(t, item.Get, "feedback is a GET")
			continue
		}
		for method := range item.Operations() {
			fromDoc = append(fromDoc, method+" "+path)
		}
	}
	slices.Sort(fromTable)
	slices.Sort(fromDoc)
	assert.Equal(t, fromTable, fromDoc)
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			_, extension := op.Extensions["x-orgadmin-extension"]
			switch {
			case path == "/docs/api/feedback/agent":
			case extension:
				assert.True(t, strings.HasPrefix(path, "/ext/"), "an extension is outside /v1, under /ext: %s", path)
				assert.Equal(t, []string{"audit"}, op.Tags, "an extension's tag: %s", path)
			default:
				assert.True(t, strings.HasPrefix(path, "/v1/"), "SPEC: every service path carries /v1: %s", path)
			}
		}
	}
}
