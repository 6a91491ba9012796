package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxStopGivesBackTheQueueBesideAnAttempt: when Run stops while
// only IngestWorkers apply (deliveries just came), every worker drains the
// queue at once: the events queued behind an attempt still in flight are
// given back, pending, while it runs, for another process to take, not
// after it ends. (No test failed when Run's shutdown left the gate at
// IngestWorkers: the queue waited for the attempt in flight.)
func TestInboxStopGivesBackTheQueueBesideAnAttempt(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	entered := make(chan string, 4)
	release := make(chan struct{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		entered <- ev.ID
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Workers: 2, IngestWorkers: 1, Now: clock.Now, Logger: discardLogger(),
		PollInterval: time.Hour, PollOnly: true, ShutdownTimeout: time.Minute,
	})
	require.NoError(t, err)
	deliver := invoiceDeliverer(t, in)
	for _, id := range []string{"evt_a1", "evt_a2", "evt_a3"} {
		deliver(id)
	}
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	first := recv(t, entered, "the first attempt")
	require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond)
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, 3, st.Counts[idempotency.InboxProcessing], "one attempt, two queued behind it")

	stop()
	require.Eventually(t, func() bool {
		st, err := in.Stats(t.Context())
		require.NoError(t, err)
		return st.Counts[idempotency.InboxPending] == 2
	}, 10*time.Second, time.Millisecond, "the queued events given back while %s runs", first)
	close(release)
	require.NoError(t, recv(t, done, "Run"))
	rec, ok, err := in.Lookup(t.Context(), first)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxProcessed, rec.State, "the attempt in flight finished")
	require.Empty(t, entered, "no attempt started after the stop")
}
