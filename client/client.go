// Package client is a typed Go client of the orgadmin REST API: every /v1
// operation and the page-feedback endpoint, one method each, named after
// the operation ids of the OpenAPI document the server publishes at
// /docs/specs.
//
//	c := client.New("https://api.example.com", token)
//	sa, err := c.CreateServiceAccount(ctx, client.CreateServiceAccountRequest{Username: "reporter"})
//
// The client speaks the orgadmin package's vocabulary: its enums (Size,
// TokenType, Role), configurations (InstanceConfig), issues (Issue, with
// the same IssueCode constants), users and tokens are that package's
// types, and durations are time.Duration.
//
// Every method takes a context.Context. A failure the API reports is an
// *Error carrying the HTTP status, the error code, the message and the
// issues; errors.Is(err, orgadmin.ErrNotFound) (or client.ErrNotFound, the
// same value) tests its code, and errors.As gets at it. A request the
// client refuses before sending it (a TTL that is not whole seconds, a
// token id of "..") is a *ValidationError; one the Client cannot send as
// it is configured (a base URL that does not parse, a token or user agent
// that no header may carry) is a plain error, never retried. Transport
// failures are returned as they come, wrapped.
//
// Idempotent requests (GET, PUT, DELETE) are retried with exponential
// backoff and jitter when the server answers 429, 502, 503 or 504,
// honouring Retry-After, and when the connection fails before an answer;
// POST requests never are. A DELETE whose retry finds nothing to delete
// after an earlier attempt may have done it fails with an error that
// matches ErrDeletedOnRetry. See RetryPolicy.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// MaxResponseBytes bounds the body of a response the client reads; a larger
// one is an error.
const MaxResponseBytes = 10 << 20

// FeedbackPath is where the page-feedback endpoint is conventionally
// mounted, relative to the base URL. See WithFeedbackURL.
const FeedbackPath = "/docs/api/feedback/agent"

// Client calls the orgadmin API at one base URL with one bearer token. It
// is safe for concurrent use.
type Client struct {
	base        string
	token       string
	hc          *http.Client
	retry       RetryPolicy
	userAgent   string
	feedbackURL string
	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client; a nil Option is ignored.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests through hc (for its
// transport, timeouts or proxies). The default is an http.Client whose
// transport is a clone of http.DefaultTransport made at the first New
// that needs it and shared by the Clients given none, so that code
// closing http.DefaultTransport's idle connections (httptest.Server.Close
// does) cannot fail their requests. Whichever it is, the Client follows no
// redirect (see New); hc itself is left as it is.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithRetry replaces the default RetryPolicy. RetryPolicy{} turns retries
// off.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) { c.retry = p }
}

// WithUserAgent sets the User-Agent header of every request. The default is
// "orgadmin-go-client".
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = ua }
}

// WithFeedbackURL sets the full URL of the page-feedback endpoint, which the
// host mounts where it chooses. The default is the base URL followed by
// FeedbackPath.
func WithFeedbackURL(u string) Option {
	return func(c *Client) { c.feedbackURL = u }
}

// RetryPolicy says how a Client retries idempotent requests (GET, PUT,
// DELETE) that the server answers with 429, 502, 503 or 504, or that get
// no answer (the connection failed or was closed; not a canceled or
// expired context). POST requests, and SubmitFeedback, which records
// something on every call, are never retried.
//
// A retried DELETE may find its user or token already gone: an earlier
// attempt that got no answer, or a 502, 503 or 504 (a gateway's), may have
// reached the server and deleted it. Its 404 NOT_FOUND is then returned
// wrapped so that errors.Is(err, ErrDeletedOnRetry) holds (see there); a
// 404 to the first attempt, or after only 429s (which the server answers
// without acting), is a plain 404 *Error.
type RetryPolicy struct {
	// MaxRetries is how many times a request is retried after its first
	// attempt. Zero means never.
	MaxRetries int
	// MinBackoff is the wait before the first retry; each further retry
	// waits twice as long, up to MaxBackoff, with random jitter (a wait of
	// d is drawn from [d/2, d]). Zero means 100ms.
	MinBackoff time.Duration
	// MaxBackoff caps every wait. A server that asks, with Retry-After, for
	// a longer wait gets its error returned at once instead. Zero means
	// 30s.
	MaxBackoff time.Duration
}

// DefaultRetryPolicy is the RetryPolicy of a Client made without
// WithRetry: up to 3 retries, waiting from 100ms to 30s.
var DefaultRetryPolicy = RetryPolicy{MaxRetries: 3, MinBackoff: 100 * time.Millisecond, MaxBackoff: 30 * time.Second}

// New returns a Client of the API at baseURL (such as
// "https://api.example.com"; the /v1 prefix is added by each method) that
// authenticates with the bearer token.
//
// The Client follows no redirect: the API answers none, and Go's
// http.Client would send the bearer token on to where one points when it
// names the same host on another port, the same host over plain http, or
// a subdomain. A 3xx answer is an *Error with its status.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		base:      strings.TrimRight(baseURL, "/"),
		token:     token,
		retry:     DefaultRetryPolicy,
		userAgent: "orgadmin-go-client",
		sleep:     sleepContext,
	}
	for _, opt := range opts {
		if opt != nil { // a nil Option is none
			opt(c)
		}
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: defaultTransport()}
	}
	hc := *c.hc // a copy: the caller's client, or the default one, is left as it is
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	if c.feedbackURL == "" {
		c.feedbackURL = c.base + FeedbackPath
	}
	return c
}

// defaultTransport is the transport of the Clients given no http.Client:
// a clone of http.DefaultTransport (proxies from the environment, its
// timeouts, HTTP/2), not http.DefaultTransport itself, whose idle
// connections any code of the process may close at any time:
// httptest.Server.Close does, and a request of a Client that was about
// to reuse one of them then fails, unsent or unanswered, in a test suite
// that closes its other servers in parallel. A program that replaced
// http.DefaultTransport by a RoundTripper of its own gets that one.
var defaultTransport = sync.OnceValue(func() http.RoundTripper {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return t.Clone()
	}
	return http.DefaultTransport
})

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// request describes one API call.
type request struct {
	method string
	url    string // absolute
	query  url.Values
	body   any  // nil: no body; otherwise sent as JSON
	auth   bool // send the bearer token
	retry  bool // may be retried (idempotent)
}

// call performs r, retrying it as the policy allows, and decodes a 200
// answer into out. Any other answer is an *Error.
func (c *Client) call(ctx context.Context, r request, out any) error {
	var body []byte
	if r.body != nil {
		var err error
		if body, err = json.Marshal(r.body); err != nil {
			return fmt.Errorf("orgadmin: encode %s request: %w", r.method, err)
		}
	}
	target := r.url
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	reached := false // whether an earlier attempt may have reached the server and acted
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, r, target, body, out)
		var apiErr *Error
		isAPI := errors.As(err, &apiErr)
		if isAPI && reached && r.method == http.MethodDelete && apiErr.StatusCode == http.StatusNotFound && apiErr.Code == CodeNotFound {
			return fmt.Errorf("%w: %w", ErrDeletedOnRetry, err)
		}
		lost := errors.Is(err, errNoAnswer)
		if !r.retry || attempt >= c.retry.MaxRetries || ctx.Err() != nil || !(lost || isAPI && retryable(apiErr.StatusCode)) {
			return err
		}
		reached = reached || lost || apiErr.StatusCode != http.StatusTooManyRequests
		wait := c.backoff(attempt)
		if isAPI && apiErr.RetryAfter >= 0 {
			if apiErr.RetryAfter > c.maxBackoff() {
				return err
			}
			wait = apiErr.RetryAfter
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return fmt.Errorf("orgadmin: %s %s: gave up retrying: %w (last answer: %w)", r.method, redact(target), serr, err)
		}
	}
}

// errNoAnswer marks the error of an attempt that got no whole answer: the
// request may or may not have reached the server.
var errNoAnswer = errors.New("no answer")

// once sends one attempt of r.
func (c *Client) once(ctx context.Context, r request, target string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact(ue.URL) // a base URL that does not parse: its request's query stays out
		}
		return fmt.Errorf("orgadmin: %s: %w", r.method, err)
	}
	// A header net/http would refuse to send fails here, not as a request
	// that got no answer, which would be tried again.
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.userAgent != "" {
		if !httpguts.ValidHeaderFieldValue(c.userAgent) {
			return fmt.Errorf("orgadmin: %s %s: the user agent holds a character no header may carry", r.method, redact(target))
		}
		req.Header.Set("User-Agent", c.userAgent)
	}
	if r.auth {
		if !httpguts.ValidHeaderFieldValue(c.token) {
			return fmt.Errorf("orgadmin: %s %s: the token holds a character no header may carry", r.method, redact(target))
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact(ue.URL) // this request's own error: its query stays out, as below
		}
		if ctx.Err() != nil {
			return fmt.Errorf("orgadmin: %w", err)
		}
		return fmt.Errorf("orgadmin: %w (%w)", err, errNoAnswer)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("orgadmin: %s %s: read response: %w", r.method, redact(target), err)
		}
		return fmt.Errorf("orgadmin: %s %s: read response: %w (%w)", r.method, redact(target), err, errNoAnswer)
	}
	if len(raw) > MaxResponseBytes {
		return fmt.Errorf("orgadmin: %s %s: response larger than %d bytes", r.method, redact(target), MaxResponseBytes)
	}
	if res.StatusCode != http.StatusOK {
		return newError(res, raw)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("orgadmin: %s %s: decode response: %w", r.method, redact(target), err)
	}
	return nil
}

// redact drops the query of a URL for error messages; it may carry page
// tokens or feedback text.
func redact(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// retryable reports whether a status is worth another attempt.
func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func (c *Client) maxBackoff() time.Duration {
	if c.retry.MaxBackoff > 0 {
		return c.retry.MaxBackoff
	}
	return 30 * time.Second
}

// backoff is the wait before retry number attempt+1: MinBackoff doubled
// attempt times, capped, then jittered into [d/2, d].
func (c *Client) backoff(attempt int) time.Duration {
	d := c.retry.MinBackoff
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	limit := c.maxBackoff()
	for range attempt {
		if d >= limit/2 {
			d = limit
			break
		}
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2+1) // #nosec G404 -- retry jitter; nothing secret
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date. It returns -1 when there is none or it cannot be read.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 {
			return -1
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}

// userPath is /v1/users/{username} followed by rest, escaped.
func (c *Client) userPath(username string, rest ...string) string {
	p := c.base + "/v1/users/" + url.PathEscape(username)
	for _, s := range rest {
		p += "/" + url.PathEscape(s)
	}
	return p
}
