package idempotency_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverCheckpointMismatchSaysWhatToDo: a service that recovers at
// start-up with Types: hs.EventTypes() and one checkpoint name is refused
// with ErrCheckpointMismatch once a release adds a handler, at every start.
// The error named both sets of types and stopped there; it now says how
// to go on: with the options the checkpoint was started with, or under
// another checkpoint name. So does the refusal of an earlier Since.
func TestRecoverCheckpointMismatchSaysWhatToDo(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	now := time.Now()
	for i := range 3 {
		f.add(snapshotEvent(t, fmt.Sprintf("evt_mismatch_%d", i), "invoice.paid", fmt.Sprintf("in_mismatch_%d", i), now.Add(-time.Duration(3-i)*time.Minute).Unix()))
	}
	opts := idempotency.RecoverOptions{Since: now.Add(-time.Hour), Types: app.hs.EventTypes(), Checkpoint: "startup"}
	_, err := app.handler(t).Recover(t.Context(), client, opts)
	require.NoError(t, err)

	// The next release handles one type more: its Handlers, on the same
	// store.
	next := idempotency.NewHandlers()
	for _, typ := range []string{"invoice.paid", "customer.created"} {
		idempotency.On(next, typ, func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
	}
	h, err := idempotency.NewHandler(app.store, next, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	opts.Types = next.EventTypes()
	_, err = h.Recover(t.Context(), client, opts)
	require.ErrorIs(t, err, idempotency.ErrCheckpointMismatch)
	require.ErrorContains(t, err, `"invoice.paid"`)
	require.ErrorContains(t, err, "continue it with the options it was started with, or name another checkpoint for these")

	opts.Types = []string{"invoice.paid"}
	opts.Since = opts.Since.Add(-time.Minute)
	_, err = h.Recover(t.Context(), client, opts)
	require.ErrorIs(t, err, idempotency.ErrCheckpointMismatch)
	require.ErrorContains(t, err, "continue it with a Since at or after its own, or name another checkpoint for these")
}
