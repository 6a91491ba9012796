package idempotencytest_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// envForeignStore makes TestConformanceOnForeignStore run, in the child
// test binary TestConformanceForeignStore starts.
const envForeignStore = "IDEMPOTENCYTEST_TEST_FOREIGN_STORE"

// foreignStore is a correct Store written outside package idempotency, as
// RunStoreTests invites: it keeps its claims in a MemoryStore, but neither
// it nor its Tx is the package's own, so NewInbox refuses it and its Tx
// cannot keep CheckOrder's or OnCurrent's records.
type foreignStore struct{ s *idempotency.MemoryStore }

func (f foreignStore) Run(ctx context.Context, c idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	if apply == nil {
		return f.s.Run(ctx, c, nil)
	}
	return f.s.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error { return apply(ctx, foreignTx{tx}) })
}

func (f foreignStore) Ping(ctx context.Context) error { return f.s.Ping(ctx) }

func (f foreignStore) ListEvents(ctx context.Context, filter idempotency.EventFilter) ([]idempotency.EventRecord, error) {
	return f.s.ListEvents(ctx, filter)
}

func (f foreignStore) LookupEvent(ctx context.Context, id string) (idempotency.EventRecord, bool, error) {
	return f.s.LookupEvent(ctx, id)
}

func (f foreignStore) LookupGuard(ctx context.Context, scope, key string) (idempotency.GuardRecord, bool, error) {
	return f.s.LookupGuard(ctx, scope, key)
}

type foreignTx struct{ tx idempotency.Tx }

func (x foreignTx) Guard(ctx context.Context, scope, key string) (bool, error) {
	return x.tx.Guard(ctx, scope, key)
}
func (x foreignTx) AfterCommit(fn func(context.Context)) { x.tx.AfterCommit(fn) }
func (x foreignTx) EventID() string                      { return x.tx.EventID() }
func (x foreignTx) EventType() string                    { return x.tx.EventType() }

// TestConformanceOnForeignStore runs the suite on foreignStore when
// envForeignStore is "1", and on a wrapper of a MemoryStore that does not
// declare NoInbox when it is envNoInboxUndeclared.
func TestConformanceOnForeignStore(t *testing.T) {
	which := os.Getenv(envForeignStore)
	if which != "1" && which != envNoInboxUndeclared {
		t.Skip("run by TestConformanceForeignStore and TestConformanceNoInboxHint in a child test binary")
	}
	idempotencytest.RunStoreTests(t, func(t *testing.T) idempotencytest.StoreBackend {
		s := idempotency.NewMemoryStore()
		c := &memCounters{m: map[string]int{}}
		if which == envNoInboxUndeclared {
			return idempotencytest.StoreBackend{Store: wrapper{s}, Add: c.add, Get: c.get, Waiting: idempotencytest.Waiting(s)}
		}
		return idempotencytest.StoreBackend{
			Store: foreignStore{s},
			Add:   c.add,
			Get:   c.get,
			// The cases run here never wait for another run; a memory
			// store outside package idempotency cannot count its waiters.
			Waiting: func(testing.TB) int { return 0 },
			NoInbox: true,
		}
	})
}

// TestConformanceForeignStore: RunStoreTests is documented as how another
// implementation of Store proves it can replace MemoryStore and PgxStore,
// with NoInbox skipping what such a store cannot do. The CheckOrder and
// OnCurrent cases need the package's own Tx (ErrNeedsStoreTx otherwise),
// which no store outside the package can give, so they failed on every
// such store, however correct.
func TestConformanceForeignStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	out, err := runChild(envForeignStore+"=1", "^TestConformanceOnForeignStore$/^(CheckOrder|Current)")
	require.Contains(t, string(out), "=== RUN   TestConformanceOnForeignStore/CheckOrderAnswers", "the cases ran")
	require.False(t, strings.Contains(string(out), "--- FAIL"), "a correct store from outside the package fails the suite:\n%s", out)
	require.NoError(t, err, "%s", out)
}

// envNoInboxUndeclared, as envForeignStore's value, makes
// TestConformanceOnForeignStore run the suite on a wrapper of a
// MemoryStore without StoreBackend.NoInbox.
const envNoInboxUndeclared = "no-inbox-undeclared"

// TestConformanceNoInboxHint: a store NewInbox refuses, run without
// StoreBackend.NoInbox, fails the inbox cases, as documented; each failure
// said only that the store "does not support the inbox", and not that
// the suite has a field for it. Each now says to set NoInbox.
func TestConformanceNoInboxHint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	t.Parallel()
	out, err := runChild(envForeignStore+"="+envNoInboxUndeclared, "^TestConformanceOnForeignStore$/^(InboxIngestQueuesOnce|TaskStatsListLookup|TaskStatsWhileRunning|CurrentInboxStormFetchesOnce)$")
	require.Error(t, err, "the inbox cases fail")
	fails := strings.Count(string(out), "--- FAIL: TestConformanceOnForeignStore/")
	require.Equal(t, 4, fails, "%s", out)
	require.Equal(t, fails, strings.Count(string(out), "StoreBackend.NoInbox"), "every failure names NoInbox:\n%s", out)
}
