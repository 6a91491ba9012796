package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// WorkDue on a context that is already done takes nothing: it returns the
// context's error, and no event is leased, attempted or charged an
// attempt. Before, it leased and attempted every due event on the dead
// context, recorded each attempt failed with "context canceled", and with
// a short backoff went on until the events were dead-lettered, returning
// nil.
func TestInboxWorkDueOnCancelledContextTakesNothing(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{Backoff: func(int) time.Duration { return 0 }, MaxAttempts: 3})
	m.deliverEvent(t, "evt_c1", "in_c1", 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	n, err := m.inbox.WorkDue(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, n, "attempts made on a cancelled context")
	rec := m.record(t, "evt_c1")
	require.Equal(t, idempotency.InboxPending, rec.State, rec.LastError)
	require.Zero(t, rec.Attempt, "attempts charged to the event")
	require.Zero(t, m.runsOf("evt_c1"), "handler runs")

	m.work(t, 1) // the next WorkDue applies it at its first attempt
	require.Equal(t, idempotency.InboxProcessed, m.record(t, "evt_c1").State)
	require.Equal(t, 1, m.record(t, "evt_c1").Attempt)
}

// A context that ends while WorkDue works (a deadline, a cancelled test)
// stops it after the attempt in flight: the events it leased with that one
// and did not start are given back, pending with no attempt charged.
func TestInboxWorkDueStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	m := newMemInbox(t, idempotency.InboxConfig{Workers: 4})
	ctx, cancel := context.WithCancel(t.Context())
	m.block = func(eventID string, n int) { cancel() } // the first attempt outlives the caller's deadline
	m.deliverEvent(t, "evt_s1", "in_s1", 0)
	m.deliverEvent(t, "evt_s2", "in_s2", 1)
	m.deliverEvent(t, "evt_s3", "in_s3", 2)
	n, err := m.inbox.WorkDue(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, n, "attempts made")
	started := 0
	for _, id := range []string{"evt_s1", "evt_s2", "evt_s3"} {
		rec := m.record(t, id)
		if m.runsOf(id) > 0 {
			started++
			continue
		}
		require.Equal(t, idempotency.InboxPending, rec.State, "%s: %s", id, rec.LastError)
		require.Zero(t, rec.Attempt, "%s was charged an attempt", id)
	}
	require.Equal(t, 1, started, "events whose handler ran")
}

// The same on PostgreSQL: the lease did not look at ctx there either.
func TestPgxInboxWorkDueOnCancelledContextTakesNothing(t *testing.T) {
	t.Parallel()
	p := newPgInbox(t, newPgBackend(t, idempotency.PgxConfig{}), idempotency.InboxConfig{})
	p.deliver(t, "evt_pc1", "in_pc1", 0)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	n, err := p.inbox.WorkDue(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, n, "attempts made on a cancelled context")
	rec := p.record(t, "evt_pc1")
	require.Equal(t, idempotency.InboxPending, rec.State, rec.LastError)
	require.Zero(t, rec.Attempt, "attempts charged to the event")

	n, err = p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec = p.record(t, "evt_pc1")
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, 1, rec.Attempt)
}
