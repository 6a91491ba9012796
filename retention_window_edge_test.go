package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPruneWindowEdge: a finished inbox event is kept for exactly
// Retention.Payloads after it finished and deleted a microsecond later
// (what is older than the window goes), on both stores.
func TestPruneWindowEdge(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for name, s := range bothPruners(t) {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error { return nil })
		in, err := idempotency.NewInbox(s, hs, idempotency.InboxConfig{Now: idempotencytest.NewClock(at).Now, Logger: discardLogger()})
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, invoicePayload(t, "evt_edge", "in_edge", "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%s: %s", name, a.Body)
		_, err = in.WorkDue(t.Context())
		require.NoError(t, err)
		rec, ok, err := in.Lookup(t.Context(), "evt_edge")
		require.NoError(t, err)
		require.True(t, ok, name)
		require.True(t, rec.FinishedAt.Equal(at), "%s: finished at %s", name, rec.FinishedAt)

		edge := at.Add(idempotency.DefaultPayloadRetention)
		rep, err := s.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return edge }})
		require.NoError(t, err, name)
		require.Zero(t, rep.Events, "%s: kept for exactly the window", name)
		rep, err = s.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return edge.Add(time.Microsecond) }})
		require.NoError(t, err, name)
		require.Equal(t, 1, rep.Events, "%s: deleted once older than the window", name)
	}
}
