package httpserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request that a handler aborts (http.ErrAbortHandler, as a dropped
// connection does) still leaves the in-flight gauge and is counted in the
// duration histogram; the abort goes on to net/http.
func TestAbortedRequestLeavesTheGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	o := &observer{log: slog.New(slog.NewTextHandler(io.Discard, nil)), noLines: true,
		idHeader: "X-Request-Id", metrics: newMetrics(reg)}
	abort := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	require.PanicsWithValue(t, http.ErrAbortHandler, func() {
		o.serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/users", nil), abort)
	})
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				got[mf.GetName()] += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				got[mf.GetName()] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	assert.Equal(t, 0.0, got["http_server_active_requests"], "in flight")
	assert.Equal(t, 1.0, got["http_server_request_duration_seconds"], "measured")
}
