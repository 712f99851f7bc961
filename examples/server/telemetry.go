package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is what the server measures: metrics when -metrics-addr is
// set, traces when an OTLP endpoint is. Nil fields measure nothing.
type telemetry struct {
	// metrics receives every metric; nil without -metrics-addr.
	metrics *prometheus.Registry
	// tracer exports spans over OTLP/HTTP; nil without an endpoint.
	tracer *sdktrace.TracerProvider
}

// tracerProvider returns the tracer provider, or nil (as an interface)
// when spans are not exported.
func (t *telemetry) tracerProvider() trace.TracerProvider {
	if t.tracer == nil {
		return nil
	}
	return t.tracer
}

// registerer returns the metrics registry, or nil (as an interface).
func (t *telemetry) registerer() prometheus.Registerer {
	if t.metrics == nil {
		return nil
	}
	return t.metrics
}

// otlpEndpoint returns where spans go: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// as it is, or $OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended, as
// the OpenTelemetry specification says; "" when neither is set.
func otlpEndpoint(getenv func(string) string) string {
	if ep := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
		return ep
	}
	if ep := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); ep != "" {
		u, err := url.Parse(ep)
		if err != nil {
			return ep // refused as it is, by the exporter
		}
		// To the path, not after a query.
		u.Path = strings.TrimRight(u.Path, "/") + "/v1/traces"
		u.RawPath = ""
		return u.String()
	}
	return ""
}

// startTelemetry serves the metrics at /metrics on metricsAddr (when not
// empty) and exports spans to the OTLP endpoint of the environment (when
// set). The function it returns stops both, sending the spans not yet
// sent.
func startTelemetry(metricsAddr string, getenv func(string) string, log *slog.Logger) (*telemetry, func(), error) {
	t := &telemetry{}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if ep := otlpEndpoint(getenv); ep != "" {
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(ep))
		if err != nil {
			return nil, nil, fmt.Errorf("OTLP endpoint %q: %w", redact(ep), err)
		}
		name := getenv("OTEL_SERVICE_NAME")
		if name == "" {
			name = "orgadmin"
		}
		// The exporter reports a failed export (a collector down)
		// through OpenTelemetry's global handler, which would print it
		// with the log package: a plain line among the JSON ones, its
		// URL unredacted.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("exporting spans", "err", redactErr(err))
		}))
		t.tracer = sdktrace.NewTracerProvider(
			sdktrace.WithBatcher(exp),
			sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(name))))
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := t.tracer.Shutdown(ctx); err != nil {
				log.Warn("sending the last spans", "err", err)
			}
		})
		log.Info("exporting spans", "endpoint", redact(ep))
		if u, err := url.Parse(ep); err == nil && (u.User != nil || u.RawQuery != "") {
			// The exporter takes the scheme, host and path alone.
			log.Warn("the OTLP endpoint's user information and query are not sent: give credentials in OTEL_EXPORTER_OTLP_HEADERS")
		}
	}
	if metricsAddr != "" {
		t.metrics = prometheus.NewRegistry()
		t.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(t.metrics, promhttp.HandlerOpts{}))
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		srv := &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		}
		go func() { _ = srv.Serve(ln) }()
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx)
		})
		log.Info("metrics listening", "addr", ln.Addr().String())
	}
	return t, stop, nil
}

// redactErr returns the message of err with the URL of the request it
// failed, if any, redacted as the endpoint is when logged.
func redactErr(err error) string {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		msg = strings.ReplaceAll(msg, ue.URL, redact(ue.URL))
	}
	return msg
}

// mongoTracing returns a command monitor that makes a client span of
// each MongoDB command, a child of the span of the store call that sent
// it. The command itself is not recorded: it holds the records.
func mongoTracing(tp trace.TracerProvider) *event.CommandMonitor {
	tracer := tp.Tracer("github.com/orgadmin/orgadmin/examples/server")
	var spans sync.Map // request id → trace.Span
	end := func(id int64, err error) {
		if s, ok := spans.LoadAndDelete(id); ok {
			span := s.(trace.Span)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, "command failed")
			}
			span.End()
		}
	}
	return &event.CommandMonitor{
		Started: func(ctx context.Context, e *event.CommandStartedEvent) {
			_, span := tracer.Start(ctx, e.CommandName+" "+e.DatabaseName,
				trace.WithSpanKind(trace.SpanKindClient),
				trace.WithAttributes(
					semconv.DBSystemNameMongoDB,
					semconv.DBOperationName(e.CommandName),
					semconv.DBNamespace(e.DatabaseName),
					attribute.String("db.mongodb.connection_id", e.ConnectionID)))
			spans.Store(e.RequestID, span)
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) { end(e.RequestID, nil) },
		Failed:    func(_ context.Context, e *event.CommandFailedEvent) { end(e.RequestID, e.Failure) },
	}
}
