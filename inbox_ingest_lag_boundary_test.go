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

// TestInboxIngestLagIsLongerThanMaxIngestLag: an event taken after
// exactly MaxIngestLag due does not lift IngestWorkers' limit while
// deliveries come; one due a nanosecond longer does. (No test failed when
// an event due for MaxIngestLag itself counted as lagging.)
func TestInboxIngestLagIsLongerThanMaxIngestLag(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	const lag = 100 * time.Millisecond // shorter than the quiet after a delivery
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Workers: 2, IngestWorkers: 1, MaxIngestLag: lag, Now: clock.Now, Logger: discardLogger(),
		PollInterval: time.Hour, PollOnly: true,
	})
	require.NoError(t, err)
	deliver := invoiceDeliverer(t, in)
	limitWhenIdle := func() int {
		t.Helper()
		require.Eventually(t, func() bool {
			st, err := in.Stats(t.Context())
			require.NoError(t, err)
			return idempotency.InboxIdle(in) && st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing] == 0
		}, 10*time.Second, time.Millisecond)
		_, limit := idempotency.InboxGate(in)
		return limit
	}

	deliver("evt_old")
	clock.Advance(lag)
	deliver("evt_new") // deliveries still come
	stop := runInbox(t, in)
	require.Equal(t, 1, limitWhenIdle(), "evt_old was due for MaxIngestLag, not longer")
	stop()

	deliver("evt_later")
	clock.Advance(lag + time.Nanosecond)
	deliver("evt_last")
	stop = runInbox(t, in)
	require.Equal(t, 2, limitWhenIdle(), "evt_later was due for longer than MaxIngestLag")
	stop()
}
