package idempotencytest_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envBrokenStore names, in a child test binary, the broken store that
// TestConformanceOnBrokenStore runs the conformance suite on.
const envBrokenStore = "IDEMPOTENCYTEST_TEST_BROKEN_STORE"

// brokenStores are memory stores that each break one guarantee of the
// Store contract, by name.
var brokenStores = map[string]func(*idempotency.MemoryStore) idempotencytest.LookupStore{
	"after-commit-request-context": func(s *idempotency.MemoryStore) idempotencytest.LookupStore {
		return afterCommitRequestContextStore{s}
	},
}

// TestConformanceOnBrokenStore runs the suite on the broken store named by
// envBrokenStore; requireSuiteCatches runs it in a child test binary.
func TestConformanceOnBrokenStore(t *testing.T) {
	wrap := brokenStores[os.Getenv(envBrokenStore)]
	if wrap == nil {
		t.Skip("run by requireSuiteCatches in a child test binary")
	}
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := idempotency.NewMemoryStore()
		c := &memCounters{m: map[string]int{}}
		return idempotencytest.StoreBackend{
			Store: wrap(s),
			Add:   c.add,
			Get:   c.get,
			// The cases run here never wait for another run; a memory
			// store outside package idempotency cannot count its waiters.
			Waiting: func(testing.TB) int { return 0 },
		}
	})
}

// requireSuiteCatches runs the conformance case named testCase on the
// broken store named store, in a child test binary, and requires the case
// to fail.
func requireSuiteCatches(t *testing.T, store, testCase string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	out, err := runChild(envBrokenStore+"="+store, "^TestConformanceOnBrokenStore$/^"+testCase+"$")
	require.Contains(t, string(out), "=== RUN   TestConformanceOnBrokenStore/"+testCase, "the case ran")
	require.Error(t, err, "the conformance suite passes on a store that breaks its contract:\n%s", out)
	require.True(t, strings.Contains(string(out), "--- FAIL: TestConformanceOnBrokenStore/"+testCase), "%s", out)
}

// memCounters is the memory store's business table: writes apply on
// commit, through AfterCommit.
type memCounters struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *memCounters) add(_ context.Context, tx idempotency.Tx, name string, delta int) error {
	tx.AfterCommit(func(context.Context) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.m[name] += delta
	})
	return nil
}

func (c *memCounters) get(_ testing.TB, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name]
}

// afterCommitRequestContextStore breaks Tx.AfterCommit's promise of "a
// context that is not cancelled with the request": it hands the AfterCommit
// funcs the context Run was called with.
type afterCommitRequestContextStore struct{ *idempotency.MemoryStore }

func (s afterCommitRequestContextStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	if apply == nil {
		return s.MemoryStore.Run(ctx, c, nil)
	}
	return s.MemoryStore.Run(ctx, c, func(hctx context.Context, tx idempotency.Tx) error {
		return apply(hctx, requestContextTx{Tx: tx, request: ctx})
	})
}

type requestContextTx struct {
	idempotency.Tx
	request context.Context
}

func (tx requestContextTx) AfterCommit(fn func(context.Context)) {
	tx.Tx.AfterCommit(func(context.Context) { fn(tx.request) })
}

// TestConformanceAfterCommitRequestContext: AfterCommitOnlyOnCommit checks
// that an AfterCommit func's context is not cancelled, but the request's
// context was never cancelled before the funcs ran, so a store that passes
// them the request's context passed the case.
func TestConformanceAfterCommitRequestContext(t *testing.T) {
	t.Parallel()
	requireSuiteCatches(t, "after-commit-request-context", "AfterCommitOnlyOnCommit")
}
