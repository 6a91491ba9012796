package idempotencytest_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPostgresAfterMainFinishedFails runs this test binary again with a
// TestMain that calls idempotencytest.Main twice. Main has stopped the
// cluster, or let go of the external server, when it returns: a Postgres
// of the second run must fail saying so, not with "closed pool" from the
// torn-down server, nor panic on the way out.
func TestPostgresAfterMainFinishedFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	external := idempotencytest.Postgres(t).URL
	for _, url := range []string{"", external} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresHandlerExample$", "-test.count=1")
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
			return strings.HasPrefix(kv, idempotencytest.EnvDatabaseURL+"=")
		}), envMainTwice+"=1", idempotencytest.EnvDatabaseURL+"="+url)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", out)
		require.Contains(t, string(out), "Main has finished", "external server %q", url)
		require.NotContains(t, string(out), "closed pool", "external server %q", url)
		require.NotContains(t, string(out), "panic", "external server %q", url)
	}
}
