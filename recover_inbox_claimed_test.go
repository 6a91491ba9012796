package idempotency_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverInboxCountsClaimedEventsDuplicate: through an Inbox's
// Handler, an event whose claim is in the ledger but which is no longer
// in the inbox (applied before the service moved to the inbox, or its
// finished row pruned after 7 days while the ledger keeps its id 45) is a
// duplicate, as RecoverReport.Duplicate says ("claimed before"), and is
// not stored again. It was counted queued ("stored pending, for the
// service's workers") and stored pending, for a worker to find it claimed.
func TestRecoverInboxCountsClaimedEventsDuplicate(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		o := newOutage(t, 40)
		client, events, handled := o.client, o.events, o.handled
		sync := app.handler(t)
		var applied []string
		for i := 0; i < len(events); i += 3 {
			if events[i].typ == "invoice.paid" {
				require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(sync, events[i].raw, testSecret).Outcome)
				applied = append(applied, events[i].id)
			}
		}

		in, h := app.inbox(t, nil)
		rep, err := h.Recover(t.Context(), client, o.opts)
		require.NoError(t, err)
		require.Equal(t, len(applied), rep.Duplicate, "%+v", rep)
		require.Equal(t, len(handled)-len(applied), rep.Queued)
		for _, id := range applied {
			_, stored, err := in.Lookup(t.Context(), id)
			require.NoError(t, err)
			require.False(t, stored, "%s is claimed: not stored again", id)
		}

		_, err = in.WorkDue(t.Context())
		require.NoError(t, err)
		app.requireAppliedOnce(t, handled)
	})
}
