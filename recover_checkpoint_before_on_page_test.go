package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverSavesTheCheckpointBeforeOnPage: when OnPage is called, the
// page's events are handled and the checkpoint saved at the last of them,
// as RecoverOptions.OnPage says: a process that ends there continues
// after that page. A checkpoint saved before the page's events were
// handled stood a page behind.
func TestRecoverSavesTheCheckpointBeforeOnPage(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 50)
		h := app.handler(t)
		pages := 0
		opts := o.opts
		opts.Checkpoint, opts.PageSize, opts.RequestsPerSecond = "on-page", 10, 100
		opts.OnPage = func(rep idempotency.RecoverReport) {
			pages++
			last, found, err := idempotency.RecoveryCheckpoint(t.Context(), app.store, "on-page")
			require.NoError(t, err)
			require.True(t, found, "page %d: a checkpoint is saved", pages)
			require.Equal(t, o.events[rep.Listed-1].id, last, "page %d: the checkpoint stands at the last event handled", pages)
		}
		rep, err := h.Recover(t.Context(), o.client, opts)
		require.NoError(t, err)
		require.Equal(t, 50, rep.Listed)
		require.GreaterOrEqual(t, pages, 5)
	})
}
