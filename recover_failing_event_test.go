package idempotency_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverEventThatKeepsFailingHoldsTheCheckpointInEveryRun: an event
// whose handler fails in every run holds its checkpoint before it in every
// run: each lists it and the events after it again (duplicates), fails it
// again, and the checkpoint does not move on. Once its last event is
// older than RecoveryWindow the checkpoint is refused with
// ErrRecoveryWindow. A handler that returns Skip for the event lets the
// next run move on past it.
func TestRecoverEventThatKeepsFailingHoldsTheCheckpointInEveryRun(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 100)
		f, client, events := o.f, o.client, o.events
		failing := events[40]
		require.Equal(t, "invoice.paid", failing.typ)
		skip := false
		app.fail = func(id string) error {
			switch {
			case id != failing.id:
				return nil
			case skip:
				return idempotency.Skip("refunded by hand")
			}
			return errors.New("the accounting service refuses it")
		}
		h := app.handler(t)
		opts := o.opts
		opts.Checkpoint = "keeps-failing"
		first, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.Equal(t, []string{failing.id}, first.FailedIDs)
		require.Equal(t, events[39].id, first.LastEventID)

		calls := len(f.calls())
		second, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		requireListedFromOverlap(t, f.calls()[calls], events[39].created)
		require.True(t, second.Resumed)
		require.Equal(t, 61, second.Listed, "the checkpoint's event, the failed event and every event after it, again")
		require.Equal(t, []string{failing.id}, second.FailedIDs)
		require.Equal(t, len(ids(events[41:], "invoice.paid")), second.Duplicate)
		require.Equal(t, events[39].id, second.LastEventID, "the checkpoint stays before the failed event")

		late := opts
		later := time.Unix(events[39].created, 0).Add(idempotency.RecoveryWindow + 2*time.Minute)
		late.Now = func() time.Time { return later }
		_, err = h.Recover(t.Context(), client, late)
		require.ErrorIs(t, err, idempotency.ErrRecoveryWindow)
		require.Contains(t, err.Error(), `checkpoint "keeps-failing"`)

		skip = true
		third, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.Equal(t, 1, third.Skipped)
		require.Zero(t, third.Failed)
		require.Equal(t, events[99].id, third.LastEventID, "past the skipped event")
		app.requireAppliedOnce(t, ids(append(events[:40:40], events[41:]...), "invoice.paid"))
	})
}
