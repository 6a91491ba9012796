package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestCheckpointMismatchErrorHoldsAnAccountAndEveryType: a
// *CheckpointMismatchError holds the connected account the checkpoint was
// started with, each of its types, sorted, and nil for a checkpoint of
// every type. (No test failed when its Account was always "", its Types
// one string of the types joined by commas, or [""] for every type.)
func TestCheckpointMismatchErrorHoldsAnAccountAndEveryType(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	client := f.serve(t)
	idempotency.On(app.hs, "charge.failed", func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
	h := app.handler(t)
	since := time.Now().Add(-time.Hour).Truncate(time.Second)
	f.add(accountEvent(t, "evt_cmo_0", "acct_cmo", since.Add(time.Minute).Unix()))
	f.add(snapshotEvent(t, "evt_cmo_1", "invoice.paid", "in_cmo_1", since.Add(time.Minute).Unix()))

	of := idempotency.RecoverOptions{Since: since, Account: "acct_cmo", Types: []string{"invoice.paid", "charge.failed"}, Checkpoint: "cmo_account"}
	every := idempotency.RecoverOptions{Since: since, Checkpoint: "cmo_every"}
	for _, opts := range []idempotency.RecoverOptions{of, every} {
		_, err := h.Recover(t.Context(), client, opts)
		require.NoError(t, err, opts.Checkpoint)
	}

	of.Since = of.Since.Add(-time.Minute)
	_, err := h.Recover(t.Context(), client, of)
	me, ok := errors.AsType[*idempotency.CheckpointMismatchError](err)
	require.True(t, ok, "%T: %v", err, err)
	require.Equal(t, "acct_cmo", me.Account)
	require.Equal(t, []string{"charge.failed", "invoice.paid"}, me.Types)

	every.Types = []string{"invoice.paid"}
	_, err = h.Recover(t.Context(), client, every)
	me, ok = errors.AsType[*idempotency.CheckpointMismatchError](err)
	require.True(t, ok, "%T: %v", err, err)
	require.Empty(t, me.Account)
	require.Nil(t, me.Types)
}
