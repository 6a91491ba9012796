package idempotency_test

import (
	"cmp"
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

// TestInboxHungAttemptReportedWhenTheNextEndedOtherwise: a task's worker
// hangs past its lease at attempt 1, not the last; the next lease takes
// the task over at attempt 2, which reports attempt 1 (failed) as it
// starts, then either fails at its last attempt (dead-lettered at
// attempt 2) or snoozes (pending again, the row back at attempt 1). The
// hung worker's end must not reach OnResult again: the row's state alone
// (dead_letter) or its attempt alone (1) does not say which lease
// reported what. The hung worker's process may count fewer attempts (a
// deploy that raised MaxAttempts): its attempt 1, its last, snoozed over
// by the taker, is no redrive although the row shows attempt 1 under
// another lease time. The taker's process may run ahead of the hung
// worker's clock: the hung worker's lease has not ended by its own clock
// when it returns, and the row (pending at its attempt, with the error
// the take-over writes) still says a lease reported it. Both stores, on a
// fake clock. (No test failed when that row was not read so, and the
// hung worker's own clock decided.)
func TestInboxHungAttemptReportedWhenTheNextEndedOtherwise(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		maxAttempts int
		next        error // what the taker's run returns
		state       idempotency.InboxState
		hungMax     int           // the hung worker's process's MaxAttempts; 0: maxAttempts
		ahead       time.Duration // how far the taker's clock runs ahead of the hung worker's
	}{
		{"dead-lettered", 2, errors.New("the provider refuses"), idempotency.InboxDeadLetter, 0, 0},
		{"snoozed", 3, idempotency.Snooze(time.Hour), idempotency.InboxPending, 0, 0},
		{"snoozed after its last", 3, idempotency.Snooze(time.Hour), idempotency.InboxPending, 1, 0},
		{"snoozed by a process ahead", 3, idempotency.Snooze(time.Hour), idempotency.InboxPending, 0, 30 * time.Second},
	} {
		for name, store := range bothStores(t) {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				hs := idempotency.NewHandlers()
				var runs atomic.Int32
				task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
					if runs.Add(1) == 1 {
						return c.next // the taker's run; the hung worker's returns later
					}
					return nil
				})
				idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
					_, err := task.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
					return err
				})
				var rs misuseResults
				process := func(maxAttempts int, ahead time.Duration) *idempotency.Inbox {
					in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
						Now: func() time.Time { return clock.Now().Add(ahead) }, MaxAttempts: maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second,
						Logger: discardLogger(), OnResult: rs.add,
					})
					require.NoError(t, err)
					return in
				}
				inbox, old := process(c.maxAttempts, c.ahead), process(cmp.Or(c.hungMax, c.maxAttempts), 0)
				h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
				require.NoError(t, err)
				require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_hung", "in_hung", "acct_1"), testSecret).Outcome)

				hung, err := idempotency.LeaseInbox(t.Context(), old, 1)
				require.NoError(t, err)
				require.Len(t, hung, 1)
				clock.Advance(time.Minute - c.ahead) // the hung worker's lease ends by the taker's clock
				n, err := inbox.WorkDue(t.Context()) // the taker: attempt 2
				require.NoError(t, err)
				require.Equal(t, 1, n)
				rec, ok, err := inbox.Lookup(t.Context(), task.ID("in_hung"))
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, c.state, rec.State)

				idempotency.ApplyLeased(t.Context(), old, hung[0]) // the hung worker returns
				rs.mu.Lock()
				got := make([]idempotency.Result, len(rs.all))
				for i, r := range rs.all {
					got[i] = idempotency.Result{Attempt: r.Attempt, Outcome: r.Outcome}
				}
				rs.mu.Unlock()
				require.Len(t, got, 2, "attempt 1 and attempt 2, by the taker: %v", got)
				require.Equal(t, idempotency.Result{Attempt: 1, Outcome: idempotency.OutcomeFailed}, got[0], "the hung worker's attempt, reported as the taker started")
				require.Equal(t, 2, got[1].Attempt)
			})
		}
	}
}
