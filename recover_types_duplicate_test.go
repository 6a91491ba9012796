package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverTypesListedTwiceAreOneFilter: RecoverOptions.Types is a set:
// a type listed twice selects what it selects once, and a checkpoint
// started with it continues with the type listed once.
func TestRecoverTypesListedTwiceAreOneFilter(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now().Truncate(time.Second)
	f.add(snapshotEvent(t, "evt_twice", "invoice.paid", "in_twice", now.Add(-time.Hour).Unix()))
	h := app.handler(t)
	run := func(types ...string) (idempotency.RecoverReport, error) {
		return h.Recover(t.Context(), client, idempotency.RecoverOptions{
			Since: now.Add(-2 * time.Hour), Types: types, Checkpoint: "twice", Now: func() time.Time { return now },
		})
	}
	rep, err := run("invoice.paid", "invoice.paid")
	require.NoError(t, err)
	require.Equal(t, 1, rep.Processed)
	rep, err = run("invoice.paid")
	require.NoError(t, err, "the same filter")
	require.True(t, rep.Resumed)
}
