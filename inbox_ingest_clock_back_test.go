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

// A clock stepped back past the last delivery (NTP stepping it, by
// minutes) does not hold IngestWorkers' limit for as long as the step:
// the quiet time after the last delivery counts from when Run saw the
// clock before it.
func TestInboxIngestLimitAfterTheClockWentBack(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Workers: 2, IngestWorkers: 1, Now: clock.Now, Logger: discardLogger(), PollInterval: time.Hour,
	})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_back", "in_back", "acct_1"), testSecret).Outcome)
	clock.Advance(-5 * time.Minute)
	stop := runInbox(t, inbox)
	defer stop()
	require.Eventually(t, func() bool { return idempotency.InboxIdle(inbox) }, 10*time.Second, time.Millisecond)
	_, limit := idempotency.InboxGate(inbox)
	require.Equal(t, 1, limit, "within the quiet time, on a clock that stands still")
	clock.Advance(300 * time.Millisecond)
	require.Eventually(t, func() bool {
		_, limit := idempotency.InboxGate(inbox)
		return limit == 2
	}, 10*time.Second, time.Millisecond, "all workers a quiet time after the step, not 5 minutes")
}
