package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxRecoverCheckpointStoreErrors: PgxStore's errors of a checkpoint
// stop Recover as they say. A checkpoint that cannot be read (its table
// gone) fails the run before any request, nothing applied: a run that took
// it for absent would list again from Since. (No test failed when the read
// error was dropped and the run started from Since.) A save refused as the
// server's read-only answer is ErrStoreUnavailable, as the ledger's writes
// are, so that the caller knows to run it again. (No test failed when the
// save's error was not ErrStoreUnavailable.)
func TestPgxRecoverCheckpointStoreErrors(t *testing.T) {
	t.Parallel()
	scene := func(t *testing.T) (*service, *fakeStripe, idempotency.RecoverOptions, string) {
		app := newService(t, "postgres")
		f := newFakeStripe()
		now := time.Now()
		addPaidEvents(t, f, "cp_err", 2, now)
		opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Checkpoint: "cp-errors", RequestsPerSecond: 100}
		return app, f, opts, pgx.Identifier{app.pg.db.Schema, "idempotency_recovery"}.Sanitize()
	}
	t.Run("load", func(t *testing.T) {
		t.Parallel()
		app, f, opts, table := scene(t)
		_, err := app.pg.db.Pool.Exec(t.Context(), `ALTER TABLE `+table+` RENAME TO "idempotency_recovery_gone"`)
		require.NoError(t, err)
		rep, err := app.handler(t).Recover(t.Context(), f.serve(t), opts)
		require.ErrorContains(t, err, "loading recovery checkpoint")
		require.Zero(t, rep.Requests)
		require.Empty(t, f.calls())
		require.Empty(t, app.appliedCounts(t))
	})
	t.Run("save", func(t *testing.T) {
		t.Parallel()
		app, f, opts, table := scene(t)
		refuse := pgx.Identifier{app.pg.db.Schema, "refuse_checkpoint_write"}.Sanitize()
		_, err := app.pg.db.Pool.Exec(t.Context(), `CREATE FUNCTION `+refuse+`() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'read-only for the test' USING ERRCODE = 'read_only_sql_transaction'; END $$;
CREATE TRIGGER "refuse_checkpoint_write" BEFORE INSERT OR UPDATE ON `+table+` FOR EACH ROW EXECUTE FUNCTION `+refuse+`()`)
		require.NoError(t, err)
		rep, err := app.handler(t).Recover(t.Context(), f.serve(t), opts)
		require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
		require.ErrorContains(t, err, "saving recovery checkpoint")
		require.Equal(t, 2, rep.Processed, "%+v", rep)
		_, found, err := idempotency.RecoveryCheckpoint(t.Context(), app.store, "cp-errors")
		require.NoError(t, err)
		require.False(t, found, "no checkpoint stored")
	})
}
