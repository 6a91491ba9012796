package idempotency_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		deps := strings.Fields(string(out))
		require.Contains(t, deps, pkg, "go list printed the package itself")
		for _, banned := range []string{"net/http/httptest", "testing", "github.com/seed-a84bb619/idempotency/idempotencytest", "github.com/chromedp/chromedp"} {
			require.NotContains(t, deps, banned, "package %s links %s", pkg, banned)
		}
	}
}
