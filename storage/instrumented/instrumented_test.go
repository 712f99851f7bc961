package instrumented_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/orgadmin/orgadmin/storage"
	"github.com/orgadmin/orgadmin/storage/instrumented"
	"github.com/orgadmin/orgadmin/storage/memstore"
	"github.com/orgadmin/orgadmin/storage/redisstore"
	"github.com/orgadmin/orgadmin/storage/storagetest"
)

// newStore wraps s with metrics in a fresh registry and spans to a
// recorder.
func newStore(t testing.TB, s storage.Store) (*instrumented.Store, *prometheus.Registry, *tracetest.SpanRecorder) {
	t.Helper()
	reg := prometheus.NewRegistry()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	is, err := instrumented.New(s, instrumented.Config{Metrics: reg, TracerProvider: tp})
	require.NoError(t, err)
	return is, reg, rec
}

// Measuring changes nothing a store does.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store {
		s, _, _ := newStore(t, memstore.New())
		return s
	})
}

func TestZeroConfigMeasuresNothing(t *testing.T) {
	s, err := instrumented.New(memstore.New(), instrumented.Config{})
	require.NoError(t, err)
	require.NoError(t, s.Ping(context.Background()))
	_, err = s.GetOrg(context.Background(), "nope")
	require.ErrorIs(t, err, storage.ErrNotFound)
}

// Each call is timed under its operation; the contract's answers (not
// found...) are no failures; a failing store's calls are, with a span
// marked as failed.
func TestMetricsAndSpansPerOperation(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	rs, err := redisstore.New(c, redisstore.Options{})
	require.NoError(t, err)
	s, reg, rec := newStore(t, rs)

	require.NoError(t, s.Ping(ctx))
	_, err = s.GetOrg(ctx, "nope")
	require.ErrorIs(t, err, storage.ErrNotFound)
	mr.Close()
	require.Error(t, s.Ping(ctx))

	assert.Equal(t, map[string]uint64{"Ping": 2, "GetOrg": 1}, observed(t, reg))
	errs := map[string]float64{}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "orgadmin_store_errors_total" {
			for _, m := range mf.GetMetric() {
				errs[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	assert.Len(t, errs, reflect.TypeFor[storage.Store]().NumMethod(), "a series per storage.Store method, from the start")
	assert.Equal(t, 0.0, errs["GetOrg"], "not found is an answer")
	assert.Equal(t, 1.0, errs["Ping"])

	spans := rec.Ended()
	require.Len(t, spans, 3)
	assert.Equal(t, "store Ping", spans[0].Name())
	assert.Equal(t, "store GetOrg", spans[1].Name())
	assert.Equal(t, codes.Unset, spans[1].Status().Code, "not found is an answer")
	assert.Equal(t, codes.Error, spans[2].Status().Code)
}

// observed returns the number of calls timed, by operation, of the
// operations called.
func observed(t testing.TB, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	n := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "orgadmin_store_operation_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if c := m.GetHistogram().GetSampleCount(); c > 0 {
				n[m.GetLabel()[0].GetValue()] = c
			}
		}
	}
	return n
}

// A registry holds the metrics of one wrapped store.
func TestSecondStoreOnOneRegistryFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, err := instrumented.New(memstore.New(), instrumented.Config{Metrics: reg})
	require.NoError(t, err)
	_, err = instrumented.New(memstore.New(), instrumented.Config{Metrics: reg})
	require.Error(t, err)
}

// A compare-and-set that finds the record changed (ErrConflict) is an
// answer of the contract, not a failure of the store.
func TestConflictIsAnAnswer(t *testing.T) {
	ctx := context.Background()
	s, reg, rec := newStore(t, memstore.New())
	require.NoError(t, s.CreateOrg(ctx, storage.Org{ID: "acme"}, nil))
	u := storage.User{ID: "u1", Org: "acme", Username: "robot", FoldedUsername: "robot", Role: "Member", Privileges: []string{"read"}}
	require.NoError(t, s.CreateUser(ctx, u, storage.UserLimit{}, nil))

	require.ErrorIs(t, s.SetPrivileges(ctx, "acme", "u1", nil, []string{"write"}, nil), storage.ErrConflict)
	require.NoError(t, s.SetPrivileges(ctx, "acme", "u1", []string{"read"}, []string{"read", "write"}, nil))

	assert.Equal(t, uint64(2), observed(t, reg)["SetPrivileges"])
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "orgadmin_store_errors_total" {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "SetPrivileges" {
					assert.Equal(t, 0.0, m.GetCounter().GetValue(), "a conflict is an answer")
				}
			}
		}
	}
	spans := rec.Ended()
	require.Len(t, spans, 4)
	assert.Equal(t, "store SetPrivileges", spans[2].Name())
	assert.Equal(t, codes.Unset, spans[2].Status().Code, "a conflict is an answer")
}
