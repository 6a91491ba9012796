package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// LookupStore is what the store conformance suite needs of a store: the
// contract, and a way to read what it committed. MemoryStore and PgxStore
// are LookupStores.
type LookupStore interface {
	idempotency.Store

	// ListEvents returns the committed claims that the filter selects,
	// newest first.
	ListEvents(ctx context.Context, f idempotency.EventFilter) ([]idempotency.EventRecord, error)

	// LookupEvent returns the ledger record of the event id's committed
	// claim (whatever its outcome), and false if it has none. An id no
	// claim can have (empty, a NUL byte, invalid UTF-8, over 1024 bytes)
	// may be refused with idempotency.ErrInvalidKey, as MemoryStore and
	// PgxStore refuse it, or answered false: the suite takes either.
	LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)

	// LookupGuard returns the committed claim of the natural key
	// (scope, key), and false if it has none; a scope or key no claim can
	// have, as LookupEvent's id.
	LookupGuard(ctx context.Context, scope, key string) (idempotency.GuardRecord, bool, error)
}

// StoreBackend is one store under test, isolated from every other, with a
// business table of named counters that handlers write in the store's
// transaction: what the suite checks commits and rolls back with the claim.
type StoreBackend struct {
	// Store is the store under test. It must share no ledger, guard or
	// counter with the store of another StoreBackend.
	Store LookupStore

	// Add adds delta to the counter name inside tx, as a handler's business
	// write: it must become visible to Get when, and only when, tx commits.
	// A store on a database writes a row in the store's transaction
	// (PgxStore: through idempotency.PgxTx); a store without one applies
	// the write in tx.AfterCommit, as a test fake does.
	Add func(ctx context.Context, tx idempotency.Tx, name string, delta int) error

	// Get returns the committed value of the counter name, 0 if it was never
	// written.
	Get func(t testing.TB, name string) int

	// Waiting returns how many runs of Store are blocked, at this moment, on
	// an event claim or a guard held by another run's transaction. The suite
	// polls it to know that a copy has reached the wait it tests. A Store
	// that wraps a MemoryStore or a PgxStore (a metrics or logging
	// decorator) sets it to [Waiting] of the store it wraps.
	Waiting func(t testing.TB) int

	// NoInbox declares a store that idempotency.NewInbox refuses, as
	// every store outside package idempotency is: the cases of the inbox,
	// of tasks and of inbox mode are skipped for it, and so are those of
	// CheckOrder and OnCurrent when its Tx is not the package's own (they
	// fail with idempotency.ErrNeedsStoreTx on any other). Without it, a
	// store NewInbox refuses fails those cases.
	NoInbox bool
}

// RunStoreTests runs the store conformance suite: every guarantee of the
// idempotency.Store contract (claim and business writes commit or roll back
// together, concurrent copies wait and run once, guards, skips, after-commit
// funcs, actions, deadlocks, bad input, the synchronous Handler's answers
// on the store), the inbox's, the tasks', the current-state handlers', and
// retention's and Forget's on a store that is a [RetentionStore], as
// parallel subtests of t. It is how MemoryStore and PgxStore prove they
// behave alike, and how another
// implementation of idempotency.Store proves it can replace them.
//
// newBackend is called once per subtest, with the subtest's t, and returns a
// fresh StoreBackend; register its cleanup with t.Cleanup. A StoreBackend
// with a nil Store, Add, Get or Waiting fails every case, naming the field.
func RunStoreTests(t *testing.T, newBackend func(t *testing.T) StoreBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b StoreBackend)
	}{
		{"PingAnswers", testPing},
		{"ProcessedCommitsClaimAndWrites", testProcessed},
		{"DuplicateRunsNothing", testDuplicate},
		{"ErrorRollsBackClaimAndWrites", testErrorRollsBack},
		{"PanicRollsBack", testPanicRollsBack},
		{"TimeoutRollsBack", testTimeoutRollsBack},
		{"SkipKeepsClaimDropsWrites", testSkip},
		{"AfterCommitOnlyOnCommit", testAfterCommit},
		{"AfterCommitRedeliversSameEvent", testAfterCommitRedelivers},
		{"CopyDuringAfterCommitIsDuplicate", testCopyDuringAfterCommit},
		{"AfterCommitHookPanicsReleasesKeys", testAfterCommitHookPanics},
		{"GuardFirstOnce", func(t *testing.T, b StoreBackend) { testGuardFirstOnce(t, b, false) }},
		{"GuardRollsBack", testGuardRollsBack},
		{"GuardAcrossEventsCreditsOnce", testGuardAcrossEvents},
		{"ConcurrentDuplicates", testConcurrentDuplicates},
		{"WaitersSeeCommit", testWaitersSeeCommit},
		{"WaiterRunsAfterFailure", testWaiterRunsAfterFailure},
		{"WaiterContextCancelled", testWaiterCancelled},
		{"GuardWaitCancelledAbortsTx", testGuardWaitCancelledAbortsTx},
		{"WaitEndedByContextIsItsError", testWaitEndedByContext},
		{"WaitersSeeSkip", testWaitersSeeSkip},
		{"GuardWaitsForHolderCommit", func(t *testing.T, b StoreBackend) { testGuardWaits(t, b, nil, false) }},
		{"GuardWaitsForHolderRollback", func(t *testing.T, b StoreBackend) { testGuardWaits(t, b, errHandler, false) }},
		{"EarlyGuardWaitsForHolderCommit", func(t *testing.T, b StoreBackend) { testGuardWaits(t, b, nil, true) }},
		{"EarlyGuardWaitsForHolderRollback", func(t *testing.T, b StoreBackend) { testGuardWaits(t, b, errHandler, true) }},
		{"EarlyGuardFirstOnce", func(t *testing.T, b StoreBackend) { testGuardFirstOnce(t, b, true) }},
		{"EarlyGuardUnaskedIsReleased", testEarlyGuardUnasked},
		{"EarlyGuardSkipRollsBack", testEarlyGuardSkip},
		{"EarlyGuardAcrossEventsCreditsOnce", testEarlyGuardAcrossEvents},
		{"ActionOncePerKeyAcrossOwners", testActionOnce},
		{"ActionNotOwner", testActionNotOwner},
		{"DeadlockRetried", func(t *testing.T, b StoreBackend) { testDeadlockRetried(t, b, 2, guardKeys(b)) }},
		{"DeadlockOfThreeRetried", func(t *testing.T, b StoreBackend) { testDeadlockRetried(t, b, 3, guardKeys(b)) }},
		{"NilApplyRecordsClaim", testNilApply},
		{"TxUnusableAfterRun", testTxDone},
		{"BadInput", testBadInput},
		{"TimesOutOfRangeRefusedAlike", testTimesOutOfRangeRefusedAlike},
		{"TextNoStoreKeeps", testTextNoStoreKeeps},
		{"LongKeysRefusedAlike", testLongKeys},
		{"TxOneStatementAtATime", testTxOneStatementAtATime},
		{"HandlerLeavesAStatementRunning", testHandlerLeavesStatementRunning},
		{"ReceivedAtZeroIsTheClaim", testReceivedAtZeroIsTheClaim},
		{"CancelledContextRunsNothing", testCancelledContextRunsNothing},
		{"EarlyGuardOtherKeyIsGuardedApart", testEarlyGuardOtherKey},
		{"EarlyGuardOtherScopeIsGuardedApart", testEarlyGuardOtherScope},
		{"WaiterSeesHolderAfterCommitWrites", func(t *testing.T, b StoreBackend) { testWaiterSeesAfterCommitWrites(t, b, false) }},
		{"CopySeesHolderAfterCommitWrites", func(t *testing.T, b StoreBackend) { testWaiterSeesAfterCommitWrites(t, b, true) }},
		{"ListEvents", testListEvents},
		{"ListEventsRefusesBadFilters", testListEventsBadFilter},
		{"HandlerAnswersAndFailuresWriteNothing", testHandlerAnswers},
		{"HandlerLedgerRowHoldsTheEvent", testHandlerLedgerRow},
	}
	tests = append(tests, inboxTests...)
	tests = append(tests, taskTests...)
	tests = append(tests, retentionTests...)
	for _, tt := range currentTests {
		fn := tt.fn
		tests = append(tests, struct {
			name string
			fn   func(t *testing.T, b StoreBackend)
		}{tt.name, func(t *testing.T, b StoreBackend) {
			skipWithoutStoreTx(t, b)
			fn(t, b)
		}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			if field := b.nilField(); field != "" {
				t.Fatalf("idempotencytest: RunStoreTests: StoreBackend.%s is nil; every field but NoInbox is required", field)
			}
			tt.fn(t, b)
		})
	}
}

// nilField names the first required field of b that is nil, or is "".
func (b StoreBackend) nilField() string {
	switch {
	case b.Store == nil || reflect.ValueOf(b.Store).Kind() == reflect.Pointer && reflect.ValueOf(b.Store).IsNil():
		return "Store"
	case b.Add == nil:
		return "Add"
	case b.Get == nil:
		return "Get"
	case b.Waiting == nil:
		return "Waiting"
	}
	return ""
}

var errHandler = errors.New("handler failed")

// errProbed ends skipWithoutStoreTx's probe, rolled back.
var errProbed = errors.New("idempotencytest: probe of the store's Tx")

// skipWithoutStoreTx skips the test on a NoInbox store whose Tx cannot
// keep CheckOrder's and OnCurrent's records (idempotency.ErrNeedsStoreTx):
// only the Tx of MemoryStore and PgxStore can, so no store outside package
// idempotency can give them. It probes in a transaction it rolls back.
func skipWithoutStoreTx(t *testing.T, b StoreBackend) {
	t.Helper()
	if !b.NoInbox {
		return
	}
	var needs error
	_, err := b.Store.Run(ctxT(t), claim("evt_probe_store_tx"), func(ctx context.Context, tx idempotency.Tx) error {
		_, needs = idempotency.CheckOrder(ctx, tx, "idempotencytest-probe", "probe", time.Unix(1756742400, 0))
		return errProbed
	})
	require.ErrorIs(t, err, errProbed, "the probe of the store's Tx")
	if errors.Is(needs, idempotency.ErrNeedsStoreTx) {
		t.Skipf("%T's Tx is not MemoryStore's or PgxStore's: CheckOrder and OnCurrent need it (%v)", b.Store, needs)
	}
}

func claim(id string) idempotency.Claim {
	return idempotency.Claim{EventID: id, EventType: "invoice.paid", ObjectID: "in_" + id, Account: "acct_1", Livemode: false}
}

// waitLimit bounds the suite's waits for another run: a store that leaves a
// run asleep (a waiter never woken after a rollback, a deadlock never
// detected) fails the test in seconds with a message saying which wait,
// not at the go test timeout. A correct store ends each of them in well
// under a second, PostgreSQL's deadlock timeout (1 s by default) included.
const waitLimit = 15 * time.Second

// receive returns the next value from ch, or fails the test once waitLimit
// has passed; what names the run that should have sent it.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s did not finish within %s: a run was left waiting", what, waitLimit)
		panic("unreachable")
	}
}

// waitWithin waits for wg up to waitLimit and reports whether it is done;
// for goroutines other than the test's, which cannot fail it.
func waitWithin(wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(waitLimit):
		return false
	}
}

// noInboxHint follows NewInbox's refusal of a store the StoreBackend did
// not declare without the inbox.
const noInboxHint = "a store that idempotency.NewInbox refuses sets StoreBackend.NoInbox"

// newInbox returns an Inbox on b's store: a store that NewInbox refuses
// skips the case when b declares NoInbox, and fails it otherwise, saying
// so.
func newInbox(t *testing.T, b StoreBackend, hs *idempotency.Handlers, cfg idempotency.InboxConfig) *idempotency.Inbox {
	t.Helper()
	in, err := idempotency.NewInbox(b.Store, hs, cfg)
	if err != nil && b.NoInbox {
		t.Skip(err)
	}
	require.NoError(t, err, noInboxHint)
	return in
}

// waitingReaches polls b.Waiting until it reports n, and fails the test
// once within has passed. It polls on the test's goroutine: Waiting gets
// t and may fail the test with it, which no other goroutine may do.
func waitingReaches(t *testing.T, b StoreBackend, n int, within time.Duration, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for got := b.Waiting(t); got != n; got = b.Waiting(t) {
		if time.Now().After(deadline) {
			require.Fail(t, fmt.Sprintf("Waiting reported %d runs waiting for %s, not %d", got, within, n), msgAndArgs...)
		}
		<-tick.C
	}
}

// waitAll waits for wg like receive waits for a value.
func waitAll(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	receive(t, done, what)
}

// releaser returns a channel for a run to block on, and the func that
// closes it, once, which t calls as the case ends: a case that fails
// while a run it started holds a claim or a guard for others to wait on
// releases that run, rather than leave it blocked with its transaction
// open (on PostgreSQL, a connection of the pool, which a cleanup closing
// the pool waits for).
func releaser(t *testing.T) (release func(), released <-chan struct{}) {
	ch := make(chan struct{})
	release = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(release)
	return release, ch
}

// clockSkew is how far the store's clock (the database's) may be from the
// process's.
const clockSkew = 5 * time.Second

// requireDuring requires at, a time the store gave, to fall between
// started, read on the process's clock before the run that gave it began,
// and now, within clockSkew: a time of that run, however long its
// statements took on a loaded machine.
func requireDuring(t *testing.T, at, started time.Time, what string) {
	t.Helper()
	require.WithinRange(t, at, started.Add(-clockSkew), time.Now().Add(clockSkew), "%s, on the store's clock", what)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func addOne(b StoreBackend, counter string) idempotency.ApplyFunc {
	return func(ctx context.Context, tx idempotency.Tx) error { return b.Add(ctx, tx, counter, 1) }
}

func requireEvent(t *testing.T, b StoreBackend, id string, want idempotency.Outcome) idempotency.EventRecord {
	t.Helper()
	rec, ok, err := b.Store.LookupEvent(ctxT(t), id)
	require.NoError(t, err)
	require.True(t, ok, "event %s should be in the ledger", id)
	require.Equal(t, want, rec.Outcome)
	return rec
}

// requireNoEvent requires the ledger not to hold id. An id no claim can
// have may be refused (ErrInvalidKey), as the package's stores refuse it.
func requireNoEvent(t *testing.T, b StoreBackend, id string) {
	t.Helper()
	_, ok, err := b.Store.LookupEvent(ctxT(t), id)
	if errors.Is(err, idempotency.ErrInvalidKey) {
		return
	}
	require.NoError(t, err)
	require.False(t, ok, "event %s should not be in the ledger", id)
}

func requireGuard(t *testing.T, b StoreBackend, scope, key string, want bool) {
	t.Helper()
	_, ok, err := b.Store.LookupGuard(ctxT(t), scope, key)
	require.NoError(t, err)
	require.Equal(t, want, ok, "guard %s/%s claimed", scope, key)
}

// testPing: a store that answers says so to Ping, its health check.
func testPing(t *testing.T, b StoreBackend) {
	require.NoError(t, b.Store.Ping(ctxT(t)))
}

func testProcessed(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	before := time.Now().Add(-time.Second)
	c := claim("evt_processed")
	c.Account, c.Livemode = "acct_connected", true
	// When the delivery arrived, as the inbox and a Handler's Config.Now
	// pass it: an hour ago, to the microsecond PostgreSQL keeps.
	c.ReceivedAt = before.Add(-time.Hour).Truncate(time.Microsecond)
	var sawID, sawType string
	started := time.Now()
	out, err := b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
		sawID, sawType = tx.EventID(), tx.EventType()
		return b.Add(ctx, tx, "credits", 100)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, "evt_processed", sawID)
	require.Equal(t, "invoice.paid", sawType)
	require.Equal(t, 100, b.Get(t, "credits"))
	rec := requireEvent(t, b, "evt_processed", idempotency.OutcomeProcessed)
	require.Equal(t, "invoice.paid", rec.EventType)
	require.Equal(t, "in_evt_processed", rec.ObjectID)
	require.Equal(t, "acct_connected", rec.Account)
	require.True(t, rec.Livemode)
	require.Empty(t, rec.SkipReason)
	require.True(t, rec.ReceivedAt.Equal(c.ReceivedAt), "received at %s, want Claim.ReceivedAt %s", rec.ReceivedAt, c.ReceivedAt)
	requireDuring(t, rec.ProcessedAt, started, "ProcessedAt")
}

func testDuplicate(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	out, err := b.Store.Run(ctx, claim("evt_dup"), addOne(b, "c"))
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	for range 3 {
		out, err = b.Store.Run(ctx, claim("evt_dup"), func(context.Context, idempotency.Tx) error {
			t.Error("apply ran for a duplicate")
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeDuplicate, out)
	}
	require.Equal(t, 1, b.Get(t, "c"))
}

func testErrorRollsBack(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	out, err := b.Store.Run(ctx, claim("evt_err"), func(ctx context.Context, tx idempotency.Tx) error {
		require.NoError(t, b.Add(ctx, tx, "c", 100))
		first, err := tx.Guard(ctx, "invoice", "in_err")
		require.NoError(t, err)
		require.True(t, first)
		return fmt.Errorf("after the write: %w", errHandler)
	})
	require.ErrorIs(t, err, errHandler)
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.Equal(t, 0, b.Get(t, "c"))
	requireNoEvent(t, b, "evt_err")
	requireGuard(t, b, "invoice", "in_err", false)

	// Stripe's retry processes it normally.
	out, err = b.Store.Run(ctx, claim("evt_err"), func(ctx context.Context, tx idempotency.Tx) error {
		first, err := tx.Guard(ctx, "invoice", "in_err")
		if err != nil || !first {
			return fmt.Errorf("guard after rollback: first=%t err=%w", first, err)
		}
		return b.Add(ctx, tx, "c", 100)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 100, b.Get(t, "c"))
	requireGuard(t, b, "invoice", "in_err", true)
}

func testPanicRollsBack(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	require.PanicsWithValue(t, "boom", func() {
		_, _ = b.Store.Run(ctx, claim("evt_panic"), func(ctx context.Context, tx idempotency.Tx) error {
			require.NoError(t, b.Add(ctx, tx, "c", 1))
			panic("boom")
		})
	})
	require.Equal(t, 0, b.Get(t, "c"))
	requireNoEvent(t, b, "evt_panic")
	// The claim was released: the retry is not blocked and runs.
	out, err := b.Store.Run(ctx, claim("evt_panic"), addOne(b, "c"))
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 1, b.Get(t, "c"))
}

func testTimeoutRollsBack(t *testing.T, b StoreBackend) {
	ctx, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	// The handler writes, then outlives the deadline and swallows it: the
	// commit must still fail.
	out, err := b.Store.Run(ctx, claim("evt_timeout"), func(ctx context.Context, tx idempotency.Tx) error {
		if err := b.Add(ctx, tx, "c", 1); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})
	require.Error(t, err)
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.Equal(t, 0, b.Get(t, "c"))
	requireNoEvent(t, b, "evt_timeout")
}

func testSkip(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	committed := false
	out, err := b.Store.Run(ctx, claim("evt_skip"), func(ctx context.Context, tx idempotency.Tx) error {
		tx.AfterCommit(func(context.Context) { committed = true })
		require.NoError(t, b.Add(ctx, tx, "c", 1))
		_, err := tx.Guard(ctx, "invoice", "in_skip")
		require.NoError(t, err)
		return fmt.Errorf("checking metadata: %w", idempotency.Skip("no account_id in metadata"))
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeSkipped, out)
	require.False(t, committed, "AfterCommit ran for a skipped event")
	require.Equal(t, 0, b.Get(t, "c"))
	requireGuard(t, b, "invoice", "in_skip", false)
	rec := requireEvent(t, b, "evt_skip", idempotency.OutcomeSkipped)
	require.Equal(t, "no account_id in metadata", rec.SkipReason)

	out, err = b.Store.Run(ctx, claim("evt_skip"), addOne(b, "c"))
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeDuplicate, out, "a skipped event is never retried")
	require.Equal(t, 0, b.Get(t, "c"))
}

func testAfterCommit(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	var calls []string
	var ctxErrs []error
	register := func(tx idempotency.Tx, name string) {
		tx.AfterCommit(func(ctx context.Context) {
			calls = append(calls, name)
			ctxErrs = append(ctxErrs, ctx.Err())
		})
	}
	_, err := b.Store.Run(ctx, claim("evt_ac_fail"), func(ctx context.Context, tx idempotency.Tx) error {
		register(tx, "failed")
		return errHandler
	})
	require.ErrorIs(t, err, errHandler)
	require.Empty(t, calls, "AfterCommit ran after a rollback")

	// The request's context is cancelled between the funcs, as when the
	// client goes away once the commit is done: the funcs after that still
	// get a context that is not cancelled.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, err := b.Store.Run(runCtx, claim("evt_ac_ok"), func(ctx context.Context, tx idempotency.Tx) error {
		register(tx, "first")
		tx.AfterCommit(func(context.Context) { cancel() })
		register(tx, "second")
		require.Empty(t, calls, "AfterCommit ran before the commit")
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, []string{"first", "second"}, calls)
	require.Equal(t, []error{nil, nil}, ctxErrs, "an AfterCommit func's context is cancelled with the request")

	// A panicking after-commit func does not undo the commit nor stop the
	// next, and is no error: it is passed to the claim's hook.
	calls = nil
	var panics []*idempotency.PanicError
	c := claim("evt_ac_panic")
	c.OnAfterCommitPanic = func(p *idempotency.PanicError) { panics = append(panics, p) }
	out, err = b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
		tx.AfterCommit(func(context.Context) { panic("mailer down") })
		register(tx, "after-panic")
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err, "a committed event is no error")
	require.Len(t, panics, 1)
	require.Equal(t, "mailer down", panics[0].Value)
	require.NotEmpty(t, panics[0].Stack)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, []string{"after-panic"}, calls)
	require.Equal(t, 2, b.Get(t, "c"))
	requireEvent(t, b, "evt_ac_panic", idempotency.OutcomeProcessed)
}

// requireGuardFirst claims (scope, key) in tx and requires first to be want.
func requireGuardFirst(ctx context.Context, t *testing.T, tx idempotency.Tx, scope, key string, want bool, msg string) {
	t.Helper()
	first, err := tx.Guard(ctx, scope, key)
	require.NoError(t, err)
	require.Equal(t, want, first, msg)
}

// testGuardFirstOnce: Guard reports a key first once. With early set, the
// claims name the key in Claim.Guards, which must not change a result.
func testGuardFirstOnce(t *testing.T, b StoreBackend, early bool) {
	ctx := ctxT(t)
	claimOf := claim
	if early {
		claimOf = func(id string) idempotency.Claim { return claimGuarding(id, "invoice-credit", "in_1") }
	}
	started := time.Now()
	_, err := b.Store.Run(ctx, claimOf("evt_g1"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, "invoice-credit", "in_1", true, "a new key")
		requireGuardFirst(ctx, t, tx, "invoice-credit", "in_1", false, "the same key twice in one transaction")
		requireGuardFirst(ctx, t, tx, "invoice-receipt", "in_1", true, "another scope is another key")
		return nil
	})
	require.NoError(t, err)
	rec, ok, err := b.Store.LookupGuard(ctx, "invoice-credit", "in_1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "evt_g1", rec.EventID)
	require.Equal(t, "invoice-credit", rec.Scope)
	require.Equal(t, "in_1", rec.Key)
	// Claimed in the event's transaction: when, on the store's clock.
	ev := requireEvent(t, b, "evt_g1", idempotency.OutcomeProcessed)
	require.False(t, rec.ClaimedAt.IsZero(), "GuardRecord.ClaimedAt")
	requireDuring(t, rec.ClaimedAt, started, "GuardRecord.ClaimedAt")
	requireDuring(t, ev.ProcessedAt, started, "EventRecord.ProcessedAt")
	requireGuard(t, b, "invoice-receipt", "in_1", true)

	_, err = b.Store.Run(ctx, claimOf("evt_g2"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, "invoice-credit", "in_1", false, "a key claimed by a committed event")
		return nil
	})
	require.NoError(t, err)
	rec, _, err = b.Store.LookupGuard(ctx, "invoice-credit", "in_1")
	require.NoError(t, err)
	require.Equal(t, "evt_g1", rec.EventID, "the first claim stays")
}

func testGuardRollsBack(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	_, err := b.Store.Run(ctx, claim("evt_gr1"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, "invoice", "in_gr", true, "a new key")
		return errHandler
	})
	require.ErrorIs(t, err, errHandler)
	requireGuard(t, b, "invoice", "in_gr", false)
	_, err = b.Store.Run(ctx, claim("evt_gr2"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, "invoice", "in_gr", true, "the rolled-back guard must be claimable again")
		return nil
	})
	require.NoError(t, err)
}

// creditOnce is the natural-key pattern: credit an invoice once, whichever
// event reports it.
func creditOnce(b StoreBackend, invoice string) idempotency.ApplyFunc {
	return func(ctx context.Context, tx idempotency.Tx) error {
		first, err := tx.Guard(ctx, "invoice-credit", invoice)
		if err != nil || !first {
			return err
		}
		return b.Add(ctx, tx, "credits", 100)
	}
}

func testGuardAcrossEvents(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	const events = 20
	// The runs report here, not to t: on a store that leaves one waiting,
	// they return after the test has failed and ended.
	outs := make([]ranResult, events)
	var wg sync.WaitGroup
	for i := range events {
		wg.Go(func() {
			out, err := b.Store.Run(ctx, claim(fmt.Sprintf("evt_twin_%d", i)), creditOnce(b, "in_twins"))
			outs[i] = ranResult{out, err}
		})
	}
	waitAll(t, &wg, "the concurrent runs")
	for _, r := range outs {
		require.NoError(t, r.err)
		require.Equal(t, idempotency.OutcomeProcessed, r.out, "each event id is new")
	}
	require.Equal(t, 100, b.Get(t, "credits"), "%d events for one invoice credit once", events)
}

func testConcurrentDuplicates(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	const n = 50
	var ran atomic.Int32
	counts := make(map[idempotency.Outcome]int)
	var errs []error // the runs report here, not to t (see testGuardAcrossEvents)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			out, err := b.Store.Run(ctx, claim("evt_storm"), func(ctx context.Context, tx idempotency.Tx) error {
				ran.Add(1)
				return b.Add(ctx, tx, "c", 1)
			})
			mu.Lock()
			counts[out]++
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	close(start)
	waitAll(t, &wg, "the concurrent runs")
	require.Empty(t, errs)
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeProcessed: 1, idempotency.OutcomeDuplicate: n - 1}, counts)
	require.EqualValues(t, 1, ran.Load())
	require.Equal(t, 1, b.Get(t, "c"))
}

// holdClaim runs id's transaction until release is called (or the case
// ends), then returns result from apply. It returns once the claim is
// held.
func holdClaim(t *testing.T, b StoreBackend, id string, result error) (release func(), done chan idempotency.Outcome) {
	ctx := ctxT(t)
	held := make(chan struct{})
	release, released := releaser(t)
	done = make(chan idempotency.Outcome, 1)
	go func() {
		out, _ := b.Store.Run(ctx, claim(id), func(ctx context.Context, tx idempotency.Tx) error {
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
			close(held)
			<-released
			return result
		})
		done <- out
	}()
	receive(t, held, "the holder's claim")
	return release, done
}

// holdGuard runs event id, whose handler guards (scope, key) and holds
// it until release is called (or the case ends), then returns result; it
// returns once the guard is held. done receives the run's end.
func holdGuard(t *testing.T, b StoreBackend, id, scope, key string, result error) (release func(), done chan ranResult) {
	ctx := ctxT(t)
	held := make(chan struct{})
	release, released := releaser(t)
	done = make(chan ranResult, 1)
	go func() {
		out, err := b.Store.Run(ctx, claim(id), func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, scope, key); err != nil {
				return err
			}
			close(held)
			<-released
			return result
		})
		done <- ranResult{out, err}
	}()
	receive(t, held, "the holder's guard")
	return release, done
}

// startWaiters starts n deliveries of id and returns once all n wait for the
// claim held by another transaction.
func startWaiters(t *testing.T, b StoreBackend, id string, n int, ran *atomic.Int32) chan ranResult {
	ctx := ctxT(t)
	// The copies report here, not to t: on a store that leaves them
	// waiting, they return after the test has failed and ended.
	outs := make(chan ranResult, n)
	for range n {
		go func() {
			out, err := b.Store.Run(ctx, claim(id), func(ctx context.Context, tx idempotency.Tx) error {
				ran.Add(1)
				return b.Add(ctx, tx, "c", 1)
			})
			outs <- ranResult{out, err}
		}()
	}
	waitingReaches(t, b, n, 10*time.Second, "%d deliveries should wait for the held claim", n)
	return outs
}

// ranResult is what a Run started on another goroutine returned.
type ranResult struct {
	out idempotency.Outcome
	err error
}

func tally(t *testing.T, ch chan ranResult, n int) map[idempotency.Outcome]int {
	m := make(map[idempotency.Outcome]int)
	for i := range n {
		r := receive(t, ch, fmt.Sprintf("copy %d of %d, waiting for a transaction that has ended,", i+1, n))
		require.NoError(t, r.err, "copy %d of %d", i+1, n)
		m[r.out]++
	}
	return m
}

// waitOn holds id's claim in a transaction that credits c and then
// returns result, starts five copies that wait for it, releases it, and
// reports the holder's outcome, the copies' outcomes and how many copies
// ran the handler.
func waitOn(t *testing.T, b StoreBackend, id string, result error) (idempotency.Outcome, map[idempotency.Outcome]int, int32) {
	release, done := holdClaim(t, b, id, result)
	var ran atomic.Int32
	outs := startWaiters(t, b, id, 5, &ran)
	release()
	holder := receive(t, done, "the holder's Run")
	return holder, tally(t, outs, 5), ran.Load()
}

func testWaitersSeeCommit(t *testing.T, b StoreBackend) {
	holder, outs, ran := waitOn(t, b, "evt_wait_commit", nil)
	require.Equal(t, idempotency.OutcomeProcessed, holder)
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeDuplicate: 5}, outs)
	require.Zero(t, ran)
	require.Equal(t, 1, b.Get(t, "c"))
}

func testWaiterRunsAfterFailure(t *testing.T, b StoreBackend) {
	holder, outs, ran := waitOn(t, b, "evt_wait_fail", errHandler)
	require.Equal(t, idempotency.OutcomeFailed, holder)
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeProcessed: 1, idempotency.OutcomeDuplicate: 4}, outs)
	require.EqualValues(t, 1, ran, "exactly one waiter runs the failed event")
	require.Equal(t, 1, b.Get(t, "c"))
}

// testWaitersSeeSkip: copies waiting for a delivery that skips answer
// duplicate; the handler ran once.
func testWaitersSeeSkip(t *testing.T, b StoreBackend) {
	holder, outs, ran := waitOn(t, b, "evt_wait_skip", idempotency.Skip("no account"))
	require.Equal(t, idempotency.OutcomeSkipped, holder)
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeDuplicate: 5}, outs)
	require.Zero(t, ran)
	require.Equal(t, 0, b.Get(t, "c"))
}

func testWaiterCancelled(t *testing.T, b StoreBackend) {
	release, done := holdClaim(t, b, "evt_wait_cancel", nil)
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_wait_cancel"), addOne(b, "c"))
		errc <- err
	}()
	waitingReaches(t, b, 1, 10*time.Second)
	cancel()
	require.Error(t, receive(t, errc, "the cancelled waiter"), "a cancelled waiter returns an error, not an outcome")
	waitingReaches(t, b, 0, 10*time.Second,
		"the cancelled waiter no longer waits")
	release()
	require.Equal(t, idempotency.OutcomeProcessed, receive(t, done, "the holder's Run"))
	require.Equal(t, 1, b.Get(t, "c"))
}

// testGuardWaitCancelledAbortsTx: a Guard whose wait for a key another
// transaction holds fails (its context cancelled) aborts its transaction,
// as PostgreSQL aborts one whose statement failed: its next statement
// fails, and a handler that goes on past the errors and returns nil has
// its event failed, and nothing of it is kept. (No test failed when
// MemoryStore left such a transaction usable and committed it processed,
// nor when it ran a statement in an aborted transaction.)
func testGuardWaitCancelledAbortsTx(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	releaseHolder, holder := holdGuard(t, b, "evt_abort_holder", "k", "abort", nil)

	guardCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	guardErr := make(chan error, 1)
	nextErr := make(chan error, 1)
	waiter := make(chan ranResult, 1)
	go func() {
		out, err := b.Store.Run(ctx, claim("evt_abort_waiter"), func(ctx context.Context, tx idempotency.Tx) error {
			_, err := tx.Guard(guardCtx, "k", "abort")
			guardErr <- err
			// It goes on past the failed Guard.
			_, err = tx.Guard(ctx, "k", "after_abort")
			nextErr <- err
			_ = b.Add(ctx, tx, "c", 1)
			return nil
		})
		waiter <- ranResult{out, err}
	}()
	waitingReaches(t, b, 1, 10*time.Second)
	cancel()
	require.Error(t, receive(t, guardErr, "the waiting Guard"))
	require.Error(t, receive(t, nextErr, "the next Guard"), "a statement in an aborted transaction fails")
	got := receive(t, waiter, "the waiter's Run")
	require.Error(t, got.err, "a transaction whose statement failed cannot commit")
	require.NotEqual(t, idempotency.OutcomeProcessed, got.out)
	requireNoEvent(t, b, "evt_abort_waiter")

	releaseHolder()
	got = receive(t, holder, "the holder's Run")
	require.NoError(t, got.err)
	require.Equal(t, idempotency.OutcomeProcessed, got.out)
	requireGuard(t, b, "k", "abort", true)
	requireGuard(t, b, "k", "after_abort", false)
	require.Zero(t, b.Get(t, "c"), "the aborted transaction's write is not kept")
}

// deadlockKeys are the keys testDeadlockRetried crosses: take takes key
// in tx and reports whether tx is the first to take it; stored, when not
// nil, requires that key is stored once the runs are over.
type deadlockKeys struct {
	take   func(ctx context.Context, tx idempotency.Tx, key string) (bool, error)
	stored func(t *testing.T, key string)
}

// guardKeys are keys taken with tx.Guard in the scope "k".
func guardKeys(b StoreBackend) deadlockKeys {
	return deadlockKeys{
		take: func(ctx context.Context, tx idempotency.Tx, key string) (bool, error) {
			return tx.Guard(ctx, "k", key)
		},
		stored: func(t *testing.T, key string) { requireGuard(t, b, "k", key, true) },
	}
}

// testDeadlockRetried crosses n transactions' keys in a cycle (each
// holds its key and wants the next one's). The store breaks the cycle by
// failing one transaction and runs it again; every event ends up processed,
// and each key is claimed once: one committed transaction was told it
// claimed it first.
func testDeadlockRetried(t *testing.T, b StoreBackend, n int, keys deadlockKeys) {
	ctx := ctxT(t)
	var bothHeld sync.WaitGroup
	bothHeld.Add(n)
	cross := func(id, mine, theirs string) (idempotency.Outcome, error) {
		attempt := 0
		return b.Store.Run(ctx, claim(id), func(ctx context.Context, tx idempotency.Tx) error {
			attempt++
			firstMine, err := keys.take(ctx, tx, mine)
			if attempt == 1 {
				// Done whatever err is, so that the other run never waits
				// for one that failed.
				bothHeld.Done()
				if !waitWithin(&bothHeld) {
					return errors.New("the other transaction never held its key")
				}
			}
			if err != nil {
				return err
			}
			firstTheirs, err := keys.take(ctx, tx, theirs)
			if err != nil {
				return err
			}
			// Each key counts the transactions told they claimed it first.
			for k, first := range map[string]bool{mine: firstMine, theirs: firstTheirs} {
				if first {
					if err := b.Add(ctx, tx, "first_"+k, 1); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	key := func(i int) string { return string(rune('a' + i%n)) }
	// The runs report here, not to t: on a store that never detects the
	// deadlock they end only when ctx does, after the test failed.
	type ran struct {
		out idempotency.Outcome
		err error
	}
	results := make(chan ran, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := cross("evt_dl_"+key(i), key(i), key(i+1))
			results <- ran{out, err}
		})
	}
	waitAll(t, &wg, fmt.Sprintf("%d transactions waiting for each other's keys (is the deadlock detected?)", n))
	for range n {
		r := <-results
		require.NoError(t, r.err)
		require.Equal(t, idempotency.OutcomeProcessed, r.out)
	}
	for i := range n {
		if keys.stored != nil {
			keys.stored(t, key(i))
		}
		require.Equal(t, 1, b.Get(t, "first_"+key(i)), "key %s: the committed transactions told they claimed it first", key(i))
	}
}

func testNilApply(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	c := claim("evt_ignored")
	c.Outcome = idempotency.OutcomeIgnored
	out, err := b.Store.Run(ctx, c, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeIgnored, out)
	requireEvent(t, b, "evt_ignored", idempotency.OutcomeIgnored)
	out, err = b.Store.Run(ctx, c, nil)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeDuplicate, out)

	// Any other Claim.Outcome, the zero one included, records processed.
	for id, outcome := range map[string]idempotency.Outcome{"evt_nil_processed": idempotency.OutcomeProcessed, "evt_nil_zero": ""} {
		c := claim(id)
		c.Outcome = outcome
		out, err := b.Store.Run(ctx, c, nil)
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, out, "a nil apply with Claim.Outcome %q", outcome)
		requireEvent(t, b, id, idempotency.OutcomeProcessed)
		out, err = b.Store.Run(ctx, c, nil)
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeDuplicate, out)
	}
}

func testTxDone(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	var leaked idempotency.Tx
	_, err := b.Store.Run(ctx, claim("evt_leak"), func(_ context.Context, tx idempotency.Tx) error {
		leaked = tx
		return nil
	})
	require.NoError(t, err)
	_, err = leaked.Guard(ctx, "invoice", "in_leak")
	require.ErrorIs(t, err, idempotency.ErrTxDone)
	requireGuard(t, b, "invoice", "in_leak", false)
}

// refusedApply is the apply of a claim the store must refuse before
// anything starts (Store.Run): it counts its runs in ran, and writes c
// like addOne.
func refusedApply(b StoreBackend, ran *int) idempotency.ApplyFunc {
	return func(ctx context.Context, tx idempotency.Tx) error {
		*ran++
		return b.Add(ctx, tx, "c", 1)
	}
}

func testBadInput(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	ran := 0
	_, err := b.Store.Run(ctx, idempotency.Claim{}, refusedApply(b, &ran))
	require.Error(t, err, "a claim without an event id")
	require.Zero(t, ran, "the handler ran for a claim without an event id")
	_, err = b.Store.Run(ctx, claim("evt_badguard"), func(ctx context.Context, tx idempotency.Tx) error {
		_, err := tx.Guard(ctx, "invoice", "")
		return err
	})
	require.Error(t, err, "an empty guard key")
	requireNoEvent(t, b, "evt_badguard")
	for _, g := range []idempotency.GuardKey{{Scope: "invoice"}, {Key: "in_1"}} {
		c := claim("evt_badearly")
		c.Guards = []idempotency.GuardKey{{Scope: "invoice", Key: "in_ok"}, g}
		_, err = b.Store.Run(ctx, c, refusedApply(b, &ran))
		require.Error(t, err, "an empty key in Claim.Guards: %+v", g)
		require.Zero(t, ran, "the handler ran for an empty key in Claim.Guards: %+v", g)
	}
	requireNoEvent(t, b, "evt_badearly")
	requireGuard(t, b, "invoice", "in_ok", false)
	require.Equal(t, 0, b.Get(t, "c"))
}

// claimGuarding is a claim that names (scope, key) in Claim.Guards.
func claimGuarding(id, scope, key string) idempotency.Claim {
	c := claim(id)
	c.Guards = []idempotency.GuardKey{{Scope: scope, Key: key}}
	return c
}

// testEarlyGuardUnasked: a key of Claim.Guards that apply never guards is
// not kept, so an event that does run the action later still can.
func testEarlyGuardUnasked(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	out, err := b.Store.Run(ctx, claimGuarding("evt_u1", "invoice-credit", "in_u"), addOne(b, "c"))
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 1, b.Get(t, "c"))
	requireGuard(t, b, "invoice-credit", "in_u", false)
	_, err = b.Store.Run(ctx, claim("evt_u2"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, "invoice-credit", "in_u", true, "a key claimed early and never asked for")
		return nil
	})
	require.NoError(t, err)
	requireGuard(t, b, "invoice-credit", "in_u", true)
}

// testEarlyGuardSkip: a skip rolls back an early claim with the writes.
func testEarlyGuardSkip(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	out, err := b.Store.Run(ctx, claimGuarding("evt_s1", "invoice-credit", "in_s"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, "invoice-credit", "in_s", true, "a new key claimed early")
		return idempotency.Skip("not for us")
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeSkipped, out)
	requireEvent(t, b, "evt_s1", idempotency.OutcomeSkipped)
	requireGuard(t, b, "invoice-credit", "in_s", false)
}

// testEarlyGuardAcrossEvents: concurrent events for one invoice, each
// naming the invoice in Claim.Guards, credit once.
func testEarlyGuardAcrossEvents(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	const events = 20
	outs := make([]ranResult, events) // not to t: see testGuardAcrossEvents
	var wg sync.WaitGroup
	for i := range events {
		wg.Go(func() {
			out, err := b.Store.Run(ctx, claimGuarding(fmt.Sprintf("evt_etwin_%d", i), "invoice-credit", "in_etwins"), creditOnce(b, "in_etwins"))
			outs[i] = ranResult{out, err}
		})
	}
	waitAll(t, &wg, "the concurrent runs")
	for _, r := range outs {
		require.NoError(t, r.err)
		require.Equal(t, idempotency.OutcomeProcessed, r.out, "each event id is new")
	}
	require.Equal(t, 100, b.Get(t, "credits"), "%d events for one invoice credit once", events)
}

// testGuardWaits: a guard held by a transaction in flight makes another
// event's Guard wait; it reports first only if the holder rolled back. With
// early set, the waiting event names the key in Claim.Guards.
func testGuardWaits(t *testing.T, b StoreBackend, holderResult error, early bool) {
	ctx := ctxT(t)
	held := make(chan struct{})
	releaseHolder, release := releaser(t)
	holder := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_holder"), func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, "invoice", "in_contended"); err != nil {
				return err
			}
			close(held)
			<-release
			return holderResult
		})
		holder <- err
	}()
	receive(t, held, "the holder's Guard")
	type result struct {
		first bool
		err   error
	}
	waiter := make(chan result, 1)
	go func() {
		c := claim("evt_waiter")
		if early {
			c.Guards = []idempotency.GuardKey{{Scope: "invoice", Key: "in_contended"}}
		}
		var first bool // of the last attempt: a store may run the transaction again
		_, err := b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			first, err = tx.Guard(ctx, "invoice", "in_contended")
			return err
		})
		waiter <- result{first, err}
	}()
	waitingReaches(t, b, 1, 10*time.Second,
		"the second Guard should wait for the holder")
	select {
	case <-waiter:
		t.Fatal("Guard returned while the key was held")
	default:
	}
	releaseHolder()
	require.ErrorIs(t, receive(t, holder, "the holder's Run"), holderResult)
	got := receive(t, waiter, "the Guard waiting for the holder, which has ended,")
	require.NoError(t, got.err)
	require.Equal(t, holderResult != nil, got.first, "first only when the holder rolled back")
}

// purchase declares the action every owner of a purchase calls.
func purchase(b StoreBackend) (*idempotency.Handlers, *idempotency.Action[string]) {
	hs := idempotency.NewHandlers()
	return hs, idempotency.NewAction(hs, idempotency.ActionSpec{
		Name: "grant", Key: "invoice id", Owners: []string{"invoice.paid", "invoice.payment_succeeded"},
	}, func(ctx context.Context, tx idempotency.Tx, _ string, account string) error {
		return b.Add(ctx, tx, account, 100)
	})
}

func testActionOnce(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	_, grant := purchase(b)
	for i, typ := range []string{"invoice.paid", "invoice.payment_succeeded", "invoice.paid"} {
		c := claim(fmt.Sprintf("evt_action_%d", i))
		c.EventType = typ
		var ran bool
		out, err := b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			ran, err = grant.Do(ctx, tx, "in_action", "acct_action")
			return err
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, out)
		require.Equal(t, i == 0, ran, "event %d (%s)", i, typ)
	}
	require.Equal(t, 100, b.Get(t, "acct_action"))
	requireGuard(t, b, "action:grant", "in_action", true)
}

func testActionNotOwner(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	_, grant := purchase(b)
	c := claim("evt_intruder")
	c.EventType = "checkout.session.completed"
	out, err := b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
		_, err := grant.Do(ctx, tx, "in_intruder", "acct_intruder")
		return err
	})
	require.ErrorIs(t, err, idempotency.ErrNotOwner)
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.Equal(t, 0, b.Get(t, "acct_intruder"))
	requireGuard(t, b, "action:grant", "in_intruder", false)
	requireNoEvent(t, b, "evt_intruder")
}

// testAfterCommitRedelivers: an AfterCommit func that delivers the same
// event again, synchronously, sees it committed.
func testAfterCommitRedelivers(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	var inner idempotency.Outcome
	var innerErr error
	out, err := b.Store.Run(ctx, claim("evt_reentrant"), func(ctx context.Context, tx idempotency.Tx) error {
		tx.AfterCommit(func(actx context.Context) {
			nctx, cancel := context.WithTimeout(actx, 10*time.Second)
			defer cancel()
			inner, innerErr = b.Store.Run(nctx, claim("evt_reentrant"), addOne(b, "c"))
		})
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.NoError(t, innerErr)
	require.Equal(t, idempotency.OutcomeDuplicate, inner)
	require.Equal(t, 1, b.Get(t, "c"))
}

// testCopyDuringAfterCommit: a copy that arrives while the first
// delivery's AfterCommit funcs still run is answered duplicate at once.
func testCopyDuringAfterCommit(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	inAfter, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_slow_after"), func(ctx context.Context, tx idempotency.Tx) error {
			tx.AfterCommit(func(context.Context) {
				close(inAfter)
				<-release
			})
			return nil
		})
		done <- err // not to t: see testGuardAcrossEvents
	}()
	receive(t, inAfter, "the first delivery's AfterCommit func")
	copyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := b.Store.Run(copyCtx, claim("evt_slow_after"), addOne(b, "c"))
	close(release)
	require.NoError(t, receive(t, done, "the first delivery's Run"))
	require.NoError(t, err, "the copy must not wait for the first delivery's AfterCommit funcs")
	require.Equal(t, idempotency.OutcomeDuplicate, out)
}

// testTextNoStoreKeeps: a key with a NUL byte or invalid UTF-8 is refused
// with ErrInvalidKey by every store, before anything is stored. PostgreSQL
// cannot keep such text; a store that took it would let a memory-store test
// pass where production fails on every retry.
func testTextNoStoreKeeps(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	for name, key := range map[string]string{"NUL": "in_\x00", "invalid UTF-8": "in_\xff"} {
		_, err := b.Store.Run(ctx, claim("evt_badtext"), func(ctx context.Context, tx idempotency.Tx) error {
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
			_, err := tx.Guard(ctx, "invoice", key)
			return err
		})
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "a guard key with %s", name)
		require.ErrorIs(t, func() error {
			_, err := b.Store.Run(ctx, claim("evt_badtext"), func(ctx context.Context, tx idempotency.Tx) error {
				_, err := tx.Guard(ctx, key, "in_1")
				return err
			})
			return err
		}(), idempotency.ErrInvalidKey, "a guard scope with %s", name)

		for field, c := range map[string]idempotency.Claim{
			"EventID":   {EventID: "evt_" + key},
			"EventType": {EventID: "evt_badtype", EventType: "invoice.paid" + key},
			"ObjectID":  {EventID: "evt_badobject", ObjectID: key},
			"Account":   {EventID: "evt_badaccount", Account: "acct_" + key},
			"Guards":    {EventID: "evt_badguards", Guards: []idempotency.GuardKey{{Scope: "invoice", Key: key}}},
		} {
			ran := 0
			out, err := b.Store.Run(ctx, c, refusedApply(b, &ran))
			require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Claim.%s with %s", field, name)
			require.Zero(t, ran, "the handler ran for Claim.%s with %s: the claim must fail before anything starts", field, name)
			require.ErrorContains(t, err, field)
			require.Equal(t, idempotency.OutcomeFailed, out)
			requireNoEvent(t, b, c.EventID)
		}
	}
	requireNoEvent(t, b, "evt_badtext")
	require.Equal(t, 0, b.Get(t, "c"))

	// A skip reason is the handler's own text: it is kept, with what no
	// store can hold replaced, rather than failing the skip.
	out, err := b.Store.Run(ctx, claim("evt_badreason"), func(context.Context, idempotency.Tx) error {
		return idempotency.Skip("no account \x00 in \xff metadata")
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeSkipped, out)
	require.Equal(t, "no account \uFFFD in \uFFFD metadata", requireEvent(t, b, "evt_badreason", idempotency.OutcomeSkipped).SkipReason)

	// A long one is kept to its first 1000 bytes, a rune cut in half
	// there dropped (an "é" at bytes 999 and 1000).
	long := strings.Repeat("a", 999) + "é" + strings.Repeat("b", 4000)
	out, err = b.Store.Run(ctx, claim("evt_longreason"), func(context.Context, idempotency.Tx) error {
		return idempotency.Skip(long)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeSkipped, out)
	require.Equal(t, strings.Repeat("a", 999), requireEvent(t, b, "evt_longreason", idempotency.OutcomeSkipped).SkipReason)
}

// testEarlyGuardOtherKey: an early guard answers only for its own key. An
// action declared KeyIsObjectID but called with another key guards that
// key like any Guard: two events about different objects cannot both run
// it for one key, and each object's early claim, never asked for, is
// released.
func testEarlyGuardOtherKey(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	const scope = "action:notify"
	out, err := b.Store.Run(ctx, claimGuarding("evt_other_a", scope, "in_obj_a"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, scope, "in_other", true, "event A is the first to guard in_other")
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	out, err = b.Store.Run(ctx, claimGuarding("evt_other_b", scope, "in_obj_b"), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, scope, "in_other", false, "event B finds in_other guarded by A, whatever its own early key")
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)

	g, ok, err := b.Store.LookupGuard(ctx, scope, "in_other")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "evt_other_a", g.EventID, "in_other is owned by the event that guarded it first")
	requireGuard(t, b, scope, "in_obj_a", false)
	requireGuard(t, b, scope, "in_obj_b", false)
}

// testWaiterSeesAfterCommitWrites: a transaction that waited for another's
// guard wakes to all of the holder's committed writes, those a store
// without a database applies in AfterCommit included (a test fake relies
// on it). The holder's first AfterCommit func stalls before its business
// write runs; a store that woke the waiter at the commit, before the
// AfterCommit funcs, lets it read the counter without the write.
//
// With onClaim, the waiter is a copy of the holder's event (Stripe's
// duplicate, a retry): answered duplicate once the holder commits, it
// must find the holder's writes all there too.
func testWaiterSeesAfterCommitWrites(t *testing.T, b StoreBackend, onClaim bool) {
	ctx := ctxT(t)
	held, inAfter, waiterRead := make(chan struct{}), make(chan struct{}), make(chan int, 1)
	releaseHolder, release := releaser(t)
	holder := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_slow_write"), func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, "invoice", "in_slow"); err != nil {
				return err
			}
			tx.AfterCommit(func(context.Context) {
				close(inAfter)
				// Give a waiter woken too early the time to read; a correct
				// store keeps it waiting, and this only delays the write.
				timer := time.NewTimer(200 * time.Millisecond)
				defer timer.Stop()
				select {
				case <-waiterRead:
				case <-timer.C:
				}
			})
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
		holder <- err
	}()
	receive(t, held, "the holder's guard")
	// The waiting run says when it has its answer and holds still while
	// the test reads the counter, on the test's goroutine: Get gets t, and
	// may fail the test with it, which no other goroutine may do.
	woke, readDone := make(chan struct{}, 1), make(chan struct{})
	var readOnce sync.Once
	read := func() { readOnce.Do(func() { close(readDone) }) }
	t.Cleanup(read) // a failed test lets the waiter finish, and release what it holds
	waiter := make(chan error, 1)
	if onClaim {
		go func() {
			out, err := b.Store.Run(ctx, claim("evt_slow_write"), func(context.Context, idempotency.Tx) error {
				return errors.New("a copy of the event ran its handler")
			})
			if err == nil && out != idempotency.OutcomeDuplicate {
				err = fmt.Errorf("the copy's outcome is %s, want duplicate", out)
			}
			woke <- struct{}{}
			<-readDone
			waiter <- err
		}()
	} else {
		go waitOnGuard(ctx, b, woke, readDone, waiter)
	}
	waitingReaches(t, b, 1, waitLimit,
		"the second run should wait for the holder")
	releaseHolder()
	receive(t, inAfter, "the holder's commit")
	var n int
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case <-woke:
		n = b.Get(t, "c")
		waiterRead <- n // the holder's AfterCommit func may go on
		read()
	case err := <-waiter: // it failed before its answer
		require.NoError(t, err, "the waiting Run")
	case <-timer.C:
		t.Fatalf("the waiting Run got no answer within %s: a run was left waiting", waitLimit)
	}
	require.NoError(t, receive(t, holder, "the holder's Run"))
	require.NoError(t, receive(t, waiter, "the waiting Run"))
	require.Equal(t, 1, n, "the waiter woke before the holder's committed write was visible")
}

// waitOnGuard runs an event that waits for in_slow's guard, which
// testWaiterSeesAfterCommitWrites's holder holds; once it is granted, it
// signals woke and waits for readDone, while the test reads the counter.
func waitOnGuard(ctx context.Context, b StoreBackend, woke chan<- struct{}, readDone <-chan struct{}, waiter chan<- error) {
	var once sync.Once
	_, err := b.Store.Run(ctx, claim("evt_after_slow_write"), func(ctx context.Context, tx idempotency.Tx) error {
		first, err := tx.Guard(ctx, "invoice", "in_slow")
		if err != nil {
			return err // at repeatable read and serializable, a conflict the store reruns
		}
		if first {
			return errors.New("the guard the holder committed reads as first")
		}
		once.Do(func() { // a rerun of the transaction: the first read counts
			woke <- struct{}{}
			<-readDone
		})
		return nil
	})
	waiter <- err
}

// testListEvents: ListEvents returns committed claims of every outcome,
// newest first, filtered by outcome, type, object, account and time, and
// nothing of a rolled-back event; After pages through them, comparing
// the time first, at the microsecond the stores keep, then the event id.
func testListEvents(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	run := func(id, typ string, apply idempotency.ApplyFunc, outcome idempotency.Outcome) idempotency.EventRecord {
		c := claim(id)
		c.EventType = typ
		if id == "evt_list_3" {
			c.Account = "acct_list"
		}
		if apply == nil {
			c.Outcome = outcome
		}
		out, err := b.Store.Run(ctx, c, apply)
		if outcome == idempotency.OutcomeFailed {
			require.Error(t, err)
			return idempotency.EventRecord{}
		}
		require.NoError(t, err)
		require.Equal(t, outcome, out)
		return requireEvent(t, b, id, outcome)
	}
	p1 := run("evt_list_1", "invoice.paid", addOne(b, "c"), idempotency.OutcomeProcessed)
	s2 := run("evt_list_2", "invoice.paid", func(context.Context, idempotency.Tx) error { return idempotency.Skip("no account") }, idempotency.OutcomeSkipped)
	run("evt_list_failed", "invoice.paid", func(context.Context, idempotency.Tx) error { return errHandler }, idempotency.OutcomeFailed)
	i3 := run("evt_list_3", "customer.created", nil, idempotency.OutcomeIgnored)
	p4 := run("evt_list_4", "invoice.payment_succeeded", addOne(b, "c"), idempotency.OutcomeProcessed)

	ids := func(f idempotency.EventFilter) []string {
		t.Helper()
		recs, err := b.Store.ListEvents(ctx, f)
		require.NoError(t, err)
		out := make([]string, len(recs))
		for i, r := range recs {
			out[i] = r.EventID
		}
		return out
	}
	require.Equal(t, []string{"evt_list_4", "evt_list_3", "evt_list_2", "evt_list_1"}, ids(idempotency.EventFilter{}), "newest first, the failed one absent")
	recs, err := b.Store.ListEvents(ctx, idempotency.EventFilter{Outcomes: []idempotency.Outcome{idempotency.OutcomeSkipped}})
	require.NoError(t, err)
	require.Equal(t, []idempotency.EventRecord{s2}, recs, "a listed record is the one LookupEvent returns")
	require.Equal(t, "no account", recs[0].SkipReason)
	require.Equal(t, []string{"evt_list_3", "evt_list_2"}, ids(idempotency.EventFilter{Outcomes: []idempotency.Outcome{idempotency.OutcomeSkipped, idempotency.OutcomeIgnored}}))
	require.Equal(t, []string{"evt_list_2", "evt_list_1"}, ids(idempotency.EventFilter{EventType: "invoice.paid"}))
	require.Equal(t, []string{"evt_list_3"}, ids(idempotency.EventFilter{ObjectID: "in_evt_list_3"}))
	require.Equal(t, []string{"evt_list_4", "evt_list_3"}, ids(idempotency.EventFilter{Limit: 2}))
	require.Equal(t, []string{"evt_list_4", "evt_list_3", "evt_list_2"}, ids(idempotency.EventFilter{Limit: 3}), "one fewer than there are")
	require.Equal(t, []string{"evt_list_3", "evt_list_2"}, ids(idempotency.EventFilter{Since: s2.ProcessedAt, Until: p4.ProcessedAt}), "Since is inclusive, Until exclusive")
	require.Equal(t, []string{"evt_list_4"}, ids(idempotency.EventFilter{Since: p4.ProcessedAt}))
	require.Equal(t, []string{"evt_list_1"}, ids(idempotency.EventFilter{Until: p1.ProcessedAt.Add(time.Microsecond)}))
	require.Empty(t, ids(idempotency.EventFilter{EventType: "charge.refunded"}))
	require.True(t, p1.ProcessedAt.Before(i3.ProcessedAt))
	require.Equal(t, []string{"evt_list_3"}, ids(idempotency.EventFilter{Account: "acct_list"}))
	require.Empty(t, ids(idempotency.EventFilter{Account: "acct_none"}))

	// After pages through the list, every record once, in its order, also
	// with a filter and when records share a microsecond (the position
	// compares event ids then).
	var paged []string
	f := idempotency.EventFilter{Limit: 1}
	for range 5 {
		recs, err := b.Store.ListEvents(ctx, f)
		require.NoError(t, err)
		if len(recs) == 0 {
			break
		}
		paged = append(paged, recs[0].EventID)
		f.After = recs[0].Position()
	}
	require.Equal(t, []string{"evt_list_4", "evt_list_3", "evt_list_2", "evt_list_1"}, paged)
	require.Equal(t, []string{"evt_list_1"}, ids(idempotency.EventFilter{EventType: "invoice.paid", After: s2.Position()}))
	same := idempotency.EventPosition{ProcessedAt: p4.ProcessedAt, EventID: "evt_list_4~"}
	require.Equal(t, []string{"evt_list_4", "evt_list_3"}, ids(idempotency.EventFilter{After: same, Limit: 2}), "the same microsecond, a smaller id")
	same.EventID = "evt_list_4"
	require.Equal(t, []string{"evt_list_3"}, ids(idempotency.EventFilter{After: same, Limit: 1}), "not the position's own record")
	// The time decides first: a newer record whose id is smaller than the
	// position's does not come after it.
	require.Equal(t, []string{"evt_list_1"}, ids(idempotency.EventFilter{After: idempotency.EventPosition{ProcessedAt: p1.ProcessedAt, EventID: "evt_list_9"}}),
		"newer records with smaller ids")
	// The position's time is compared at the microsecond the stores keep.
	same.ProcessedAt = p4.ProcessedAt.Add(500 * time.Nanosecond)
	require.Equal(t, []string{"evt_list_3"}, ids(idempotency.EventFilter{After: same, Limit: 1}), "the position's nanoseconds dropped")
}

// testListEventsBadFilter: a filter that cannot mean anything is an error
// naming the field, never an empty list.
func testListEventsBadFilter(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	now := time.Now()
	for field, f := range map[string]idempotency.EventFilter{
		"Limit":     {Limit: -1},
		"Limit ":    {Limit: idempotency.MaxListLimit + 1},
		"Since":     {Since: now, Until: now},
		"Outcomes":  {Outcomes: []idempotency.Outcome{idempotency.OutcomeFailed}},
		"EventType": {EventType: "invoice.paid\x00"},
		"ObjectID":  {ObjectID: "in_\xff"},
		"Account":   {Account: "acct_\xff"},
		// A position without its event id, or without its time, which
		// would list nothing, as if nothing came after it.
		"After.EventID":     {After: idempotency.EventPosition{ProcessedAt: now}},
		"After.ProcessedAt": {After: idempotency.EventPosition{EventID: "evt_1"}},
	} {
		_, err := b.Store.ListEvents(ctx, f)
		require.ErrorContains(t, err, "EventFilter."+strings.TrimSpace(field))
	}
}

// testHandlerAnswers: the synchronous Handler on the store answers as the
// store's outcomes say, end to end. Concurrent copies of an event run its
// handler once and are answered 200, one processed and the others
// duplicate; a handler that fails or panics after its guard and its write
// is answered 500 without its error, and neither the claim, the guard nor
// the write is committed, so Stripe's retry is processed; a skip is
// answered 200 skipped and is final; an event type without a handler is
// answered 200 ignored.
func testHandlerAnswers(t *testing.T, b StoreBackend) {
	var runs atomic.Int32
	var fixed atomic.Bool
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[inboxObject]) error {
		runs.Add(1)
		first, err := tx.Guard(ctx, "object-credit", ev.Object.ID)
		if err != nil {
			return err
		}
		if first {
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
		}
		if !fixed.Load() {
			switch ev.ID {
			case "evt_ha_error":
				return errHandler
			case "evt_ha_panic":
				panic("the handler panicked after its write")
			}
		}
		return nil
	})
	idempotency.On(hs, "checkout.session.completed", func(context.Context, idempotency.Tx, idempotency.Event[inboxObject]) error {
		return idempotency.Skip("no account in metadata")
	})
	h, err := idempotency.NewHandler(b.Store, hs, idempotency.Config{Secrets: []string{inboxSecret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	deliver := func(id, typ string, wantStatus int, want idempotency.Outcome) Answer {
		t.Helper()
		a := Deliver(h, inboxEvent(id, typ, "in_"+id, 1756742400), inboxSecret)
		require.Equal(t, wantStatus, a.Status, "delivery of %s: %s", id, a.Body)
		require.Equal(t, want, a.Outcome, "delivery of %s: %s", id, a.Body)
		return a
	}

	answers := Replay(h, inboxEvent("evt_ha_copies", "invoice.paid", "in_evt_ha_copies", 1756742400), inboxSecret, 20)
	require.Equal(t, map[int]int{http.StatusOK: 20}, answers.Statuses())
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	require.Equal(t, 19, answers.Count(idempotency.OutcomeDuplicate))
	require.EqualValues(t, 1, runs.Load(), "the handler ran once for 20 copies")
	require.Equal(t, 1, b.Get(t, "c"))

	for _, id := range []string{"evt_ha_error", "evt_ha_panic"} {
		a := deliver(id, "invoice.paid", http.StatusInternalServerError, "")
		require.NotContains(t, a.Body, errHandler.Error())
		require.NotContains(t, a.Body, "panicked")
		requireNoEvent(t, b, id)
		requireGuard(t, b, "object-credit", "in_"+id, false)
	}
	require.Equal(t, 1, b.Get(t, "c"), "the failed deliveries' writes rolled back")
	fixed.Store(true)
	for _, id := range []string{"evt_ha_error", "evt_ha_panic"} {
		deliver(id, "invoice.paid", http.StatusOK, idempotency.OutcomeProcessed)
		deliver(id, "invoice.paid", http.StatusOK, idempotency.OutcomeDuplicate)
		requireGuard(t, b, "object-credit", "in_"+id, true)
	}
	require.Equal(t, 3, b.Get(t, "c"), "each retry applied once")

	deliver("evt_ha_skip", "checkout.session.completed", http.StatusOK, idempotency.OutcomeSkipped)
	deliver("evt_ha_skip", "checkout.session.completed", http.StatusOK, idempotency.OutcomeDuplicate)
	require.Equal(t, "no account in metadata", requireEvent(t, b, "evt_ha_skip", idempotency.OutcomeSkipped).SkipReason)
	deliver("evt_ha_ignored", "customer.created", http.StatusOK, idempotency.OutcomeIgnored)
}

// incompressible is n bytes of text that no compression shortens, as a
// key made of ids, emails and hashes can be: PostgreSQL compresses a long
// index entry before it checks the entry's size.
func incompressible(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = alphabet[x%uint64(len(alphabet))]
	}
	return string(b)
}

// testLongKeys: a key too long for PostgreSQL's indexes (an index entry
// holds at most 2704 bytes) is refused with ErrInvalidKey by every store
// before anything runs, as a NUL byte is, rather than accepted by one store
// and failed by the other on every retry; a long key inside the bound is
// claimed on every store.
func testLongKeys(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	long := incompressible(8 << 10)
	out, err := b.Store.Run(ctx, claim("evt_longguard"), func(ctx context.Context, tx idempotency.Tx) error {
		if err := b.Add(ctx, tx, "c", 1); err != nil {
			return err
		}
		_, err := tx.Guard(ctx, "invoice", long)
		return err
	})
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "a guard key of %d bytes", len(long))
	require.Equal(t, idempotency.OutcomeFailed, out)
	_, err = b.Store.Run(ctx, claim("evt_longscope"), func(ctx context.Context, tx idempotency.Tx) error {
		_, err := tx.Guard(ctx, long, "in_1")
		return err
	})
	require.ErrorIs(t, err, idempotency.ErrInvalidKey, "a guard scope of %d bytes", len(long))
	for field, c := range map[string]idempotency.Claim{
		"EventID":   {EventID: "evt_" + long},
		"EventType": {EventID: "evt_longtype", EventType: "invoice." + long},
		"ObjectID":  {EventID: "evt_longobject", ObjectID: "in_" + long},
		"Guards":    {EventID: "evt_longguards", Guards: []idempotency.GuardKey{{Scope: "invoice", Key: long}}},
	} {
		ran := 0
		out, err := b.Store.Run(ctx, c, refusedApply(b, &ran))
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "Claim.%s of %d bytes", field, len(long))
		require.Zero(t, ran, "the handler ran for Claim.%s of %d bytes: the claim must fail before anything starts", field, len(long))
		require.Equal(t, idempotency.OutcomeFailed, out)
		requireNoEvent(t, b, c.EventID)
	}
	requireNoEvent(t, b, "evt_longguard")
	require.Equal(t, 0, b.Get(t, "c"))

	// Inside the bound, a long scope and key are claimed alike.
	scope, key := incompressible(1000), incompressible(1000)+"k"
	_, err = b.Store.Run(ctx, claim("evt_"+incompressible(900)), func(ctx context.Context, tx idempotency.Tx) error {
		requireGuardFirst(ctx, t, tx, scope, key, true, "a long key")
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	requireGuard(t, b, scope, key, true)
	require.Equal(t, 1, b.Get(t, "c"))
}

// testTxOneStatementAtATime: a Tx runs one statement at a time, as the one
// connection of a PostgreSQL transaction does. A Guard made while a Guard
// of the same transaction, from another goroutine, waits for a key held
// elsewhere fails with ErrTxBusy on every store, rather than succeeding in
// a unit test on the memory store and racing inside pgx on PostgreSQL; the
// statement that waits is not disturbed, and the transaction commits.
func testTxOneStatementAtATime(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	held := make(chan struct{})
	releaseHolder, release := releaser(t)
	holder := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_busy_holder"), func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, "invoice", "in_busy"); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
		holder <- err
	}()
	receive(t, held, "the holder's Guard")
	var overlapping error
	attempts := 0
	out, err := b.Store.Run(ctx, claim("evt_busy"), func(ctx context.Context, tx idempotency.Tx) error {
		if attempts++; attempts > 1 {
			// At REPEATABLE READ and above, the wait ends in a
			// serialization failure, and the store runs the transaction
			// again: the holder has committed by now.
			first, err := tx.Guard(ctx, "invoice", "in_busy")
			if err == nil && first {
				err = errors.New("the held key was reported first")
			}
			return err
		}
		waited := make(chan error, 1)
		go func() {
			first, err := tx.Guard(ctx, "invoice", "in_busy")
			if err == nil && first {
				err = errors.New("the held key was reported first")
			}
			waited <- err
		}()
		waitingReaches(t, b, 1, waitLimit,
			"the first Guard should wait for the holder")
		_, overlapping = tx.Guard(ctx, "invoice", "in_other")
		releaseHolder()
		return receive(t, waited, "the Guard waiting for the holder")
	})
	require.ErrorIs(t, overlapping, idempotency.ErrTxBusy, "a Guard while another statement of the transaction runs")
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.NoError(t, receive(t, holder, "the holder's Run"))
	requireGuard(t, b, "invoice", "in_other", false)
}

// testReceivedAtZeroIsTheClaim: a claim without ReceivedAt is recorded as
// received when it was claimed, before its handler ran, on every store; not
// when its transaction ended.
func testReceivedAtZeroIsTheClaim(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	c := claim("evt_received_now")
	c.ReceivedAt = time.Time{}
	var during time.Time
	_, err := b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
		during = time.Now()
		for !time.Now().After(during) { // the clock moves on before the handler returns
		}
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	rec := requireEvent(t, b, "evt_received_now", idempotency.OutcomeProcessed)
	require.False(t, rec.ReceivedAt.After(during), "received at %s, after the handler ran (%s)", rec.ReceivedAt, during)
}

// testCancelledContextRunsNothing: Run on a context that is already done
// fails without calling apply, on every store: PostgreSQL cannot begin the
// transaction, so a handler that MemoryStore ran anyway would do in a unit
// test what it never does in production.
func testCancelledContextRunsNothing(t *testing.T, b StoreBackend) {
	ctx, cancel := context.WithCancel(ctxT(t))
	cancel()
	ran := false
	out, err := b.Store.Run(ctx, claim("evt_cancelled"), func(ctx context.Context, tx idempotency.Tx) error {
		ran = true
		return b.Add(ctx, tx, "c", 1)
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.False(t, ran, "the handler ran on a cancelled context")
	requireNoEvent(t, b, "evt_cancelled")
	require.Equal(t, 0, b.Get(t, "c"))
}

// testHandlerLeavesStatementRunning: a handler returns while a Guard it
// began from a goroutine of its own still waits for a key held elsewhere.
// The store cancels the handler's context, waits for that statement to
// end, and fails the attempt with ErrTxBusy, rolled back: what the
// statement did is unknown, and a commit must not share the connection
// with it. The holder is not disturbed, and a later delivery applies the
// event.
func testHandlerLeavesStatementRunning(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_left_holder"), func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, "invoice", "in_left"); err != nil {
				return err
			}
			close(held)
			<-release
			return idempotency.Skip("the holder keeps no claim")
		})
		holder <- err
	}()
	receive(t, held, "the holder's Guard")
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	left := make(chan error, 1)
	_, err := b.Store.Run(ctx, claim("evt_left"), func(ctx context.Context, tx idempotency.Tx) error {
		go func() {
			_, err := tx.Guard(ctx, "invoice", "in_left")
			left <- err
		}()
		waitingReaches(t, b, 1, waitLimit,
			"the Guard should wait for the holder")
		return nil
	})
	require.ErrorIs(t, err, idempotency.ErrTxBusy, "the delivery")
	require.Error(t, receive(t, left, "the Guard left running"))
	requireNoEvent(t, b, "evt_left")
	// The statement ended for the store; on PostgreSQL its session may
	// wait on the lock a moment longer: pgx, on a cancelled context,
	// closes the connection at once and sends PostgreSQL's cancel request
	// after it, on a connection of its own.
	waitingReaches(t, b, 0, waitLimit, "the Guard left running still waits for the holder")

	close(release)
	require.NoError(t, receive(t, holder, "the holder's Run"))
	requireGuard(t, b, "invoice", "in_left", false)
	out, err := b.Store.Run(ctx, claim("evt_left"), func(ctx context.Context, tx idempotency.Tx) error {
		if _, err := tx.Guard(ctx, "invoice", "in_left"); err != nil {
			return err
		}
		return b.Add(ctx, tx, "c", 1)
	})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	require.Equal(t, 1, b.Get(t, "c"))
	requireGuard(t, b, "invoice", "in_left", true)
}
