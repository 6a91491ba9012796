package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxHungLastAttemptReportedOnce: a worker hangs holding the last
// attempt of an event or a task past its lease; the next lease
// dead-letters it and reports that attempt to OnResult (ErrLeaseExpired).
// When the hung worker returns, its write is fenced off, and its end must
// not be reported to OnResult a second time: OnResult is called once per
// attempt, and a metric counting its calls counted that attempt twice.
// The worker's end is still logged, and ends its Observer span marked as
// counted (ErrLeaseExpired, no state). Both stores, on a fake clock.
func TestInboxHungLastAttemptReportedOnce(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"event", "task"} {
		for name, store := range bothStores(t) {
			t.Run(kind+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				hs := idempotency.NewHandlers()
				task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
					return nil // the hung worker's call returns, too late
				})
				idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
					if kind == "task" {
						_, err := task.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
						return err
					}
					return errors.New("the event's handler fails") // returns late, too
				})
				var rs, observed misuseResults
				obs := &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
					return ctx, observed.add
				}}
				log, buf := testLogger()
				inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
					Now: clock.Now, MaxAttempts: 1, Lease: time.Minute, Timeout: 10 * time.Second, Logger: log, OnResult: rs.add,
					Observer: obs,
				})
				require.NoError(t, err)
				id := "evt_hung"
				if kind == "task" {
					h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
					require.NoError(t, err)
					require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_hung", "in_hung", "acct_1"), testSecret).Outcome)
					id = task.ID("in_hung")
				} else {
					h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
					require.NoError(t, err)
					require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_hung", "in_hung", "acct_1"), testSecret).Outcome)
				}

				hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
				require.NoError(t, err)
				require.Len(t, hung, 1)
				require.Equal(t, id, hung[0].EventID())
				clock.Advance(time.Minute)
				n, err := inbox.WorkDue(t.Context()) // the lease finds it expired at its last attempt
				require.NoError(t, err)
				require.Zero(t, n)
				rec, ok, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, idempotency.InboxDeadLetter, rec.State)
				res := rs.last(t)
				require.Equal(t, 1, res.Attempt)
				require.ErrorIs(t, res.Err, idempotency.ErrLeaseExpired)

				idempotency.ApplyLeased(t.Context(), inbox, hung[0]) // the hung worker returns
				rs.mu.Lock()
				reported := len(rs.all)
				rs.mu.Unlock()
				require.Equal(t, 1, reported, "attempt 1 of %s reported to OnResult %d times", id, reported)
				require.Contains(t, buf.String(), "lease lost to a newer attempt", "the hung worker's end is logged")
				// The Observer's done ends the hung attempt's span, marked as
				// counted by the lease: no state, Err wrapping ErrLeaseExpired.
				observed.mu.Lock()
				require.Len(t, observed.all, 2, "the lease's report and the hung worker's end")
				back := observed.all[1]
				observed.mu.Unlock()
				require.Equal(t, 1, back.Attempt)
				require.Empty(t, back.State, "its end was not recorded")
				require.ErrorIs(t, back.Err, idempotency.ErrLeaseExpired)
				rec, _, err = inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxDeadLetter, rec.State, "the fence kept its write out")
			})
		}
	}
}
