package idempotencyotel_test

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// TestModuleVersion: the scope's version is the library module's, as a
// binary's build information lists it, and none where the build knows
// no version of it.
func TestModuleVersion(t *testing.T) {
	t.Parallel()
	const lib = "github.com/seed-a84bb619/idempotency"
	dep := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	service := debug.Module{Path: "example.com/billing", Version: "(devel)"}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"a dependency", &debug.BuildInfo{Main: service, Deps: []*debug.Module{dep("github.com/jackc/pgx/v5", "v5.7.6", nil), dep(lib, "v0.4.0", nil)}}, "v0.4.0"},
		{"a pseudo-version", &debug.BuildInfo{Main: service, Deps: []*debug.Module{dep(lib, "v0.4.1-0.20261201090000-2d5d25b1c0de", nil)}}, "v0.4.1-0.20261201090000-2d5d25b1c0de"},
		{"replaced by a fork at a version", &debug.BuildInfo{Main: service, Deps: []*debug.Module{dep(lib, "v0.4.0", dep("example.com/fork/idempotency", "v0.4.0-fix.1", nil))}}, "v0.4.0-fix.1"},
		{"replaced by a directory", &debug.BuildInfo{Main: service, Deps: []*debug.Module{dep(lib, "v0.4.0", dep("../idempotency", "", nil))}}, ""},
		{"the main module, stamped", &debug.BuildInfo{Main: debug.Module{Path: lib, Version: "v0.4.0"}}, "v0.4.0"},
		{"the main module, not stamped", &debug.BuildInfo{Main: debug.Module{Path: lib, Version: "(devel)"}}, ""},
		{"not linked", &debug.BuildInfo{Main: service, Deps: []*debug.Module{dep("github.com/jackc/pgx/v5", "v5.7.6", nil)}}, ""},
		{"a test binary: no dependencies listed", &debug.BuildInfo{Main: service}, ""},
	} {
		require.Equal(t, tc.want, idempotencyotel.ModuleVersion(tc.info, true), tc.name)
	}
	require.Empty(t, idempotencyotel.ModuleVersion(nil, false), "no build information")
}

// TestScopeVersionOnMetricsAndSpans: the meter's and the tracer's scope
// carry the version, and New's is this binary's.
func TestScopeVersionOnMetricsAndSpans(t *testing.T) {
	t.Parallel()
	info, ok := debug.ReadBuildInfo()
	for _, tc := range []struct {
		name   string
		newTel func(idempotencyotel.Config) (*idempotencyotel.Telemetry, error)
		want   string
	}{
		{"at a version", idempotencyotel.NewAtVersion("v0.4.0"), "v0.4.0"},
		{"New", idempotencyotel.New, idempotencyotel.ModuleVersion(info, ok)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetryBy(t, idempotencyotel.Config{}, tc.newTel)
			a := idempotencytest.Deliver(tel.synchronousHandler(t), event(t, "evt_scope_version", "invoice.paid", "in_1"), secret)
			require.Equal(t, 200, a.Status, a.Body)

			var rm metricdata.ResourceMetrics
			require.NoError(t, tel.reader.Collect(t.Context(), &rm))
			require.NotEmpty(t, rm.ScopeMetrics)
			for _, sm := range rm.ScopeMetrics {
				require.Equal(t, idempotencyotel.ScopeName, sm.Scope.Name)
				require.Equal(t, tc.want, sm.Scope.Version, "the meter's scope")
			}
			spans := tel.spans.GetSpans()
			require.NotEmpty(t, spans)
			for _, s := range spans {
				require.Equal(t, idempotencyotel.ScopeName, s.InstrumentationScope.Name, s.Name)
				require.Equal(t, tc.want, s.InstrumentationScope.Version, "the tracer's scope: span %s", s.Name)
			}
		})
	}
}
