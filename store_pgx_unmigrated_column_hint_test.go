package idempotency_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxStoreMissingColumnSaysToMigrate: a schema migrated by an earlier
// release lacks the columns a later migration adds (011's redrives). The
// store's statements then fail with PostgreSQL's `column "redrives" does
// not exist`, which names no table: the cure that a missing table's error
// gets was left off, and the inbox's listing and its workers' lease
// failed without saying to run Migrate. Both now say it, nothing stored
// is changed, and a handler's own missing column is its error as before.
func TestPgxStoreMissingColumnSaysToMigrate(t *testing.T) {
	t.Parallel()
	db := newPgDB(t)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(t.Context()))
	inboxTable := pgx.Identifier{db.Schema, "idempotency_inbox"}.Sanitize()
	migrations := pgx.Identifier{db.Schema, "idempotency_migrations"}.Sanitize()
	_, err = db.Pool.Exec(t.Context(), `ALTER TABLE `+inboxTable+` DROP COLUMN redrives, DROP COLUMN redriven_at`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(t.Context(), `DELETE FROM `+migrations+` WHERE version = 11`)
	require.NoError(t, err)

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_old_schema", nil), testSecret)
	require.Equal(t, 200, a.Status)

	const cure = "run PgxStore.Migrate on it first"
	_, err = in.List(t.Context(), idempotency.InboxFilter{})
	require.ErrorContains(t, err, `column "redrives" does not exist`)
	require.ErrorContains(t, err, cure)
	require.ErrorContains(t, err, `"`+db.Schema+`"`)
	_, err = in.WorkDue(t.Context())
	require.ErrorContains(t, err, cure)

	var state string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT state FROM `+inboxTable+` WHERE event_id = 'evt_old_schema'`).Scan(&state))
	require.Equal(t, "pending", state)

	// A handler's own statement naming a column its table lacks is the
	// handler's error, as it was.
	require.NoError(t, store.Migrate(t.Context()))
	_, err = store.Run(t.Context(), idempotency.Claim{EventID: "evt_own_column", EventType: "invoice.paid"},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := idempotency.PgxTx(tx).Exec(ctx, `SELECT no_such_column FROM pg_class`)
			return err
		})
	require.ErrorContains(t, err, `column "no_such_column" does not exist`)
	require.NotContains(t, err.Error(), cure)
}

// TestPgxStoreHandlerMissingColumnWithoutAConn: a handler's own statement
// naming a column its table lacks is its error as it is, without the cure
// for the store's missing columns, on a PgxBeginner of the user's own
// whose pgx.Tx has no *pgx.Conn to give (a tracing wrapper), where the
// store cannot tell the handler's error by its connection.
func TestPgxStoreHandlerMissingColumnWithoutAConn(t *testing.T) {
	t.Parallel()
	b := newPgBackendOn(t, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return connlessBegin{p} })
	out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_connless_column", EventType: "invoice.paid"},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := idempotency.PgxTx(tx).Exec(ctx, `SELECT no_such_column FROM pg_class`)
			return err
		})
	require.Equal(t, idempotency.OutcomeFailed, out)
	require.ErrorContains(t, err, `column "no_such_column" does not exist`)
	require.NotContains(t, err.Error(), "PgxStore.Migrate")
}
