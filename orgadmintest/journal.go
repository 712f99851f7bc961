package orgadmintest

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/orgadmin/orgadmin/httpserver"
)

// DefaultJournalSize is how many requests the Journal keeps unless
// WithJournalSize says otherwise.
const DefaultJournalSize = 1000

// Request is a request the Server received, as its Journal keeps it. It
// holds no header, query string or body, so no token value is ever in it.
type Request struct {
	// Method is the HTTP method.
	Method string
	// Path is the escaped path, without the query string, such as
	// "/v1/users/robot/tokens".
	Path string
	// Status is the status answered: the API's, or an injected fault's; 0
	// when the connection was dropped (Dropped); 499 (as
	// httpserver.StatusClientClosedRequest) when the client gave up while a
	// fault's Delay ran.
	Status int
	// RequestID is the X-Request-Id the request was answered with (it is
	// in the Server's log lines too).
	RequestID string
	// Fault says whether an injected Fault took the request.
	Fault bool
	// Dropped says whether the connection was closed without an answer.
	Dropped bool
	// At is the time on the Server's clock when the request came.
	At time.Time
}

// journal keeps the most recent requests.
type journal struct {
	mu   sync.Mutex
	max  int
	reqs []Request
}

// Journal returns the requests the Server answered, in the order it
// answered them (the first answered first): the most recent
// DefaultJournalSize (WithJournalSize). A request under way is not in it
// yet, so of requests sent at once, one held up (by a Delay fault, say)
// comes after those answered before it.
func (s *Server) Journal() []Request {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	return slices.Clone(s.journal.reqs)
}

// ResetJournal forgets the requests received so far.
func (s *Server) ResetJournal() {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	s.journal.reqs = nil
}

func (j *journal) add(r Request) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.reqs) >= j.max {
		j.reqs = slices.Delete(j.reqs, 0, len(j.reqs)-j.max+1)
	}
	j.reqs = append(j.reqs, r)
}

// record serves next and adds each request to the journal once answered.
func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		entry := Request{Method: r.Method, Path: r.URL.EscapedPath(), RequestID: httpserver.RequestID(r.Context()), At: s.clock.Now()}
		m := &marks{}
		m.done = sync.OnceFunc(func() {
			entry.Status, entry.Fault, entry.Dropped = sw.status, m.fault, m.dropped
			switch {
			case m.dropped:
				entry.Status = 0
			case m.gone:
				entry.Status = httpserver.StatusClientClosedRequest
			case entry.Status == 0:
				entry.Status = http.StatusOK
			}
			s.journal.add(entry)
		})
		defer m.done()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), marksKey{}, m)))
	})
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the writer below, for http.ResponseController.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
