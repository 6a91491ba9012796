package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A deploy rolled back to an earlier release meets a schema a newer one
// migrated: Migrate applies the versions it has, leaves the ones it does
// not know (and what they added) as they are, and the store works. The
// README's Migrate section promises this, as long as the newer
// migrations only add, which every migration so far does.
func TestPgxMigrateLeavesANewerReleasesSchema(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newPgDB(t)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	q := quoteIdent(db.Schema)

	// What a later release's migration 999 would do: add a nullable
	// column and a table, and record its version.
	_, err = db.Pool.Exec(ctx, `ALTER TABLE `+q+`.idempotency_inbox ADD COLUMN later_note text;
CREATE TABLE `+q+`.idempotency_later (id bigint PRIMARY KEY);
INSERT INTO `+q+`.idempotency_migrations (version, name) VALUES (999, 'later')`)
	require.NoError(t, err)
	newer := pgxCatalog(t, db.Pool, db.Schema)

	require.NoError(t, store.Migrate(ctx), "the earlier release starts")
	require.Equal(t, newer, pgxCatalog(t, db.Pool, db.Schema), "nothing the newer release made is changed")
	var versions []int32
	rows, err := db.Pool.Query(ctx, `SELECT version FROM `+q+`.idempotency_migrations ORDER BY version`)
	require.NoError(t, err)
	for rows.Next() {
		var v int32
		require.NoError(t, rows.Scan(&v))
		versions = append(versions, v)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, int32(999), versions[len(versions)-1])

	// The earlier release serves: a delivery is stored, applied once, and
	// its copy is a duplicate.
	applied := 0
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		applied++
		return nil
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	body := invoicePayload(t, "evt_after_rollback", "in_1", "acct_1")
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, body, testSecret).Outcome)
	n, err := in.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(h, body, testSecret).Outcome)
	require.Equal(t, 1, applied)
}
