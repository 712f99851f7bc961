package httpserver

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"time"
)

// openAPIDocument is the OpenAPI 3.0 description of the API: every /v1
// operation and the feedback endpoint, with their bounds, the error
// envelope and the bearer scheme. The test suite validates every request it
// sends and every response it receives against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIETag is the entity tag of openAPIDocument.
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIDocument)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}()

// OpenAPIPath is where a Handler serves its OpenAPI document.
const OpenAPIPath = "/docs/specs"

// OpenAPI returns the OpenAPI 3.0 document of the API in JSON: every /v1
// operation under its operation id, the feedback endpoint, the error
// envelope and the bearer scheme. The caller owns the returned slice.
func OpenAPI() []byte { return bytes.Clone(openAPIDocument) }

// serveOpenAPI answers GET and HEAD of the OpenAPI document, without
// credentials, with an ETag so that clients can revalidate cheaply.
func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", openAPIETag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(openAPIDocument))
}
