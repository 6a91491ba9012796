package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPruneFromAfterCommitDeletesTheCommittedRow: once an event's
// transaction committed, its finished inbox row is the prune's, even while
// the AfterCommit funcs run, as PostgreSQL has released its row lock.
func TestPruneFromAfterCommitDeletesTheCommittedRow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, s := range bothPruners(t) {
		var rep idempotency.PruneReport
		var pruneErr error
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(_ context.Context, tx idempotency.Tx, _ idempotency.Event[map[string]any]) error {
			tx.AfterCommit(func(ctx context.Context) {
				later := at.Add(idempotency.DefaultPayloadRetention + time.Microsecond)
				rep, pruneErr = s.Prune(ctx, idempotency.Retention{Now: func() time.Time { return later }})
			})
			return nil
		})
		in, err := idempotency.NewInbox(s, hs, idempotency.InboxConfig{Now: idempotencytest.NewClock(at).Now, Logger: discardLogger()})
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, invoicePayload(t, "evt_prune_ac", "in_prune_ac", "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%s: %s", name, a.Body)
		_, err = in.WorkDue(t.Context())
		require.NoError(t, err)
		require.NoError(t, pruneErr, name)
		require.Equal(t, 1, rep.Events, "%s: the committed row pruned from AfterCommit: %+v", name, rep)
	}
}
