package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The commit of a worker's event W began the transaction of the event X it
// took ahead, X's claim inside; then no attempt at X used it: the worker
// gave X back, or it was stopped. That transaction is rolled back before
// anything else touches X: the worker's next event Y is applied in a
// transaction of its own, X is neither claimed nor made final by it, and
// X, leased again, is applied exactly once.

// begunInbox is a pgInbox whose log is kept, with W and X delivered and
// leased, then, 30s later on its clock, Y.
func begunInbox(t *testing.T) (b *pgBackend, p *pgInbox, log *syncBuffer, leased []idempotency.InboxLeased) {
	t.Helper()
	b = newPgBackend(t, idempotency.PgxConfig{})
	p = newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Timeout: 10 * time.Second})
	p.cfg.Logger, log = testLogger()
	p.inbox = p.newInbox(t, b.store)
	p.deliver(t, "evt_begun_w", "in_begun_w", 1)
	p.deliver(t, "evt_begun_x", "in_begun_x", 2)
	leased = p.lease(t, 2) // until now+1m
	p.clock.Advance(30 * time.Second)
	p.deliver(t, "evt_begun_y", "in_begun_y", 3)
	return b, p, log, append(leased, p.lease(t, 1)...) // Y until now+1m
}

// requireBegunEvent checks how many times the event evt_begun_<name> was
// applied (claimed when once), and its inbox state and attempt.
func requireBegunEvent(t *testing.T, b *pgBackend, p *pgInbox, name string, applied int, state idempotency.InboxState, attempt int) {
	t.Helper()
	id := "evt_begun_" + name
	require.Equal(t, applied, b.get(t, "in_begun_"+name), "%s applied", id)
	_, claimed, err := b.store.LookupEvent(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, applied == 1, claimed, "%s claimed with its writes", id)
	rec := p.record(t, id)
	require.Equal(t, state, rec.State, id)
	require.Equal(t, attempt, rec.Attempt, id)
}

// resultIDs returns the event ids of p's results, in order, and checks that
// none failed.
func resultIDs(t *testing.T, p *pgInbox) []string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]string, len(p.results))
	for i, r := range p.results {
		require.NoError(t, r.Err, r.EventID)
		ids[i] = r.EventID
	}
	return ids
}

// TestPgxInboxChainedBegunLeaseRunsShort: X's lease ran short while W
// committed (an attempt started then could outlast it), and the worker
// gave X back. Giving it back does not wait for the lock X's begun
// transaction holds on X's row (until it timed out, failed and logged
// that the attempt could not be recorded).
func TestPgxInboxChainedBegunLeaseRunsShort(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	p.onResult = func(r idempotency.Result) {
		if r.EventID == "evt_begun_w" {
			// W's commit began X's transaction with 30s of X's lease
			// left; now 5s are, less than an attempt's Timeout.
			p.clock.Advance(25 * time.Second)
		}
	}
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...), "W's commit began X's transaction")
	p.onResult = nil
	require.Equal(t, []string{"evt_begun_w", "evt_begun_y"}, resultIDs(t, p), "X given back unattempted")
	requireBegunEvent(t, b, p, "w", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "y", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "x", 0, idempotency.InboxPending, 0)
	require.NotContains(t, log.String(), `"level":"ERROR"`)
	require.NotContains(t, log.String(), `"level":"WARN"`)

	again := p.lease(t, 1)
	require.Equal(t, "evt_begun_x", again[0].EventID())
	idempotency.ApplyChained(t.Context(), p.inbox, again...)
	requireBegunEvent(t, b, p, "x", 1, idempotency.InboxProcessed, 1)
}

// TestPgxInboxChainedBegunStop: Run was stopped while W committed, after
// W's commit began X's transaction. The worker starts nothing more: X and
// Y are given back, pending, their attempts not counted, without waiting
// for the lock X's begun transaction holds on X's row.
func TestPgxInboxChainedBegunStop(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	p.onResult = func(r idempotency.Result) {
		if r.EventID == "evt_begun_w" {
			stop()
		}
	}
	require.Equal(t, 1, idempotency.ApplyChained(ctx, p.inbox, leased...), "W's commit began X's transaction")
	p.onResult = nil
	require.Equal(t, []string{"evt_begun_w"}, resultIDs(t, p), "nothing started after the stop")
	requireBegunEvent(t, b, p, "w", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "x", 0, idempotency.InboxPending, 0)
	requireBegunEvent(t, b, p, "y", 0, idempotency.InboxPending, 0)
	require.NotContains(t, log.String(), `"level":"ERROR"`)
	require.NotContains(t, log.String(), `"level":"WARN"`)

	again := p.lease(t, 2)
	idempotency.ApplyChained(t.Context(), p.inbox, again...)
	requireBegunEvent(t, b, p, "x", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "y", 1, idempotency.InboxProcessed, 1)
}

// TestPgxInboxChainedBegunForAnotherEvent: the worker's chain holds the
// transaction a commit began for X when the attempt at Y begins. The Run
// loop never gets there (it rolls X's back before it gives X back or
// stops), but should it, Y's attempt must not apply Y in X's transaction:
// that would claim X, and make X's inbox row processed, with Y's writes,
// and leave Y unclaimed. Y is applied in its own transaction, X's is
// rolled back, and X, still leased, is applied exactly once.
func TestPgxInboxChainedBegunForAnotherEvent(t *testing.T) {
	t.Parallel()
	b, p, log, leased := begunInbox(t)
	x, y := leased[1], leased[2]
	begun, err := idempotency.ApplyWithBegun(t.Context(), p.inbox, x, y)
	require.NoError(t, err)
	require.True(t, begun, "the commit began X's transaction")
	require.Equal(t, []string{"evt_begun_y"}, resultIDs(t, p))
	requireBegunEvent(t, b, p, "y", 1, idempotency.InboxProcessed, 1)
	requireBegunEvent(t, b, p, "x", 0, idempotency.InboxProcessing, 1)
	require.NotContains(t, log.String(), `"level":"ERROR"`)
	require.NotContains(t, log.String(), `"level":"WARN"`)

	idempotency.ApplyChained(t.Context(), p.inbox, x) // its lease still stands
	requireBegunEvent(t, b, p, "x", 1, idempotency.InboxProcessed, 1)
}
