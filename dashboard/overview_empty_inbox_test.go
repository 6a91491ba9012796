package dashboard_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestOverviewSaysWhyTheInboxIsEmpty: on the store of a service in
// synchronous mode, whose events are in the ledger alone, the overview's
// zeros come with a paragraph saying why the inbox holds nothing, and where
// the events are; once the inbox holds a row, a task of a
// synchronous-mode service's or an event, the paragraph is gone. On both
// stores.
func TestOverviewSaysWhyTheInboxIsEmpty(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, open(t), dashboard.Config{})
			_, err := f.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync", EventType: "invoice.paid", ObjectID: "in_sync"},
				func(context.Context, idempotency.Tx) error { return nil })
			require.NoError(t, err)

			status, body := f.get(t, "")
			require.Equal(t, http.StatusOK, status)
			contains(t, body, `<p class="muted" id="empty-inbox">The inbox holds no event or task: `+
				`a service in synchronous mode (a Handler without an Inbox) stores no event in it: `+
				`its applied events are in the ledger alone (search an event&#39;s id), and a delivery that failed nowhere `+
				`(answered 5xx, Stripe sends it again); an inbox-mode one holds none received in the last Retention.Payloads (7 days by default).</p>`)

			// One with tasks: its inbox holds its tasks alone, and is
			// not empty.
			hs := idempotency.NewHandlers()
			receipt := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
			_, err = f.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sync_task", EventType: "invoice.paid", ObjectID: "in_sync_task"},
				func(ctx context.Context, tx idempotency.Tx) error {
					_, err := receipt.Enqueue(ctx, tx, "in_sync_task", "in_sync_task")
					return err
				})
			require.NoError(t, err)
			_, body = f.get(t, "")
			notContains(t, body, `id="empty-inbox"`)

			f.deliver(t, "charge.refunded", "evt_queued", "ch_queued")
			_, body = f.get(t, "")
			notContains(t, body, `id="empty-inbox"`)
		})
	}
}
