package idempotencytest_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envGetFails makes TestConformanceGetFails run, in the child test binary
// TestConformanceGetOnTestGoroutine starts.
const envGetFails = "IDEMPOTENCYTEST_TEST_GET_FAILS"

// getCannotRead is what the backend's Get fails the test with.
const getCannotRead = "the backend cannot read its counters"

// TestConformanceGetFails runs the suite on a correct memory store whose
// backend's Get fails the test through its t, as a backend does when its
// query fails (require.NoError(t, err)).
func TestConformanceGetFails(t *testing.T) {
	if os.Getenv(envGetFails) != "1" {
		t.Skip("run by TestConformanceGetOnTestGoroutine in a child test binary")
	}
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := &waitCountingStore{MemoryStore: idempotency.NewMemoryStore()}
		c := &memCounters{m: map[string]int{}}
		return idempotencytest.StoreBackend{
			Store: s,
			Add:   c.add,
			Get: func(t testing.TB, _ string) int {
				t.Fatal(getCannotRead)
				return 0
			},
			Waiting: func(testing.TB) int { return int(s.waiting.Load()) },
		}
	})
}

// waitCountingStore counts, as waiting, the runs that have not reached
// their apply and the Guards that have not returned: enough for the cases
// run here, where only one run at a time can wait.
type waitCountingStore struct {
	*idempotency.MemoryStore
	waiting atomic.Int64
}

func (s *waitCountingStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	s.waiting.Add(1)
	entered := false
	defer func() {
		if !entered {
			s.waiting.Add(-1)
		}
	}()
	if apply == nil {
		return s.MemoryStore.Run(ctx, c, nil)
	}
	return s.MemoryStore.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
		if !entered {
			entered = true
			s.waiting.Add(-1)
		}
		return apply(ctx, countingTx{Tx: tx, waiting: &s.waiting})
	})
}

type countingTx struct {
	idempotency.Tx
	waiting *atomic.Int64
}

func (tx countingTx) Guard(ctx context.Context, scope, key string) (bool, error) {
	tx.waiting.Add(1)
	defer tx.waiting.Add(-1)
	return tx.Tx.Guard(ctx, scope, key)
}

// TestConformanceGetOnTestGoroutine: StoreBackend.Get gets the case's t,
// and a backend fails the case with it when it cannot read (the project's
// own backends do: require.NoError(t, err)). WaiterSeesHolderAfterCommitWrites
// and CopySeesHolderAfterCommitWrites called it on the waiting run's
// goroutine, where t.Fatalf may not be called: it ended that goroutine
// only, the run never reported, and the case failed 15 s later saying a
// run "was left waiting". Get must be called on the case's goroutine.
func TestConformanceGetOnTestGoroutine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	cases := []string{"WaiterSeesHolderAfterCommitWrites", "CopySeesHolderAfterCommitWrites"}
	out, err := runChild(envGetFails+"=1", "^TestConformanceGetFails$/^("+cases[0]+"|"+cases[1]+")$")
	require.Error(t, err, "%s", out)
	for _, c := range cases {
		require.Contains(t, string(out), "--- FAIL: TestConformanceGetFails/"+c+" ", "%s", out)
	}
	require.Contains(t, string(out), getCannotRead)
	require.NotContains(t, string(out), "did not finish within", "Get's failure did not end the case:\n%s", out)
}
