package idempotency_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverContinuesACheckpointWhoseSinceLeftTheWindow: the same
// command run again (the runbook's "fix the cause and run it again") more
// than 30 days after its Since continues its checkpoint, whose last event
// is within the window: the window is measured from where the run starts.
// Without a checkpoint that far, such a Since is refused. The godoc and
// README said a Since that old was refused in every case.
func TestRecoverContinuesACheckpointWhoseSinceLeftTheWindow(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	first := time.Now().Add(-12 * 24 * time.Hour)
	since := first.Add(-25 * 24 * time.Hour)
	for i := range 3 {
		f.add(snapshotEvent(t, fmt.Sprintf("evt_left_%d", i), "invoice.paid", fmt.Sprintf("in_left_%d", i), first.Add(-time.Duration(3-i)*time.Hour).Unix()))
	}
	h := app.handler(t)
	opts := idempotency.RecoverOptions{Since: since, Checkpoint: "left", Now: func() time.Time { return first }}
	rep, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.Equal(t, 3, rep.Processed)

	f.add(snapshotEvent(t, "evt_left_3", "invoice.paid", "in_left_3", time.Now().Add(-time.Hour).Unix()))
	opts.Now = time.Now // Since is now 37 days old; the checkpoint's last event 12
	rep, err = h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.True(t, rep.Resumed)
	require.Equal(t, 1, rep.Processed)

	opts.Checkpoint = ""
	_, err = h.Recover(t.Context(), client, opts)
	require.ErrorIs(t, err, idempotency.ErrRecoveryWindow)
}
