package idempotencytest_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envHolderLeft makes TestConformanceCaseFailsWhileHolding run, in the
// child test binary TestConformanceFailedCaseLeavesNoRunHolding starts.
const envHolderLeft = "IDEMPOTENCYTEST_TEST_HOLDER_LEFT"

// leftRunning is what the child says of a case that ended with a run of
// its store still running.
const leftRunning = "still running after the case ended"

// runningStore is a MemoryStore that knows how many of its Runs are
// running, and says so when its case has ended.
type runningStore struct {
	*idempotency.MemoryStore

	mu      sync.Mutex
	running int
	idle    chan struct{} // closed when running drops to 0
}

func (s *runningStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	s.mu.Lock()
	if s.running == 0 {
		s.idle = make(chan struct{})
	}
	s.running++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.running--; s.running == 0 {
			close(s.idle)
		}
		s.mu.Unlock()
	}()
	return s.MemoryStore.Run(ctx, c, apply)
}

// checkIdle fails t when a Run is still running 30 seconds after the
// case ended (a run released then returns in far less, on a loaded
// machine too): one that holds its transaction (on PostgreSQL a
// connection of the pool, which a cleanup closing the pool waits for).
func (s *runningStore) checkIdle(t *testing.T) {
	s.mu.Lock()
	running, idle := s.running, s.idle
	s.mu.Unlock()
	if running == 0 {
		return
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Errorf("%d run(s) of the store %s", s.running, leftRunning)
	}
}

// TestConformanceCaseFailsWhileHolding runs the suite on a correct
// memory store whose backend's Waiting fails the case, as a store whose
// runs do not wait, or a backend that cannot count them, does: every
// case that holds a claim or a guard for others to wait on fails while
// it holds it.
func TestConformanceCaseFailsWhileHolding(t *testing.T) {
	if os.Getenv(envHolderLeft) != "1" {
		t.Skip("run by TestConformanceFailedCaseLeavesNoRunHolding in a child test binary")
	}
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := &runningStore{MemoryStore: idempotency.NewMemoryStore()}
		// Registered before the case's own cleanups: it runs after them.
		t.Cleanup(func() { s.checkIdle(t) })
		c := &memCounters{m: map[string]int{}}
		return idempotencytest.StoreBackend{
			Store: s,
			Add:   c.add,
			Get:   c.get,
			Waiting: func(t testing.TB) int {
				t.Fatal("the backend cannot count its waiting runs")
				return 0
			},
		}
	})
}

// TestConformanceFailedCaseLeavesNoRunHolding: a case that fails while
// a run it started holds a claim or a guard (for copies to wait on)
// releases that run as it ends. It was left blocked for good, its
// transaction open: on PostgreSQL with a connection of the pool, which
// the backend's cleanup closing the pool waited for (pgxpool's Close
// waits for every connection to be released), so that one failed case
// hung the test binary until -timeout, or, with idempotencytest's
// Database, failed 30 seconds later with a second, misleading error, a
// connection "left in use" by the test.
func TestConformanceFailedCaseLeavesNoRunHolding(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	// The cases that hold a run for others to wait on, and fail on
	// Waiting while they hold it.
	cases := []string{
		"WaitersSeeCommit", "WaiterRunsAfterFailure", "WaitersSeeSkip", "WaiterContextCancelled",
		"GuardWaitCancelledAbortsTx", "GuardWaitsForHolderCommit", "GuardWaitsForHolderRollback",
		"EarlyGuardWaitsForHolderCommit", "EarlyGuardWaitsForHolderRollback",
		"WaiterSeesHolderAfterCommitWrites", "CopySeesHolderAfterCommitWrites", "TxOneStatementAtATime",
		"TaskEnqueueWaitsForHolderCommit", "TaskEnqueueWaitsForHolderRollback",
		"CheckOrderWaitsForHolderCommit", "CheckOrderWaitsForHolderRollback",
		"AfterCommitHookPanicsReleasesKeys", "WaitEndedByContextIsItsError",
	}
	out, err := runChild(envHolderLeft+"=1", "^TestConformanceCaseFailsWhileHolding$/^("+strings.Join(cases, "|")+")$")
	require.Error(t, err, "%s", out)
	for _, c := range cases {
		require.Contains(t, string(out), "--- FAIL: TestConformanceCaseFailsWhileHolding/"+c+" ", "%s", out)
	}
	left := regexp.MustCompile(`(?m)^.*`+leftRunning+`.*$`).FindAllString(string(out), -1)
	require.Empty(t, left, "cases that left a run holding:\n%s", out)
}
