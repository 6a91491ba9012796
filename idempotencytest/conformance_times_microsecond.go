package idempotencytest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testTimesKeptToTheMicrosecond: a store keeps times as PostgreSQL does,
// truncated to the microsecond, and compares them as kept: on a clock finer
// than that (a test's fake clock, time.Now), the records, the filters, what
// is due and the ledger are the same on every store. A store that keeps
// nanoseconds lists an event received at T+1.5µs at T+1.5µs where
// PostgreSQL lists it at T+1µs, a filter Until T+1.2µs selects it on one
// and not the other, and a retry due at T+3.2µs is due at T+3.1µs on one
// and not the other.
func testTimesKeptToTheMicrosecond(t *testing.T, b StoreBackend) {
	backoff := time.Minute + 1700*time.Nanosecond
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 2, Backoff: func(int) time.Duration { return backoff }},
		func(id string, attempt int) error {
			if attempt == 1 {
				return errDownstream
			}
			return nil
		})
	base := ib.clock.Now() // a whole second
	ib.clock.Advance(1500 * time.Nanosecond)
	kept := base.Add(time.Microsecond)
	ib.deliver(t, "evt_us_1", "invoice.paid", "in_us", 1756742400, idempotency.OutcomeQueued)
	r := normalize(ib.record(t, "evt_us_1"))
	require.Equal(t, kept, r.ReceivedAt, "received at %s", ib.clock.Now())
	require.Equal(t, kept, r.NextAttemptAt)
	require.Equal(t, []string{"evt_us_1"}, listIDs(t, ib.inbox, idempotency.InboxFilter{Until: base.Add(1200 * time.Nanosecond)}),
		"kept as received at %s, before Until %s", kept, base.Add(1200*time.Nanosecond))
	require.Empty(t, listIDs(t, ib.inbox, idempotency.InboxFilter{Since: base.Add(1200 * time.Nanosecond)}))
	st, err := ib.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, kept, st.OldestPending.UTC())

	ib.work(t, 1) // fails; due again at base+1.5µs+backoff = base+1m+3.2µs, kept as base+1m+3µs
	r = normalize(ib.record(t, "evt_us_1"))
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Equal(t, kept, r.AttemptedAt)
	due := base.Add(time.Minute + 3*time.Microsecond)
	require.Equal(t, due, r.NextAttemptAt)

	ib.clock.Advance(time.Minute + 1600*time.Nanosecond) // base+1m+3.1µs: at the kept time, and before the given one
	ib.work(t, 1)
	r = normalize(ib.record(t, "evt_us_1"))
	require.Equal(t, idempotency.InboxProcessed, r.State, "due at %s, now %s", r.NextAttemptAt, ib.clock.Now())
	require.Equal(t, due, r.AttemptedAt)
	require.Equal(t, due, r.FinishedAt)
	rec := requireEvent(t, b, "evt_us_1", idempotency.OutcomeProcessed)
	require.Equal(t, kept, rec.ReceivedAt.UTC())

	// The ledger and the guards, on the synchronous path.
	_, err = b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_us_sync", EventType: "invoice.paid", ReceivedAt: base.Add(2500 * time.Nanosecond)},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := tx.Guard(ctx, "us", "k")
			return err
		})
	require.NoError(t, err)
	rec = requireEvent(t, b, "evt_us_sync", idempotency.OutcomeProcessed)
	require.Equal(t, base.Add(2*time.Microsecond), rec.ReceivedAt.UTC())
	require.Equal(t, rec.ProcessedAt.Truncate(time.Microsecond), rec.ProcessedAt, "processed at %s", rec.ProcessedAt)
	g, ok, err := b.Store.LookupGuard(ctxT(t), "us", "k")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, g.ClaimedAt.Truncate(time.Microsecond), g.ClaimedAt, "claimed at %s", g.ClaimedAt)
}
