package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxStoreNotMigratedSaysSo: a store whose schema Migrate never ran on
// (a worker process started without it, another PgxConfig.Schema than the
// migrated one) failed every delivery and lease with PostgreSQL's
// `relation "....idempotency_inbox" does not exist`, which named no
// cure. The error now says to run Migrate on that schema, and still
// wraps pgx's *pgconn.PgError.
func TestPgxStoreNotMigratedSaysSo(t *testing.T) {
	t.Parallel()
	db := newPgDB(t)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	const cure = "run PgxStore.Migrate on it first"
	requireCure := func(what string, err error) {
		t.Helper()
		require.ErrorContains(t, err, "idempotency_", what)
		require.ErrorContains(t, err, cure, what)
		require.ErrorContains(t, err, `"`+db.Schema+`"`, what)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: %v", what, err)
	}

	_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_unmigrated", EventType: "invoice.paid"},
		func(context.Context, idempotency.Tx) error { return nil })
	requireCure("Run", err)

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	var delivery error
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { delivery = r.Err }})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_unmigrated", nil), testSecret)
	require.Equal(t, 503, a.Status)
	requireCure("the inbox's delivery", delivery)
	_, err = in.Stats(t.Context())
	requireCure("Stats", err)
	_, err = in.WorkDue(t.Context())
	requireCure("WorkDue", err)

	// The handler's own table missing is the handler's error, as it was.
	require.NoError(t, store.Migrate(t.Context()))
	_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_own_table", EventType: "invoice.paid"},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE accounts SET credits = 1`)
			return err
		})
	require.ErrorContains(t, err, `relation "accounts" does not exist`)
	require.NotContains(t, err.Error(), cure)
}
