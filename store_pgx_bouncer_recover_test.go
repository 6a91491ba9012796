package idempotency_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxBouncerRecover runs Handler.Recover behind PgBouncer in
// transaction pooling mode, as the webhooks and the inbox are: a run
// stopped after its first page keeps its checkpoint, which another
// process's run continues (it lists again only the RecoveryOverlap behind
// the checkpoint), and a last run finds nothing new. Every handled event is applied once, those
// delivered before the run are duplicates, and no prepared statement is
// mixed up between clients.
func TestPgxBouncerRecover(t *testing.T) {
	t.Parallel()
	a := newBouncerApp(t, 2, idempotency.PgxConfig{})
	hs := make([]*idempotency.Handler, len(a.stores))
	for i, store := range a.stores {
		var err error
		hs[i], err = idempotency.NewHandler(store, a.hs, a.config())
		require.NoError(t, err)
	}
	o := newOutage(t, 300)
	delivered := 0
	for i := 0; i < len(o.events); i += 7 {
		if o.events[i].typ == "invoice.paid" {
			require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(hs[1], o.events[i].raw, testSecret).Outcome)
			delivered++
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	opts := idempotency.RecoverOptions{Since: o.opts.Since, Checkpoint: "bouncer", PageSize: 100, OnPage: func(idempotency.RecoverReport) { cancel() }}
	first, err := hs[0].Recover(ctx, o.client, opts)
	require.ErrorIs(t, err, context.Canceled)
	require.Positive(t, first.Listed)
	require.Less(t, first.Listed, len(o.events), "stopped after its first page")
	require.Equal(t, o.events[first.Listed-1].id, first.LastEventID)

	opts.OnPage = nil
	calls := len(o.f.calls())
	second, err := hs[1].Recover(t.Context(), o.client, opts)
	require.NoError(t, err)
	require.True(t, second.Resumed, "the other process continues the checkpoint")
	at := slices.IndexFunc(o.events, func(ev outageEvent) bool { return ev.id == first.LastEventID })
	requireListedFromOverlap(t, o.f.calls()[calls], o.events[at].created)
	again := overlapped(o.events, first.LastEventID)
	require.Equal(t, len(o.events)+len(again), first.Listed+second.Listed, "only the overlap listed twice")
	require.Equal(t, delivered+len(ids(again, "invoice.paid")), first.Duplicate+second.Duplicate)
	require.Equal(t, len(o.handled)-delivered, first.Processed+second.Processed)

	last, err := hs[0].Recover(t.Context(), o.client, opts)
	require.NoError(t, err)
	again = overlapped(o.events, o.events[len(o.events)-1].id)
	require.Equal(t, len(again), last.Listed, "nothing new but the overlap: %+v", last)
	require.Equal(t, last.Listed, last.Duplicate+last.Ignored, "%+v", last)
	require.Equal(t, o.events[len(o.events)-1].id, last.LastEventID)

	require.Equal(t, len(o.handled), a.ledgerSize(t))
	require.Equal(t, 100*len(o.handled), a.credits(t, ""), "one credit per invoice")
	a.mu.Lock()
	for _, id := range o.handled {
		require.Equal(t, 1, a.runs[id], "handler runs of %s", id)
	}
	a.mu.Unlock()
	var saved string
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT "last_event_id" FROM `+
		pgx.Identifier{a.db.Schema, "idempotency_recovery"}.Sanitize()+` WHERE "name" = 'bouncer'`).Scan(&saved))
	require.Equal(t, o.events[len(o.events)-1].id, saved)
	require.NotContains(t, a.logs.String(), "prepared statement")
}
