package httpserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/orgadmin/orgadmin"
	"github.com/orgadmin/orgadmin/httpserver"
	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/instrumented"
	"github.com/orgadmin/orgadmin/storage/memstore"
)

// discardExporter drops every span it is given, so that the benchmarks
// price making spans, not sending them.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkInstrumentationHTTP prices metrics and traces: two workloads
// of the load harness (list-tokens, get-config) through the Handler on a
// memory store, with no instrumentation (instr=off, as the Handler comes),
// Prometheus metrics (metrics), OpenTelemetry spans sampled always and
// batched to an exporter that drops them (traces), and both; with
// instrumentation on, the store is wrapped by storage/instrumented, as
// the example server does.
//
//	go test -run '^$' -bench InstrumentationHTTP -benchmem -count 6 ./httpserver | benchstat -col /instr -
func BenchmarkInstrumentationHTTP(b *testing.B) {
	for _, instr := range []string{"off", "metrics", "traces", "both"} {
		var reg prometheus.Registerer
		var tp trace.TracerProvider
		if instr == "metrics" || instr == "both" {
			reg = prometheus.NewRegistry()
		}
		if instr == "traces" || instr == "both" {
			p := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
			b.Cleanup(func() { _ = p.Shutdown(context.Background()) })
			tp = p
		}
		var store storage.Store = memstore.New()
		if reg != nil || tp != nil {
			s, err := instrumented.New(store, instrumented.Config{Metrics: reg, TracerProvider: tp})
			if err != nil {
				b.Fatal(err)
			}
			store = s
		}
		ctx := context.Background()
		svc := orgadmin.New(store, orgadmin.Config{})
		token, err := svc.Bootstrap(ctx, orgadmin.BootstrapInput{Org: "bench", Username: "admin"})
		if err != nil {
			b.Fatal(err)
		}
		admin, err := svc.Authenticate(ctx, token)
		if err != nil {
			b.Fatal(err)
		}
		for i := range 9 {
			if _, err := svc.CreateToken(ctx, admin, "admin", orgadmin.CreateTokenInput{Name: fmt.Sprint("bench-", i)}); err != nil {
				b.Fatal(err)
			}
		}
		const users = 100
		for i := range users {
			if _, err := svc.CreateServiceAccount(ctx, admin, orgadmin.CreateServiceAccountInput{Username: fmt.Sprintf("sa%05d", i)}); err != nil {
				b.Fatal(err)
			}
		}
		h := httpserver.New(svc, httpserver.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), RequestLog: io.Discard,
			Metrics: reg, TracerProvider: tp})
		for _, w := range []struct{ name, path string }{
			{"list-tokens", "/v1/users/admin/tokens"},
			{"get-config", "/v1/users/sa%05d/instances"},
		} {
			reqs := make([]*http.Request, users)
			for i := range reqs {
				path := w.path
				if w.name == "get-config" {
					path = fmt.Sprintf(w.path, i)
				}
				reqs[i] = httptest.NewRequest("GET", path, nil)
				reqs[i].Header.Set("Authorization", "Bearer "+token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, reqs[0])
			if rec.Code != http.StatusOK {
				b.Fatal(rec.Code, rec.Body.String())
			}
			b.Run("workload="+w.name+"/instr="+instr, func(b *testing.B) {
				n := 0
				b.ReportAllocs()
				for b.Loop() {
					// A new header map for every answer, as net/http makes.
					h.ServeHTTP(discardWriter{header: http.Header{}}, reqs[n%len(reqs)])
					n++
				}
			})
		}
	}
}
