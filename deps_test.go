package idempotency_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goListDeps is what `go list -deps pkg` prints: pkg and every package it
// links.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, pkg, "go list printed the package itself")
	return deps
}

// TestProductionDepsExcludeTestKits keeps test helpers out of services'
// binaries: they live in idempotencytest, and nothing the root package or
// the dashboard imports may pull in net/http/httptest, testing, or the
// browser driver of the dashboard's tests.
func TestProductionDepsExcludeTestKits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	for _, pkg := range []string{"github.com/seed-a84bb619/idempotency", "github.com/seed-a84bb619/idempotency/dashboard"} {
		deps := goListDeps(t, pkg)
		for _, banned := range []string{"net/http/httptest", "testing", "github.com/seed-a84bb619/idempotency/idempotencytest", "github.com/chromedp/chromedp"} {
			require.NotContains(t, deps, banned, "package %s links %s", pkg, banned)
		}
	}
}

// TestRootExcludesOpenTelemetry keeps OpenTelemetry beside the core: only
// a program that imports the otel subpackage links it.
func TestRootExcludesOpenTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	for _, dep := range goListDeps(t, "github.com/seed-a84bb619/idempotency") {
		for _, banned := range []string{"go.opentelemetry.io/", "github.com/prometheus/", "github.com/seed-a84bb619/idempotency/otel"} {
			require.False(t, strings.HasPrefix(dep, banned), "package idempotency links %s", dep)
		}
	}
	require.Contains(t, goListDeps(t, "github.com/seed-a84bb619/idempotency/otel"), "go.opentelemetry.io/otel/metric",
		"the check above looks for the right names")
}
