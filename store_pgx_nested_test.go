package idempotency_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// The pseudo-nested transaction PgxTx's Begin returns is pgx's own: its
// statements skip enter (the seal and the one-statement-at-a-time check).
// Kept past its handler (a goroutine left behind), it writes into the next
// event's transaction that a chained commit began on the same connection,
// which then commits it with that other event.
func TestNestedTxJoinsNextChainedEvent(t *testing.T) {
	t.Parallel()
	b, p, leased := chainInbox(t, 2)
	var kept pgx.Tx
	var keptErr error
	p.write = func(ctx context.Context, tx idempotency.Tx, eventID string) error {
		switch eventID {
		case "evt_chain_1":
			var err error
			kept, err = idempotency.PgxTx(tx).Begin(ctx)
			return err
		case "evt_chain_2":
			// Stands for evt_chain_1's goroutine, still running now.
			_, keptErr = kept.Exec(context.Background(), `INSERT INTO counters (name, value) VALUES ('kept', 1)`)
		}
		return nil
	}
	require.Equal(t, 1, idempotency.ApplyChained(t.Context(), p.inbox, leased...))
	require.ErrorIs(t, keptErr, idempotency.ErrTxDone, "evt_chain_1's nested transaction used during evt_chain_2")
	require.Equal(t, 0, b.get(t, "kept"), "evt_chain_1's SQL committed with evt_chain_2")
}
