package httpserver

import (
	"net/http"
	"strings"
)

// userRoute is a route of the table whose pattern is a method and
// /v1/users/{username}/ followed by one literal segment: get and set an
// instance configuration, create and list tokens, the commonest requests.
// ServeHTTP finds these itself, without the ServeMux, which costs a
// request more than the rest of the routing does (TestUserRoutesAgreeWithMux
// checks that both find the same route and username, whatever the path).
type userRoute struct {
	method, segment, pattern string
	fn                       tokenFunc
}

const userRoutePrefix = "/v1/users/"

// userRouteOf returns the userRoute of a table pattern of that shape.
func userRouteOf(pattern string, fn tokenFunc) (userRoute, bool) {
	method, path, _ := strings.Cut(pattern, " ")
	seg, ok := strings.CutPrefix(path, userRoutePrefix+"{username}/")
	if !ok || seg == "" || strings.ContainsAny(seg, "/{}") {
		return userRoute{}, false
	}
	return userRoute{method: method, segment: seg, pattern: pattern, fn: fn}, true
}

// userRoute returns the userRoute of r and the username its path names,
// or nil where the ServeMux must decide: a path it would clean or
// unescape differently (r.URL.RawPath is set only when the path has an
// escaped slash or some such), HEAD (which GET patterns also serve), and
// whatever matches no userRoute.
func (h *Handler) userRoute(r *http.Request) (*userRoute, string) {
	if r.URL.RawPath != "" {
		return nil, ""
	}
	rest, ok := strings.CutPrefix(r.URL.Path, userRoutePrefix)
	if !ok {
		return nil, ""
	}
	username, seg, ok := strings.Cut(rest, "/")
	if !ok || username == "" || username == "." || username == ".." {
		return nil, "" // none, or a path the ServeMux cleans
	}
	for i := range h.userRoutes {
		if ur := &h.userRoutes[i]; ur.segment == seg && ur.method == r.Method {
			return ur, username
		}
	}
	return nil, ""
}
