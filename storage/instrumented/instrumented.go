// Package instrumented wraps a storage.Store so that every call is
// measured: Prometheus metrics of its duration and failures per operation,
// and an OpenTelemetry span per call, a child of the request's span, with
// the driver's own spans (redisotel, a MongoDB command monitor) below it.
//
// It is opt-in: a program that wants neither metrics nor traces hands the
// adapter to orgadmin.New as it is. The root package asserts no optional
// interface on its store, so the wrapper has none to keep; an adapter's
// own methods beyond storage.Store (mongostore's Cleanup) are called on the
// adapter.
package instrumented

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin/storage"
)

// Config says what to measure. Zero values measure nothing.
type Config struct {
	// Metrics, when not nil, receives orgadmin_store_operation_duration_seconds
	// (a histogram) and orgadmin_store_errors_total (a counter), both
	// labelled by operation: the storage.Store method.
	Metrics prometheus.Registerer
	// TracerProvider, when not nil, makes a span of each call, named
	// "store <Method>", of kind internal.
	TracerProvider trace.TracerProvider
}

// Store is a storage.Store that measures each call of the Store it wraps.
type Store struct {
	next   storage.Store
	tracer trace.Tracer
	// durations and errors are each operation's metrics; nil without
	// metrics.
	durations [numOps]prometheus.Observer
	errors    [numOps]prometheus.Counter
	// spanOpts are each operation's span options, made once.
	spanOpts [numOps][]trace.SpanStartOption
}

var _ storage.Store = (*Store)(nil)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/orgadmin/orgadmin/storage/instrumented"

// New returns next measured as cfg says. It fails when cfg.Metrics
// already holds metrics of the same names (one wrapped store per
// registry).
func New(next storage.Store, cfg Config) (*Store, error) {
	s := &Store{next: next}
	if cfg.Metrics != nil {
		dur := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orgadmin_store_operation_duration_seconds",
			Help:    "Duration of calls to the store, by operation (storage.Store method).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 9), // 100 µs to 6.6 s
		}, []string{"operation"})
		errs := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orgadmin_store_errors_total",
			Help: "Calls to the store that failed, by operation; not found, already exists, limit exceeded and conflict are answers, not failures.",
		}, []string{"operation"})
		for _, c := range []prometheus.Collector{dur, errs} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, err
			}
		}
		for o := range numOps {
			s.durations[o] = dur.WithLabelValues(opNames[o])
			s.errors[o] = errs.WithLabelValues(opNames[o])
		}
	}
	if cfg.TracerProvider != nil {
		s.tracer = cfg.TracerProvider.Tracer(ScopeName)
		for o := range numOps {
			s.spanOpts[o] = []trace.SpanStartOption{
				trace.WithSpanKind(trace.SpanKindInternal),
				trace.WithAttributes(attribute.String("orgadmin.store.operation", opNames[o])),
			}
		}
	}
	return s, nil
}

// Unwrap returns the store s measures.
func (s *Store) Unwrap() storage.Store { return s.next }

// call is a call under way.
type call struct {
	op    op
	start time.Time
	span  trace.Span
}

// begin starts measuring a call of o.
func (s *Store) begin(ctx context.Context, o op) (context.Context, call) {
	c := call{op: o}
	if s.tracer != nil {
		ctx, c.span = s.tracer.Start(ctx, "store "+opNames[o], s.spanOpts[o]...)
	}
	if s.durations[o] != nil {
		c.start = time.Now()
	}
	return ctx, c
}

// end records the call c, which returned err.
func (s *Store) end(c call, err error) {
	failed := err != nil && !isAnswer(err)
	if d := s.durations[c.op]; d != nil {
		d.Observe(time.Since(c.start).Seconds())
		if failed {
			s.errors[c.op].Inc()
		}
	}
	if c.span != nil {
		if failed {
			c.span.RecordError(err)
			c.span.SetStatus(codes.Error, "store call failed")
		}
		c.span.End()
	}
}

// isAnswer reports whether err is one of the answers the storage contract
// gives (not found, already exists, limit exceeded, conflict), not a
// failure.
func isAnswer(err error) bool {
	return errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrAlreadyExists) ||
		errors.Is(err, storage.ErrLimitExceeded) || errors.Is(err, storage.ErrConflict)
}
