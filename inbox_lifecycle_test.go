package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
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

// NewInbox accepts only a Lease with which Run can apply an event. A
// worker gives back an event whose lease has less than Timeout left when
// it takes it from Run's queue, and the event is leased afresh; a Lease
// that exceeds Timeout by less than the time from a lease to a worker
// taking the event (microseconds) had every event given back and leased
// again, forever, and none applied, while NewInbox accepted it. The
// margin is what matters, not Timeout, which the attempt runs under: 10 s
// leaves room for its decode and claim on a busy machine, where 1 s
// could run out.
func TestInboxLeaseLeavesRoomToStartAnAttempt(t *testing.T) {
	t.Parallel()
	const timeout = 10 * time.Second
	for _, margin := range []time.Duration{time.Microsecond, time.Second} {
		m := newMemInbox(t, idempotency.InboxConfig{})
		in, err := idempotency.NewInbox(m.store, m.hs, idempotency.InboxConfig{
			Timeout: timeout, Lease: timeout + margin, Logger: discardLogger(),
		})
		if err != nil {
			require.ErrorContains(t, err, "InboxConfig.Lease", "margin %s", margin)
			require.Less(t, margin, time.Second, "a Lease a second longer than Timeout is refused")
			continue
		}
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		a := idempotencytest.Deliver(h, memInboxPayload(t, "evt_margin", "in_margin", memCreated), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
		applied := assert.Eventually(t, func() bool {
			r, _, err := in.Lookup(t.Context(), "evt_margin")
			return err == nil && r.State == idempotency.InboxProcessed
		}, 30*time.Second, time.Millisecond, "Lease = Timeout + %s: accepted by NewInbox, but Run never applies the event", margin)
		stop()
		require.NoError(t, recv(t, done, "Run"))
		if !applied {
			t.FailNow()
		}
	}
}
