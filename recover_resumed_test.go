package idempotency_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverResumedOnlyWhenTheRunStartsAfterTheCheckpoint: Resumed says
// that the run continued its checkpoint, listing from RecoveryOverlap
// before the checkpoint's last event. A run with a Since after that event
// starts at Since, as a new run, and one refused because the checkpoint's
// last event is beyond RecoveryWindow runs nothing: neither is resumed.
// Both reported Resumed true, as if they had continued where the
// checkpoint stood.
func TestRecoverResumedOnlyWhenTheRunStartsAfterTheCheckpoint(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now().Truncate(time.Second)
		for i := range 4 {
			f.add(snapshotEvent(t, fmt.Sprintf("evt_resumed_%d", i), "invoice.paid", fmt.Sprintf("in_resumed_%d", i), now.Add(-time.Duration(4-i)*time.Hour).Unix()))
		}
		h := app.handler(t)
		opts := idempotency.RecoverOptions{Since: now.Add(-5 * time.Hour), Checkpoint: "resumed", Now: func() time.Time { return now }}
		rep, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.False(t, rep.Resumed, "a new checkpoint")
		require.Equal(t, "evt_resumed_3", rep.LastEventID)

		f.add(snapshotEvent(t, "evt_resumed_4", "invoice.paid", "in_resumed_4", now.Add(-time.Minute).Unix()))
		calls := len(f.calls())
		rep, err = h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.True(t, rep.Resumed, "continued after the checkpoint's last event")
		requireListedFromOverlap(t, f.calls()[calls], now.Add(-time.Hour).Unix())
		require.Equal(t, 1, rep.Processed)

		later := opts
		later.Since = now.Add(-30 * time.Second) // after evt_resumed_4
		f.add(snapshotEvent(t, "evt_resumed_5", "invoice.paid", "in_resumed_5", now.Unix()))
		calls = len(f.calls())
		rep, err = h.Recover(t.Context(), client, later)
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(later.Since.Unix(), 10), f.calls()[calls].Query.Get("created[gte]"), "started at Since")
		require.Equal(t, 1, rep.Processed)
		require.False(t, rep.Resumed, "a Since after the checkpoint's last event starts a new run: %+v", rep)

		late := opts
		month := now.Add(idempotency.RecoveryWindow + time.Hour)
		late.Now = func() time.Time { return month }
		late.Since = now.Add(-time.Hour)
		rep, err = h.Recover(t.Context(), client, late)
		require.ErrorIs(t, err, idempotency.ErrRecoveryWindow)
		require.False(t, rep.Resumed, "refused before any request: %+v", rep)
	})
}
