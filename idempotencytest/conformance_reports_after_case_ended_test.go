package idempotencytest_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envHangingStore makes TestConformanceOnHangingStore run, in the child
// test binary TestConformanceReportsAfterCaseEnded starts.
const envHangingStore = "IDEMPOTENCYTEST_TEST_HANGING_STORE"

// hangingCopiesStore fails the suite: every Run of an event id after the
// first hangs, whatever its context, until release is closed, and then
// fails. Its waits are not counted in Waiting either.
type hangingCopiesStore struct {
	*idempotency.MemoryStore
	release <-chan struct{}
	hung    *sync.WaitGroup

	mu   sync.Mutex
	seen map[string]bool
}

func (s *hangingCopiesStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	s.mu.Lock()
	again := s.seen[c.EventID]
	s.seen[c.EventID] = true
	if again {
		s.hung.Add(1)
	}
	s.mu.Unlock()
	if !again {
		return s.MemoryStore.Run(ctx, c, apply)
	}
	defer s.hung.Done()
	<-s.release
	return idempotency.OutcomeFailed, context.Canceled
}

// caseGoroutines counts the goroutines that the cases run here start.
func caseGoroutines() int {
	buf := make([]byte, 1<<22)
	stacks := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "idempotencytest.startWaiters.func") || strings.Contains(g, "idempotencytest.testConcurrentDuplicates.func") {
			n++
		}
	}
	return n
}

func TestConformanceOnHangingStore(t *testing.T) {
	if os.Getenv(envHangingStore) != "1" {
		t.Skip("run by TestConformanceReportsAfterCaseEnded in a child test binary")
	}
	release := make(chan struct{})
	var hung sync.WaitGroup
	// After every case has ended, the hung runs return. The cases'
	// goroutines that ran them must end without a word to their case's t:
	// a call to it now panics the test binary.
	t.Cleanup(func() {
		close(release)
		hung.Wait()
		deadline := time.Now().Add(time.Minute)
		for caseGoroutines() > 0 {
			if time.Now().After(deadline) {
				t.Errorf("the cases' goroutines did not end")
				return
			}
			runtime.Gosched()
		}
	})
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := idempotency.NewMemoryStore()
		c := &memCounters{m: map[string]int{}}
		return idempotencytest.StoreBackend{
			Store:   &hangingCopiesStore{MemoryStore: s, release: release, hung: &hung, seen: map[string]bool{}},
			Add:     c.add,
			Get:     c.get,
			Waiting: func(testing.TB) int { return 0 },
		}
	})
}

// TestConformanceReportsAfterCaseEnded: on a store whose copies of an
// event hang, WaitersSeeCommit and ConcurrentDuplicates fail when their
// bounded waits run out, but the goroutines they started reported to the
// case's t when the runs returned later: "Fail in goroutine after ... has
// completed" panicked the test binary, and the rest of the suite never
// ran. A store that fails a case must get a clean failure.
func TestConformanceReportsAfterCaseEnded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again, and waits out the suite's bounded waits")
	}
	t.Parallel()
	out, err := runChild(envHangingStore+"=1", "^TestConformanceOnHangingStore$/^(WaitersSeeCommit|ConcurrentDuplicates)$")
	require.Error(t, err, "the cases pass on a store whose copies hang:\n%s", out)
	require.NotContains(t, string(out), "panic:", "a case's goroutine called t after the case ended")
	for _, c := range []string{"WaitersSeeCommit", "ConcurrentDuplicates"} {
		require.Contains(t, string(out), "--- FAIL: TestConformanceOnHangingStore/"+c+" ", "%s", out)
	}
	require.Contains(t, string(out), "--- FAIL: TestConformanceOnHangingStore ", "the run ends cleanly: %s", out)
}
