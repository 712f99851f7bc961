package httpserver

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/orgadmin/orgadmin"
)

// metrics are a Handler's Prometheus metrics, named after the
// OpenTelemetry HTTP semantic conventions (http.server.request.duration,
// http.server.active_requests) as Prometheus spells them, plus the
// outcomes of authentication.
type metrics struct {
	duration *prometheus.HistogramVec
	active   *prometheus.GaugeVec
	// auth counts outcomes by scheme and outcome, made once.
	auth map[authOutcome]prometheus.Counter
}

// authOutcome is a label pair of orgadmin_auth_attempts_total.
type authOutcome struct{ scheme, outcome string }

// The schemes and outcomes of authentication, as labels.
const (
	schemeBearer = "bearer"
	schemeHook   = "hook"

	outcomeSuccess = "success"
	outcomeMissing = "missing"
	outcomeUnknown = "unknown"
	outcomeExpired = "expired"
	outcomeRevoked = "revoked"
	outcomeRefused = "refused"
	outcomeError   = "error"
)

// durationBuckets are the buckets the semantic conventions advise for
// http.server.request.duration, in seconds.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// newMetrics returns the Handler's metrics in reg: registered there, or
// the ones registered already by another Handler or Feedback handler on
// reg, which they then share. It panics when reg holds other collectors
// of their names, as prometheus.MustRegister does.
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		duration: registered(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_server_request_duration_seconds",
			Help:    "Duration of HTTP server requests, by method, route pattern and status.",
			Buckets: durationBuckets,
		}, []string{"http_request_method", "http_route", "http_response_status_code"})),
		active: registered(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "http_server_active_requests",
			Help: "Number of HTTP server requests in flight, by method.",
		}, []string{"http_request_method"})),
		auth: map[authOutcome]prometheus.Counter{},
	}
	auth := registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "orgadmin_auth_attempts_total",
		Help: "Authentications of /v1 requests, by scheme (bearer, hook) and outcome.",
	}, []string{"scheme", "outcome"}))
	for _, o := range []authOutcome{
		{schemeBearer, outcomeSuccess}, {schemeBearer, outcomeMissing}, {schemeBearer, outcomeUnknown}, {schemeBearer, outcomeExpired},
		{schemeBearer, outcomeRevoked},
		{schemeHook, outcomeSuccess}, {schemeHook, outcomeUnknown}, {schemeHook, outcomeRefused}, {schemeHook, outcomeError},
	} {
		m.auth[o] = auth.WithLabelValues(o.scheme, o.outcome)
	}
	return m
}

// registered registers c with reg and returns it, or returns the
// collector of the same description that reg holds already. It panics
// when reg refuses c for any other reason.
func registered[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(err)
}

// methodLabel is the method of a request as a label: the methods HTTP
// defines, and _OTHER for any other, as the semantic conventions say, so
// that a client cannot make series at will.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// statusLabel is a status as a label, without allocating for the
// statuses the API answers.
func statusLabel(s int) string {
	switch s {
	case 200:
		return "200"
	case 304:
		return "304"
	case 400:
		return "400"
	case 401:
		return "401"
	case 403:
		return "403"
	case 404:
		return "404"
	case 405:
		return "405"
	case 429:
		return "429"
	case StatusClientClosedRequest:
		return "499"
	case 500:
		return "500"
	case 503:
		return "503"
	}
	return strconv.Itoa(s)
}

// begin counts a request in flight.
func (m *metrics) begin(method string) {
	m.active.WithLabelValues(methodLabel(method)).Inc()
}

// end counts a request done after d, with its route and status.
func (m *metrics) end(method, route string, status int, d time.Duration) {
	method = methodLabel(method)
	m.active.WithLabelValues(method).Dec()
	m.duration.WithLabelValues(method, route, statusLabel(status)).Observe(d.Seconds())
}

// authenticated counts the outcome of authenticating a request by scheme,
// from the error of its operation. An operation that failed with a 5xx
// is not counted: the failure may have come before the credential was
// checked or after. (A hook that fails is counted by hookFailed.)
func (m *metrics) authenticated(scheme string, err error) {
	outcome := outcomeSuccess
	switch orgadmin.ErrorCode(err) {
	case orgadmin.CodeUnauthorized:
		switch {
		case scheme == schemeHook && errors.Is(err, orgadmin.ErrCallerNotIssued):
			outcome = outcomeRefused
		case scheme == schemeHook:
			outcome = outcomeUnknown
		case errors.Is(err, orgadmin.ErrExpiredToken):
			outcome = outcomeExpired
		case errors.Is(err, orgadmin.ErrRevokedToken):
			outcome = outcomeRevoked
		case errors.Is(err, orgadmin.ErrNoCredential):
			outcome = outcomeMissing
		default:
			outcome = outcomeUnknown
		}
	case orgadmin.CodeInternal, orgadmin.CodeCanceled:
		return
	}
	m.auth[authOutcome{scheme, outcome}].Inc()
}

// hookFailed counts a hook that failed.
func (m *metrics) hookFailed() { m.auth[authOutcome{schemeHook, outcomeError}].Inc() }
