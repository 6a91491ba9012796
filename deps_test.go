package idempotency_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProductionDepsExcludeTestKits keeps test helpers out of services'
// binaries: they live in idempotencytest, and nothing the root package
// imports may pull in net/http/httptest or testing.
func TestProductionDepsExcludeTestKits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/seed-a84bb619/idempotency").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/seed-a84bb619/idempotency", "go list printed the package itself")
	for _, banned := range []string{"net/http/httptest", "testing", "github.com/seed-a84bb619/idempotency/idempotencytest"} {
		require.NotContains(t, deps, banned, "package idempotency links %s", banned)
	}
}
