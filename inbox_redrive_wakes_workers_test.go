package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Redrive wakes Run's workers: a redriven event is applied at once, not
// at the next poll (here an hour away).
func TestInboxRedriveWakesRun(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var fixed atomic.Bool
	applied := make(chan string, 1)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if !fixed.Load() {
			return errors.New("down")
		}
		applied <- ev.ID
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, MaxAttempts: 1, PollInterval: time.Hour, Workers: 1, IngestWorkers: 1, Logger: discardLogger(),
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_rd_wake", "in_rd_wake", "acct_1"), testSecret).Outcome)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, _, err := in.Lookup(t.Context(), "evt_rd_wake")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	defer func() {
		stop()
		require.NoError(t, recv(t, done, "Run"))
	}()
	require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits for a wake or its next poll")
	fixed.Store(true)
	n, err = in.Redrive(t.Context(), idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "evt_rd_wake", recv(t, applied, "the redriven event's attempt"))
}
