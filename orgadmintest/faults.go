package orgadmintest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/orgadmin/orgadmin"
)

// Fault says how the Server misbehaves on the requests it matches, as
// miniredis's SetError and WireMock's faults do. Give InjectFault one:
//
//	// The next two requests, whatever they are, answer 503 asking for a
//	// one-second wait.
//	srv.InjectFault(orgadmintest.Fault{Times: 2, Status: 503, RetryAfter: time.Second})
//
//	// Every DELETE of a user deletes it, then loses the answer.
//	srv.InjectFault(orgadmintest.Fault{Route: "DELETE /v1/users/{username}", AfterHandling: true, Drop: true})
//
// A Fault does, in this order: wait Delay; unless AfterHandling, answer
// Status or drop the connection (Drop) instead of letting the API see the
// request; with AfterHandling, let the API act on the request, then throw
// its answer away and answer Status, or drop the connection. A Fault with
// only a Delay lets the request through, late.
type Fault struct {
	// Route selects the requests: a pattern in http.ServeMux's syntax,
	// "[METHOD ]/path", such as "GET /v1/users",
	// "DELETE /v1/users/{username}/tokens/{token_id}" or
	// "/v1/users/{username}" (any method). "" matches every request.
	Route string
	// Times is how many matching requests the fault takes, the next ones;
	// 0 means every one until the fault is removed.
	Times int
	// Status, when not 0, is the status answered (200 to 999): with the
	// API's JSON error envelope for a status the API has a code for (400,
	// 401, 403, 404, 429, 500; a 429 is TOO_MANY_REQUESTS; a 400 has one
	// issue, "Refused by an injected fault", as every 400 of the API has
	// issues; a 401 has the API's WWW-Authenticate challenge), with its
	// status text in plain text otherwise (a gateway's 502, 503 or 504).
	Status int
	// RetryAfter, when positive, is sent as the Retry-After header of the
	// Status answer, in whole seconds, rounded up.
	RetryAfter time.Duration
	// Delay, when positive, is waited (in real time: the Server's clock
	// stands still) before anything else; a request whose client gives up
	// first ends there; one whose Server closes first has its connection
	// closed without an answer.
	Delay time.Duration
	// Drop closes the connection without an answer (through
	// http.Hijacker; behind a ResponseWriter that cannot hijack, by
	// aborting the handler with http.ErrAbortHandler).
	Drop bool
	// AfterHandling lets the request reach the API first, so what it asks
	// is done (a token deleted, a user created), and then replaces the
	// answer with Status, or drops it: a write whose answer was lost.
	AfterHandling bool
}

// check returns what is wrong with f, or nil.
func (f Fault) check() error {
	switch {
	case f.Times < 0:
		return fmt.Errorf("a negative Times, %d", f.Times)
	case f.Status != 0 && (f.Status < 200 || f.Status > 999):
		// An informational status (1xx) is no answer: net/http would
		// send it, then the handler's implicit 200.
		return fmt.Errorf("status %d is no final HTTP status (200 to 999)", f.Status)
	case f.Status != 0 && f.Drop:
		return errors.New("a fault answers Status or drops the connection, not both")
	case f.AfterHandling && f.Status == 0 && !f.Drop:
		return errors.New("AfterHandling needs a Status or Drop to replace the answer with")
	case f.Status == 0 && !f.Drop && f.Delay <= 0:
		return errors.New("the fault does nothing: set Status, Drop or Delay")
	}
	return nil
}

// InjectedFault is a Fault in force on a Server.
type InjectedFault struct {
	f     Fault
	match *http.ServeMux // nil: every request
	set   *faults
	hits  int // requests taken, under set.mu
}

// Hits returns how many requests the fault has taken so far.
func (i *InjectedFault) Hits() int {
	i.set.mu.Lock()
	defer i.set.mu.Unlock()
	return i.hits
}

// Remove takes the fault out of force; requests under way keep it.
func (i *InjectedFault) Remove() {
	i.set.mu.Lock()
	defer i.set.mu.Unlock()
	for j, g := range i.set.list {
		if g == i {
			i.set.list = append(i.set.list[:j:j], i.set.list[j+1:]...)
			return
		}
	}
}

// faults are the faults in force on a Server, oldest first.
type faults struct {
	mu   sync.Mutex
	list []*InjectedFault
}

// InjectFault puts f in force until it has taken f.Times requests, or
// until Remove or ClearFaults, and returns it. A request matched by
// several faults takes the oldest. It fails the test when f is malformed
// (a Route that is no pattern, a Status with Drop, nothing to do).
func (s *Server) InjectFault(f Fault) *InjectedFault {
	s.tb.Helper()
	inj := &InjectedFault{f: f, set: &s.faults}
	err := f.check()
	if err == nil && f.Route != "" {
		inj.match, err = routeMux(f.Route)
	}
	if err != nil {
		s.fatal("inject fault", err)
		return inj
	}
	s.faults.mu.Lock()
	s.faults.list = append(s.faults.list, inj)
	s.faults.mu.Unlock()
	return inj
}

// ClearFaults takes every fault out of force.
func (s *Server) ClearFaults() {
	s.faults.mu.Lock()
	s.faults.list = nil
	s.faults.mu.Unlock()
}

// routeMux returns a ServeMux that has the one route pattern, or an error
// for a malformed pattern.
func routeMux(pattern string) (mux *http.ServeMux, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("route %q: %v", pattern, v)
		}
	}()
	mux = http.NewServeMux()
	mux.Handle(pattern, http.NotFoundHandler())
	return mux, nil
}

// take returns the fault r falls under, counting the request against it,
// or nil.
func (fs *faults) take(r *http.Request) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, inj := range fs.list {
		if inj.match != nil {
			if _, pattern := inj.match.Handler(r); pattern == "" {
				continue
			}
		}
		inj.hits++
		if inj.f.Times > 0 && inj.hits >= inj.f.Times {
			fs.list = append(fs.list[:i:i], fs.list[i+1:]...)
		}
		f := inj.f
		return &f
	}
	return nil
}

// inject serves next, with the faults in force.
func (s *Server) inject(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := s.faults.take(r)
		if f == nil {
			next.ServeHTTP(w, r)
			return
		}
		markFault(r.Context())
		if f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				markGone(r.Context())
				return
			case <-s.closing: // the Server closes: no answer comes
				t.Stop()
				drop(w, r)
				return
			}
		}
		if f.AfterHandling {
			next.ServeHTTP(httptest.NewRecorder(), r) // the answer is lost
		} else if f.Status == 0 && !f.Drop {
			next.ServeHTTP(w, r) // a delay only
			return
		}
		if f.Drop {
			drop(w, r)
			return
		}
		writeFault(w, f)
	})
}

// drop closes the connection of r without an answer. The request is in
// the journal before the client can see the connection close.
func drop(w http.ResponseWriter, r *http.Request) {
	markDropped(r.Context())
	// ResponseController finds the http.Hijacker below the writers that
	// wrap it (and Unwrap).
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	panic(http.ErrAbortHandler)
}

// writeFault answers f.Status.
func writeFault(w http.ResponseWriter, f *Fault) {
	h := w.Header()
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((f.RetryAfter+time.Second-1)/time.Second), 10))
	}
	h.Set("Cache-Control", "no-store")
	code, ok := codeOf(f.Status)
	if !ok {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(f.Status)
		_, _ = fmt.Fprintln(w, http.StatusText(f.Status))
		return
	}
	if code == orgadmin.CodeUnauthorized { // the challenge of every 401 of the API
		h.Set("WWW-Authenticate", `Bearer realm="orgadmin"`)
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	if code == orgadmin.CodeBadRequest { // the API lists at least one issue on every 400
		_, _ = fmt.Fprintf(w, "{\"message\":%q,\"code\":%q,\"issues\":[{\"message\":\"Refused by an injected fault\",\"path\":[],\"code\":%q}]}\n",
			code.Message(), code, orgadmin.IssueNotAllowed)
		return
	}
	_, _ = fmt.Fprintf(w, "{\"message\":%q,\"code\":%q}\n", code.Message(), code)
}

// codeOf returns the error code the API answers status with, and false
// for a status it has none for.
func codeOf(status int) (orgadmin.Code, bool) {
	switch status {
	case http.StatusBadRequest:
		return orgadmin.CodeBadRequest, true
	case http.StatusUnauthorized:
		return orgadmin.CodeUnauthorized, true
	case http.StatusForbidden:
		return orgadmin.CodeForbidden, true
	case http.StatusNotFound:
		return orgadmin.CodeNotFound, true
	case http.StatusTooManyRequests:
		return orgadmin.CodeTooManyRequests, true
	case http.StatusInternalServerError:
		return orgadmin.CodeInternal, true
	}
	return "", false
}

// marks are what the journal learns of a request from the fault layer.
type marks struct {
	fault, dropped, gone bool
	// done adds the request to the journal, once.
	done func()
}

type marksKey struct{}

func marksOf(ctx context.Context) *marks {
	if m, ok := ctx.Value(marksKey{}).(*marks); ok {
		return m
	}
	return &marks{done: func() {}} // a handler used without the journal
}

func markFault(ctx context.Context) { marksOf(ctx).fault = true }

// markGone marks a request whose client went away while it waited.
func markGone(ctx context.Context) { marksOf(ctx).gone = true }

// markDropped marks a request whose connection is dropped, and journals
// it at once.
func markDropped(ctx context.Context) {
	m := marksOf(ctx)
	m.dropped = true
	m.done()
}
