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

// TestInboxHungAttemptAcrossAMaxAttemptsChange: during a deploy that
// changes InboxConfig.MaxAttempts, the process whose worker hangs past
// its lease and the one whose lease takes the event over disagree on
// whether that attempt was the last. Each attempt still reaches OnResult
// once, reported by the lease that found it expired whatever it counts:
// the attempt that takes it over, as it starts (the deploy raised it), or
// the lease that dead-letters it (lowered); the hung worker, whose own
// MaxAttempts does not matter, reports nothing when it comes back. Both
// stores, on a fake clock, one OnResult for both processes.
func TestInboxHungAttemptAcrossAMaxAttemptsChange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		hung, taker int // the two processes' MaxAttempts
		want        []idempotency.Result
	}{
		{"raised", 1, 3, []idempotency.Result{
			{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed}, // by the attempt that took it over
			{Attempt: 2, Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed},
		}},
		{"lowered", 3, 1, []idempotency.Result{
			{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxDeadLetter}, // by the lease
		}},
	} {
		for name, store := range bothStores(t) {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
					return nil
				})
				var rs misuseResults
				process := func(maxAttempts int) *idempotency.Inbox {
					in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
						Now: clock.Now, MaxAttempts: maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second,
						Logger: discardLogger(), OnResult: rs.add,
					})
					require.NoError(t, err)
					return in
				}
				old, taker := process(c.hung), process(c.taker)
				h, err := old.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				require.NoError(t, err)
				require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_deploy", "in_deploy", "acct_1"), testSecret).Outcome)

				hung, err := idempotency.LeaseInbox(t.Context(), old, 1)
				require.NoError(t, err)
				require.Len(t, hung, 1)
				clock.Advance(time.Minute)
				_, err = taker.WorkDue(t.Context())
				require.NoError(t, err)
				idempotency.ApplyLeased(t.Context(), old, hung[0]) // the hung worker goes on

				rs.mu.Lock()
				got := make([]idempotency.Result, len(rs.all))
				for i, r := range rs.all {
					got[i] = idempotency.Result{Attempt: r.Attempt, Outcome: r.Outcome, State: r.State}
				}
				rs.mu.Unlock()
				require.Equal(t, c.want, got, "each attempt reported once")
			})
		}
	}
}
