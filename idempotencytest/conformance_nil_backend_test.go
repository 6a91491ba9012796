package idempotencytest_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envNilBackendChild makes TestRunStoreTestsNilBackendChild run, in the
// test binary TestRunStoreTestsNamesANilBackendField starts.
const envNilBackendChild = "IDEMPOTENCYTEST_TEST_NIL_BACKEND_CHILD"

// TestRunStoreTestsNamesANilBackendField: a StoreBackend whose Waiting
// (or Store, Add, Get) is nil fails the suite's cases with a message that
// names the field. The suite called the nil func instead, and the panic of
// one parallel case killed the test binary with a nil pointer dereference
// deep in the suite, every other case unreported.
func TestRunStoreTestsNamesANilBackendField(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunStoreTestsNilBackendChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envNilBackendChild+"=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.NotContains(t, string(out), "panic:", "%s", out)
	require.Contains(t, string(out), "StoreBackend.Waiting is nil", "%s", out)
}

func TestRunStoreTestsNilBackendChild(t *testing.T) {
	if os.Getenv(envNilBackendChild) != "1" {
		t.Skip("run by TestRunStoreTestsNamesANilBackendField")
	}
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := idempotency.NewMemoryStore()
		return idempotencytest.StoreBackend{
			Store: s,
			Add: func(ctx context.Context, tx idempotency.Tx, name string, delta int) error {
				return nil
			},
			Get: func(testing.TB, string) int { return 0 },
			// Waiting left out.
		}
	})
}
