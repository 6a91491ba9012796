package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxHungLastAttemptRedrivenOrForgottenReportedOnce: a worker hangs
// holding an event's last attempt past its lease; the next lease
// dead-letters it and reports that attempt. An operator then redrives the
// dead letter (and a worker may lease it again, at attempt 1 once more), or
// forgets the event, before the hung worker returns. The worker's end must
// still not reach OnResult a second time: the row no longer shows the dead
// letter at that attempt (pending at attempt 0, processing at attempt 1
// under a newer lease, or gone), which does not mean that no lease
// reported it. So at an attempt before the last (of 2), which the attempt
// that takes it over reports as it starts, before it fails and
// dead-letters the event: the worker is back past its own lease, which a
// lease may have taken over; also when the redriven event failed its
// attempt 1 again and was leased at attempt 2, the shape a failure of the
// worker's own recorded unanswered and leased again leaves. Both stores,
// on a fake clock.
func TestInboxHungLastAttemptRedrivenOrForgottenReportedOnce(t *testing.T) {
	t.Parallel()
	for _, maxAttempts := range []int{1, 2} {
		for _, meanwhile := range []string{"redriven", "redriven and leased again", "redriven, failed again and leased again", "forgotten"} {
			if maxAttempts == 1 && meanwhile == "redriven, failed again and leased again" {
				continue // no attempt 2
			}
			for name, store := range bothStores(t) {
				t.Run(fmt.Sprintf("of %d/%s/%s", maxAttempts, meanwhile, name), func(t *testing.T) {
					t.Parallel()
					clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
					hs := idempotency.NewHandlers()
					idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
						return errors.New("the event's handler fails") // returns late
					})
					var rs misuseResults
					inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
						Now: clock.Now, MaxAttempts: maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second,
						Logger: discardLogger(), OnResult: rs.add,
					})
					require.NoError(t, err)
					h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
					require.NoError(t, err)
					require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_hung", "in_hung", "acct_1"), testSecret).Outcome)

					hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
					require.NoError(t, err)
					require.Len(t, hung, 1)
					clock.Advance(time.Minute)
					_, err = inbox.WorkDue(t.Context()) // dead-letters and reports attempt 1, or takes it over and reports it
					require.NoError(t, err)
					res := rs.last(t)
					require.Equal(t, idempotency.InboxDeadLetter, res.State)
					if maxAttempts == 1 {
						require.ErrorIs(t, res.Err, idempotency.ErrLeaseExpired)
					}

					if meanwhile != "forgotten" {
						n, err := inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_hung"}})
						require.NoError(t, err)
						require.Equal(t, 1, n)
					}
					if meanwhile != "redriven" && meanwhile != "forgotten" {
						again, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
						require.NoError(t, err)
						require.Len(t, again, 1)
						require.Equal(t, 1, again[0].Attempt(), "the redrive's fresh budget")
						if meanwhile == "redriven, failed again and leased again" {
							idempotency.ApplyLeased(t.Context(), inbox, again[0]) // fails
							clock.Advance(time.Hour)                              // past its backoff
							again, err = idempotency.LeaseInbox(t.Context(), inbox, 1)
							require.NoError(t, err)
							require.Len(t, again, 1)
							require.Equal(t, 2, again[0].Attempt(), "the hung worker's attempt, and one")
						}
					}
					if meanwhile == "forgotten" {
						ok, err := inbox.Forget(t.Context(), "evt_hung")
						require.NoError(t, err)
						require.True(t, ok)
					}

					idempotency.ApplyLeased(t.Context(), inbox, hung[0]) // the hung worker returns
					rs.mu.Lock()
					var reported []idempotency.Result
					for _, r := range rs.all {
						reported = append(reported, idempotency.Result{Attempt: r.Attempt, Outcome: r.Outcome, State: r.State})
					}
					rs.mu.Unlock()
					want := []idempotency.Result{{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxDeadLetter}}
					if maxAttempts == 2 {
						want = []idempotency.Result{
							{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed}, // by the take-over
							{Attempt: 2, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxDeadLetter},
						}
					}
					if meanwhile == "redriven, failed again and leased again" {
						want = append(want, idempotency.Result{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed}) // after the redrive
					}
					require.Equal(t, want, reported, "each attempt of evt_hung reported to OnResult once")
				})
			}
		}
	}
}
