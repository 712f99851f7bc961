package httpserver

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// openAPIDocument is the OpenAPI 3.0 description of the API: every /v1
// operation and the feedback endpoint, with their bounds, the error
// envelope and the bearer scheme. The test suite validates every request it
// sends and every response it receives against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIPath is where a Handler serves its OpenAPI document, under its
// Config.Prefix.
const OpenAPIPath = "/docs/specs"

// OpenAPI returns the OpenAPI 3.0 document of the API in JSON: every /v1
// operation under its operation id, the audit trail (an extension,
// marked x-orgadmin-extension), the feedback endpoint, the error envelope
// and the bearer scheme, with the server URL "/". The caller owns the
// returned slice.
func OpenAPI() []byte { return bytes.Clone(openAPIDocument) }

// OpenAPIHandler returns a handler that answers GET and HEAD with the
// OpenAPI document, without credentials, whose servers list serverURL
// (where the /v1 paths are: "/admin" for /admin/v1/users; "" means "/"),
// with an ETag so that clients can revalidate cheaply. Serve it where you
// like, for a Handler mounted at "/v1/" beside other routes, for instance.
func OpenAPIHandler(serverURL string) http.Handler {
	return &openAPIHandler{serverURL: serverURL}
}

// openAPIHandler serves the document for one server URL. The Handler's
// own (fromRequest) takes it from the path the client asked for, as
// RequestURI keeps it past http.StripPrefix or a router's mount: the
// document at /api/docs/specs says its API is at /api.
type openAPIHandler struct {
	serverURL   string
	fromRequest bool
	// last is the document last made, kept for the next request.
	last atomic.Pointer[openAPIDoc]
}

// openAPIDoc is the document for one server URL, and its entity tag.
type openAPIDoc struct {
	serverURL string
	body      []byte
	etag      string
}

func (h *openAPIHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	server := h.serverURL
	if h.fromRequest {
		if mount, ok := mountOf(requestPath(r)); ok {
			server = mount
		}
	}
	if server == "" {
		server = "/"
	}
	d := h.last.Load()
	if d == nil || d.serverURL != server {
		d = openAPIFor(server)
		h.last.Store(d)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", d.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.body))
}

// mountOf returns the escaped path p, which the client asked for, without
// its last segments, those of OpenAPIPath however they are escaped
// ("/admin/%64ocs/specs" is "/admin/docs/specs" too): where the API is.
// It reports false when p does not end with them.
func mountOf(p string) (string, bool) {
	want := OpenAPIPath
	for want != "" {
		i, j := strings.LastIndexByte(p, '/'), strings.LastIndexByte(want, '/')
		if i < 0 {
			return "", false
		}
		if seg, err := url.PathUnescape(p[i+1:]); err != nil || seg != want[j+1:] {
			return "", false
		}
		p, want = p[:i], want[:j]
	}
	return p, true
}

// serversURL is the server URL of the embedded document, as it is
// written there.
const serversURL = `"servers": [
    {
      "url": "/",`

// openAPIFor returns the document whose server URL is server.
func openAPIFor(server string) *openAPIDoc {
	body := openAPIDocument
	if server != "/" {
		i := bytes.Index(openAPIDocument, []byte(serversURL))
		enc, _ := json.Marshal(server) // a string always encodes
		head := openAPIDocument[:i+len(serversURL)-len(`"/",`)]
		body = append(append(append(bytes.Clone(head), enc...), ','), openAPIDocument[i+len(serversURL):]...)
	}
	sum := sha256.Sum256(body)
	return &openAPIDoc{serverURL: server, body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}
