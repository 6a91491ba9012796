package idempotencytest_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envWaitingFails makes TestConformanceWaitingFails run, in the child test
// binary TestConformanceWaitingOnTestGoroutine starts.
const envWaitingFails = "IDEMPOTENCYTEST_TEST_WAITING_FAILS"

// waitingCannotCount is what the backend's Waiting fails the test with.
const waitingCannotCount = "the backend cannot count its waiting runs"

// TestConformanceWaitingFails runs the suite on a correct memory store
// whose backend's Waiting fails the test through its t, as a backend does
// when its query fails (require.NoError(t, err)).
func TestConformanceWaitingFails(t *testing.T) {
	if os.Getenv(envWaitingFails) != "1" {
		t.Skip("run by TestConformanceWaitingOnTestGoroutine in a child test binary")
	}
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := idempotency.NewMemoryStore()
		c := &memCounters{m: map[string]int{}}
		return idempotencytest.StoreBackend{
			Store: s,
			Add:   c.add,
			Get:   c.get,
			Waiting: func(t testing.TB) int {
				t.Fatal(waitingCannotCount)
				return 0
			},
		}
	})
}

// TestConformanceWaitingOnTestGoroutine: StoreBackend.Waiting gets the
// case's t, and a backend fails the case with it when it cannot count
// (the project's own backends do: require.NoError(t, err)). The suite
// called it through require.Eventually, on a goroutine of its own, where
// t.Fatalf may not be called: it ended that goroutine only, and the case
// went on polling for 10 s before it failed with "Condition never
// satisfied". Waiting must be called on the case's goroutine, so that its
// failure ends the case.
func TestConformanceWaitingOnTestGoroutine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	out, err := runChild(envWaitingFails+"=1", "^TestConformanceWaitingFails$/^(WaitersSeeCommit|WaiterContextCancelled|GuardWaitsForHolderCommit)$")
	require.Error(t, err, "%s", out)
	for _, c := range []string{"WaitersSeeCommit", "WaiterContextCancelled", "GuardWaitsForHolderCommit"} {
		require.Contains(t, string(out), "--- FAIL: TestConformanceWaitingFails/"+c+" ", "%s", out)
	}
	require.Contains(t, string(out), waitingCannotCount)
	require.NotContains(t, string(out), "Condition never satisfied", "Waiting's failure did not end the case")
}
