package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxSchemaOffTheSearchPath: with PgxConfig.Schema a name that needs
// quoting (upper case, a quote, a dot) and the sessions' search_path on
// another schema that holds the store's tables too, every operation of
// both modes (Migrate, Run, the lookups, the inbox's ingest, lease,
// attempt, Stats, List, HeldBy, Redrive, Forget, Prune, Recover's
// checkpoint) reads and writes the configured schema alone.
func TestPgxSchemaOffTheSearchPath(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	decoy := newPgBackend(t, idempotency.PgxConfig{}) // the search_path's schema, migrated
	schema := `Billing"Q.` + decoy.db.Schema
	t.Cleanup(func() {
		_, _ = decoy.db.Pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
	})
	store, err := idempotency.NewPgxStore(decoy.db.Pool, idempotency.PgxConfig{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	b := &pgBackend{db: decoy.db, store: store} // its counters stay on the search_path
	app := &service{hs: idempotency.NewHandlers(), counts: map[string]int{}, pg: b, store: store}
	idempotency.On(app.hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[serviceObject]) error {
		if _, err := tx.Guard(ctx, "invoice", ev.Object.ID); err != nil {
			return err
		}
		if _, err := idempotency.CheckOrder(ctx, tx, "invoice", ev.Object.ID, ev.Created); err != nil {
			return err
		}
		return app.count(ctx, tx, ev.ID, nil)
	})

	h := app.handler(t)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, "evt_path_sync", "in_path_sync", "acct_1"), testSecret).Outcome)
	_, ok, err := store.LookupEvent(ctx, "evt_path_sync")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = store.LookupGuard(ctx, "invoice", "in_path_sync")
	require.NoError(t, err)
	require.True(t, ok)
	listed, err := store.ListEvents(ctx, idempotency.EventFilter{})
	require.NoError(t, err)
	require.Len(t, listed, 1)

	in, ih := app.inbox(t, nil)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, invoicePayload(t, "evt_path_inbox", "in_path_inbox", "acct_1"), testSecret).Outcome)
	n, err := in.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	st, err := in.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Counts[idempotency.InboxProcessed])
	recs, err := in.List(ctx, idempotency.InboxFilter{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	_, err = in.HeldBy(ctx, "evt_path_inbox")
	require.NoError(t, err)
	_, err = in.Redrive(ctx, idempotency.RedriveFilter{DryRun: true})
	require.NoError(t, err)
	forgot, err := in.Forget(ctx, "evt_path_inbox")
	require.NoError(t, err)
	require.True(t, forgot)
	_, err = store.Prune(ctx, idempotency.Retention{})
	require.NoError(t, err)
	f := newFakeStripe()
	client := f.serve(t)
	f.add(snapshotEvent(t, "evt_path_recovered", "customer.created", "cus_path", time.Now().Add(-time.Hour).Unix()))
	_, err = h.Recover(ctx, client, idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour), Checkpoint: "path"})
	require.NoError(t, err)

	rows := func(schema string) int {
		s := pgx.Identifier{schema}.Sanitize()
		var n int
		require.NoError(t, decoy.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+s+`.idempotency_events) + (SELECT count(*) FROM `+s+`.idempotency_guards)
     + (SELECT count(*) FROM `+s+`.idempotency_inbox) + (SELECT count(*) FROM `+s+`.idempotency_objects)
     + (SELECT count(*) FROM `+s+`.idempotency_order) + (SELECT count(*) FROM `+s+`.idempotency_recovery)`).Scan(&n))
		return n
	}
	require.Zero(t, rows(decoy.db.Schema), "nothing on the search_path's schema")
	require.Equal(t, 5, rows(schema), "the sync event's claim, guard and order record, the forgotten event's order record, the checkpoint")
}
