package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Run's workers find the work their own attempts make due without waiting
// for a poll (an hour away here, and no notification between processes):
// the object's next event once the event before it is applied, and a retry
// whose backoff is shorter than PollInterval once that backoff has passed.
// On both stores.
func TestInboxRunWakesForWorkItsAttemptsMakeDue(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const backoff = time.Second
			hold := make(chan struct{})
			applied := make(chan string, 4)
			var mu sync.Mutex
			runs := map[string]int{}
			var failedAt, retriedAt time.Time // evt_wake_retry's two attempts, read in the handler
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				mu.Lock()
				runs[ev.ID]++
				n := runs[ev.ID]
				mu.Unlock()
				switch {
				case ev.ID == "evt_wake_1":
					select { // held until Run's loop waits, with nothing due
					case <-hold:
					case <-ctx.Done():
						return ctx.Err()
					}
				case ev.ID == "evt_wake_retry" && n == 1:
					mu.Lock()
					failedAt = time.Now()
					mu.Unlock()
					return errors.New("down for a moment")
				case ev.ID == "evt_wake_retry":
					mu.Lock()
					retriedAt = time.Now()
					mu.Unlock()
				}
				applied <- ev.ID
				return nil
			})
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Workers: 1, IngestWorkers: 1, PollInterval: time.Hour, PollOnly: true, Logger: discardLogger(),
				Backoff: func(int) time.Duration { return backoff },
			})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			// Two events of one object: the second is due only once the
			// first is applied.
			for _, id := range []string{"evt_wake_1", "evt_wake_2"} {
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_wake", "acct_1"), testSecret).Outcome)
			}
			ctx, stop := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- in.Run(ctx) }()
			defer func() {
				stop()
				require.NoError(t, recv(t, done, "Run"))
			}()
			require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond,
				"Run waits, evt_wake_2 held back by evt_wake_1")
			close(hold)
			require.Equal(t, "evt_wake_1", recv(t, applied, "evt_wake_1's attempt"))
			require.Equal(t, "evt_wake_2", recv(t, applied, "evt_wake_2, due once evt_wake_1 is applied"))

			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_wake_retry", "in_wake_retry", "acct_1"), testSecret).Outcome)
			require.Equal(t, "evt_wake_retry", recv(t, applied, "the retry, due after its backoff"))
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, 2, runs["evt_wake_retry"])
			// Timed from the handler's own failure: the worker may run it
			// before Deliver returns here. The stores keep times to the
			// microsecond, as PostgreSQL does, hence the one microsecond.
			require.GreaterOrEqual(t, retriedAt.Sub(failedAt), backoff-time.Microsecond, "not retried before its backoff")
		})
	}
}
