package idempotency_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestTaskGivenBackAsItWas: a task leased and given back untried (Run
// stopping, or too little of its lease left) goes back as the run before
// the lease left it, on either store: failed after a failed run, with
// that run's attempt, start and error, due at once, and counted and
// listed among the failed tasks; pending after a run that snoozed, at the
// attempt before that run's, with its start and the failed run's error.
// Either way it is due at once: at the give-back, not when it came due
// before its lease.
func TestTaskGivenBackAsItWas(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clock := idempotencytest.NewClock(start)
			hs := idempotency.NewHandlers()
			var runs atomic.Int32
			task := idempotency.NewTask(hs, "receipt", func(context.Context, idempotency.TaskRun[struct{}]) error {
				switch runs.Add(1) {
				case 1:
					return errors.New("mail API: 503")
				case 2:
					return idempotency.Snooze(time.Minute)
				}
				return nil
			})
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, Logger: discardLogger(), Backoff: func(int) time.Duration { return time.Minute },
			})
			require.NoError(t, err)
			_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_receipt", EventType: "invoice.paid", ReceivedAt: start},
				func(ctx context.Context, tx idempotency.Tx) error {
					_, err := task.Enqueue(ctx, tx, "k", struct{}{})
					return err
				})
			require.NoError(t, err)
			id := task.ID("k")
			requireRecord := func(state idempotency.InboxState, attempt int, attemptedAt time.Time) {
				t.Helper()
				r, found, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.True(t, found)
				require.Equal(t, state, r.State)
				require.Equal(t, attempt, r.Attempt)
				require.True(t, attemptedAt.Equal(r.AttemptedAt), "AttemptedAt %s, want %s", r.AttemptedAt, attemptedAt)
				require.Equal(t, "mail API: 503", r.LastError, "the failed run's error")
				require.True(t, r.LeaseUntil.IsZero(), "no lease held")
			}
			work := func() {
				t.Helper()
				n, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			giveBack := func() {
				t.Helper()
				// Leased a minute past its due time: given back, it is due
				// at the give-back, not at that time.
				clock.Advance(2 * time.Minute)
				ls, err := idempotency.LeaseInbox(t.Context(), inbox, 1)
				require.NoError(t, err)
				require.Len(t, ls, 1)
				idempotency.ReleaseLeased(t.Context(), inbox, ls[0])
				r, _, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.True(t, clock.Now().Equal(r.NextAttemptAt), "NextAttemptAt %s, want %s: due at once", r.NextAttemptAt, clock.Now())
			}

			work()
			requireRecord(idempotency.InboxFailed, 1, start)
			giveBack()
			requireRecord(idempotency.InboxFailed, 1, start)
			st, err := inbox.Stats(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, st.TaskCounts[idempotency.InboxFailed])
			listed, err := inbox.List(t.Context(), idempotency.InboxFilter{Kind: idempotency.KindTask, States: []idempotency.InboxState{idempotency.InboxFailed}})
			require.NoError(t, err)
			require.Len(t, listed, 1, "listed among the failed tasks")

			work() // snoozes
			snoozed := clock.Now()
			requireRecord(idempotency.InboxPending, 1, snoozed)
			giveBack()
			requireRecord(idempotency.InboxPending, 1, snoozed)

			work()
			r, _, err := inbox.Lookup(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, r.State)
			require.Equal(t, 2, r.Attempt, "the failed run, then this one; neither the snooze nor a give-back counts")
			require.EqualValues(t, 3, runs.Load())
		})
	}
}
