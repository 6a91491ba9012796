package idempotencytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testFilterBoundsBelowMicrosecond: a filter's Since and Until bound the
// times as they are documented, Since <= t < Until, also when a bound is
// finer than the store keeps times (PostgreSQL: microseconds). An event
// received at T is selected by Until T+1ns and not by Since T+1ns, in
// List, in Redrive (dry run and real) and, for the ledger's ProcessedAt,
// in ListEvents; a Since not before Until is refused by all three. A store
// that sends the bounds truncated to the microsecond turns Until T+1ns
// into Until T and leaves the event out, and Since T+1ns into Since T and
// takes it in.
func testFilterBoundsBelowMicrosecond(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1}, func(string, int) error { return errDownstream })
	at := ib.clock.Now() // a whole second: every store keeps it as it is
	ib.deliver(t, "evt_bound_dead", "invoice.paid", "in_bound", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_bound_dead").State)
	require.True(t, ib.record(t, "evt_bound_dead").ReceivedAt.Equal(at))

	after := at.Add(time.Nanosecond)
	require.Equal(t, []string{"evt_bound_dead"}, listIDs(t, ib.inbox, idempotency.InboxFilter{Until: after}),
		"received at %s, before Until %s", at, after)
	require.Empty(t, listIDs(t, ib.inbox, idempotency.InboxFilter{Since: after}),
		"received at %s, before Since %s", at, after)
	require.Empty(t, listIDs(t, ib.inbox, idempotency.InboxFilter{Since: after, Until: after.Add(time.Nanosecond)}))

	redrive := func(f idempotency.RedriveFilter) int {
		t.Helper()
		n, err := ib.inbox.Redrive(ctxT(t), f)
		require.NoError(t, err)
		return n
	}
	require.Zero(t, redrive(idempotency.RedriveFilter{Since: after, DryRun: true}), "dry run, Since after it")
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{Until: after, DryRun: true}), "dry run, Until after it")
	require.Zero(t, redrive(idempotency.RedriveFilter{Since: after}), "Since after it")
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_bound_dead").State)
	require.Equal(t, 1, redrive(idempotency.RedriveFilter{Until: after}), "Until after it")
	require.Equal(t, idempotency.InboxPending, ib.record(t, "evt_bound_dead").State)

	// The ledger: bounds on ProcessedAt, as the store gives it.
	_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_bound_ledger", EventType: "invoice.paid"},
		func(context.Context, idempotency.Tx) error { return nil })
	require.NoError(t, err)
	rec := requireEvent(t, b, "evt_bound_ledger", idempotency.OutcomeProcessed)
	ledger := func(f idempotency.EventFilter) []string {
		t.Helper()
		recs, err := b.Store.ListEvents(ctxT(t), f)
		require.NoError(t, err)
		var out []string
		for _, r := range recs {
			out = append(out, r.EventID)
		}
		return out
	}
	processed := rec.ProcessedAt
	require.Equal(t, []string{"evt_bound_ledger"}, ledger(idempotency.EventFilter{Since: processed, Until: processed.Add(time.Nanosecond)}),
		"processed at %s", processed)
	require.Empty(t, ledger(idempotency.EventFilter{Since: processed.Add(time.Nanosecond)}), "processed at %s", processed)

	// A range that holds no time, Since not before Until, is refused, as
	// the filters' docs say, rather than answered with nothing.
	for _, until := range []time.Time{at, at.Add(-time.Nanosecond)} {
		_, err := b.Store.ListEvents(ctxT(t), idempotency.EventFilter{Since: at, Until: until})
		require.ErrorContains(t, err, "EventFilter.Since")
		_, err = ib.inbox.List(ctxT(t), idempotency.InboxFilter{Since: at, Until: until})
		require.ErrorContains(t, err, "InboxFilter.Since")
		_, err = ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{Since: at, Until: until, DryRun: true})
		require.ErrorContains(t, err, "RedriveFilter.Since")
	}
}
