package httpserver

import (
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/orgadmin/orgadmin"
)

// FeedbackConfig configures the feedback handler. Zero values are the
// documented defaults.
type FeedbackConfig struct {
	// Logger receives one line per request. Nil means slog.Default().
	Logger *slog.Logger
	// PerMinute is how many submissions one client may make per minute
	// (a token bucket of that size, refilled evenly). Zero means 10.
	PerMinute int
	// ClientKey names the client of a request for rate limiting. Nil means
	// the host part of RemoteAddr. Behind a proxy, derive it from a header
	// the proxy sets.
	ClientKey func(*http.Request) string
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// FeedbackPath is where the feedback endpoint is conventionally mounted.
const FeedbackPath = "/docs/api/feedback/agent"

// feedbackAnswer is the answer to a submission: {"feedback_id"}.
type feedbackAnswer string

func (id feedbackAnswer) appendJSON(b []byte) []byte {
	return append(appendField(append(b, '{'), "feedback_id", string(id)), '}')
}

// NewFeedback returns the page-feedback handler: GET with the query
// parameters page_path, text, page_title and source; no bearer token
// needed. Every other method, HEAD included, is answered 405 with
// Allow: GET, submitting nothing. Mount it where the host program
// chooses, conventionally at FeedbackPath. A client past its rate gets 429 with Retry-After; a
// submission the Service refuses costs the client nothing of its rate.
func NewFeedback(svc *orgadmin.Service, cfg FeedbackConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.PerMinute <= 0 {
		cfg.PerMinute = 10
	}
	if cfg.ClientKey == nil {
		cfg.ClientKey = remoteHost
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lim := &limiter{rate: float64(cfg.PerMinute) / 60, burst: float64(cfg.PerMinute), buckets: map[string]*bucket{}}
	return LogRequests(cfg.Logger, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// GET only: a HEAD would submit as a GET does, and a HEAD must have
		// no side effects.
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		var d decoder
		var in orgadmin.FeedbackInput
		if q, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			d.add(orgadmin.IssueInvalidString, "Malformed query string", []any{})
		} else {
			in = orgadmin.FeedbackInput{
				PagePath:  q.Get("page_path"),
				Text:      q.Get("text"),
				PageTitle: q.Get("page_title"),
				Source:    q.Get("source"),
			}
		}
		in.DecodeIssues = d.issues
		key := cfg.ClientKey(r)
		if wait, ok := lim.take(key, cfg.Now()); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeJSON(w, http.StatusTooManyRequests, errorBody{Message: orgadmin.CodeTooManyRequests.Message(), Code: orgadmin.CodeTooManyRequests})
			return
		}
		id, err := svc.SubmitFeedback(r.Context(), in)
		if err != nil {
			if orgadmin.ErrorCode(err) == orgadmin.CodeBadRequest {
				lim.giveBack(key)
			}
			writeError(w, r, cfg.Logger, err)
			return
		}
		writeJSON(w, http.StatusOK, feedbackAnswer(id))
	}))
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limiter is a set of per-client token buckets.
type limiter struct {
	mu      sync.Mutex
	rate    float64 // tokens per second
	burst   float64
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the clients remembered; past it, full buckets (which
// carry no information) are forgotten.
const maxBuckets = 10000

// take takes a token from key's bucket; when there is none it reports
// false and how long until there is.
func (l *limiter) take(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.prune(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) / l.rate * float64(time.Second)), false
	}
	b.tokens--
	return 0, true
}

// giveBack returns to key's bucket the token take took for a request that
// was refused.
func (l *limiter) giveBack(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[key]; ok {
		b.tokens = min(l.burst, b.tokens+1)
	}
}

func (l *limiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
