package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxConnectionsReturnToThePool drives every way a run can end, on the
// one-round-trip begin path, and requires the pool to have every
// connection back.
func TestPgxConnectionsReturnToThePool(t *testing.T) {
	t.Parallel()
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			t.Parallel()
			pdb := newPgDB(t)
			store, err := idempotency.NewPgxStore(pdb.Pool, idempotency.PgxConfig{Schema: pdb.Schema, IsoLevel: iso, RecentClaims: -1})
			require.NoError(t, err)
			require.NoError(t, store.Migrate(t.Context()))
			ctx := t.Context()
			c := func(id string) idempotency.Claim { return idempotency.Claim{EventID: id, EventType: "x"} }
			ok := func(context.Context, idempotency.Tx) error { return nil }

			out, err := store.Run(ctx, c("evt_1"), ok)
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			for range 30 {
				out, err = store.Run(ctx, c("evt_1"), ok)
				require.NoError(t, err)
				require.Equal(t, idempotency.OutcomeDuplicate, out)
			}
			for range 30 {
				_, err = store.Run(ctx, c("evt_fail"), func(context.Context, idempotency.Tx) error { return errors.New("x") })
				require.Error(t, err)
			}
			// A skip after the handler's SQL failed: the savepoint recovers the
			// aborted transaction.
			out, err = store.Run(ctx, c("evt_skip"), func(ctx context.Context, tx idempotency.Tx) error {
				_, err := idempotency.PgxTx(tx).Exec(ctx, "SELECT 1/0")
				require.Error(t, err)
				return idempotency.Skip("r")
			})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeSkipped, out)

			cctx, cancel := context.WithCancel(ctx)
			cancel()
			_, err = store.Run(cctx, c("evt_cancel"), ok)
			require.Error(t, err, "cancelled before the claim")

			held, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				_, _ = store.Run(ctx, c("evt_held"), func(context.Context, idempotency.Tx) error {
					close(held)
					<-release
					return errors.New("rollback")
				})
			}()
			<-held
			for range 5 {
				tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				_, err = store.Run(tctx, c("evt_held"), ok)
				cancel()
				require.Error(t, err, "timed out while the claim waits")
			}
			close(release)
			<-done

			missing, err := idempotency.NewPgxStore(pdb.Pool, idempotency.PgxConfig{Schema: "nope_" + pdb.Schema})
			require.NoError(t, err)
			for range 30 {
				_, err = missing.Run(ctx, c("evt_bad"), ok)
				require.Error(t, err, "a failed batch")
			}
			require.Eventually(t, func() bool { return pdb.Pool.Stat().AcquiredConns() == 0 }, 10*time.Second, 10*time.Millisecond,
				"acquired: %d", pdb.Pool.Stat().AcquiredConns())
			out, err = store.Run(ctx, c("evt_after"), ok)
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
		})
	}
}
