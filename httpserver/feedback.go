package httpserver

import (
	"container/list"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/orgadmin/orgadmin"
)

// FeedbackConfig configures the feedback handler. Zero values are the
// documented defaults.
type FeedbackConfig struct {
	// Logger receives one line per request, unless RequestLog is set, and
	// the cause of every 5xx. Nil means slog.Default().
	Logger *slog.Logger
	// RequestLog, when not nil, receives the line of each request instead
	// of Logger (see Config.RequestLog).
	RequestLog io.Writer
	// PerMinute is how many submissions one client may make per minute
	// (a token bucket of that size, refilled evenly). Zero means 10. The
	// handler remembers the rate of at most MaxFeedbackClients clients.
	PerMinute int
	// ClientKey names the client of a request for rate limiting. Nil means
	// the address of RemoteAddr: the IPv4 address, or the /64 network of
	// an IPv6 address (one host customarily holds a whole /64). Behind a
	// proxy, derive it from a header the proxy sets.
	ClientKey func(*http.Request) string
	// Now returns the current time, by which the rate refills. Nil means
	// time.Now.
	Now func() time.Time

	// Metrics and TracerProvider, when not nil, measure the handler as
	// Config's measure a Handler (README, "Observability"), its route
	// labelled Route; one registry may take the metrics of Handlers and
	// Feedback handlers, which share them. Nil means none, at no cost.
	Metrics        prometheus.Registerer
	TracerProvider trace.TracerProvider
	// Route is the route of the handler in its metrics and spans: where
	// it is mounted. Empty means FeedbackPath.
	Route string
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
// chooses, conventionally at FeedbackPath. A client past its rate gets
// 429 with Retry-After; a submission the Service refuses costs the client
// nothing of its rate.
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
	if cfg.Route == "" {
		cfg.Route = FeedbackPath
	}
	limits := newClientLimits(cfg.PerMinute, MaxFeedbackClients)
	o := &observer{log: cfg.Logger, lines: cfg.RequestLog, idHeader: DefaultRequestIDHeader, tracing: cfg.TracerProvider != nil}
	if cfg.Metrics != nil {
		o.metrics = newMetrics(cfg.Metrics)
	}
	pattern := http.MethodGet + " " + cfg.Route
	return o.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Pattern = pattern // the route the observer labels
		// GET only: a HEAD would submit as a GET does, and a HEAD must have
		// no side effects.
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		var d decoder
		var in orgadmin.FeedbackInput
		if q, ok := d.query(r); ok {
			in = orgadmin.FeedbackInput{
				PagePath:  d.queryString(q, "page_path"),
				Text:      d.queryString(q, "text"),
				PageTitle: d.queryString(q, "page_title"),
				Source:    d.queryString(q, "source"),
			}
		}
		in.DecodeIssues = d.issues
		// A request refused, for the rate or as a bad request, cancels its
		// reservation at the instant it was made: that gives the token
		// back whole (a later instant could give back less, or nothing).
		now := cfg.Now()
		res := limits.limiter(cfg.ClientKey(r)).ReserveN(now, 1)
		if wait := res.DelayFrom(now); wait > 0 {
			res.CancelAt(now)
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
			writeJSON(w, http.StatusTooManyRequests, errorBody{Message: orgadmin.CodeTooManyRequests.Message(), Code: orgadmin.CodeTooManyRequests})
			return
		}
		id, err := svc.SubmitFeedback(r.Context(), in)
		if err != nil {
			if orgadmin.ErrorCode(err) == orgadmin.CodeBadRequest {
				res.CancelAt(now)
			}
			writeError(w, r, cfg.Logger, err)
			return
		}
		writeJSON(w, http.StatusOK, feedbackAnswer(id))
	}), cfg.TracerProvider)
}

// remoteHost is the client of r by default: its IPv4 address, or the /64
// network of its IPv6 address (an IPv4-mapped one is its IPv4 address).
// One host customarily holds a whole /64: keyed by address, it could
// submit at will, from one address after another, and push every other
// client out of the handler's memory.
func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// MaxFeedbackClients is how many clients a feedback handler remembers the
// rate of. Past it, each new client makes the handler forget the one it
// has seen least recently, which starts over with a full budget when it
// comes back: a client is held to its rate as long as fewer than this
// many others submit in between.
const MaxFeedbackClients = 10_000

// clientLimits holds the rate limiter of each client, for at most capacity
// clients, least recently seen last. Finding, adding and forgetting a
// client each take constant time.
type clientLimits struct {
	limit    rate.Limit
	burst    int
	capacity int

	mu      sync.Mutex
	clients map[string]*list.Element // of *clientLimit, in order
	order   list.List                // most recently seen first
}

type clientLimit struct {
	key string
	lim *rate.Limiter
}

func newClientLimits(perMinute, capacity int) *clientLimits {
	return &clientLimits{
		limit:    rate.Limit(float64(perMinute) / 60),
		burst:    perMinute,
		capacity: capacity,
		clients:  make(map[string]*list.Element),
	}
}

// limiter returns the limiter of the client key, with a full budget when
// the client is new; to make room for it, it forgets the client seen
// least recently.
func (c *clientLimits) limiter(key string) *rate.Limiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.clients[key]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*clientLimit).lim
	}
	lim := rate.NewLimiter(c.limit, c.burst)
	if c.order.Len() < c.capacity {
		c.clients[key] = c.order.PushFront(&clientLimit{key: key, lim: lim})
		return lim
	}
	e := c.order.Back()
	cl := e.Value.(*clientLimit)
	delete(c.clients, cl.key)
	cl.key, cl.lim = key, lim
	c.order.MoveToFront(e)
	c.clients[key] = e
	return lim
}
