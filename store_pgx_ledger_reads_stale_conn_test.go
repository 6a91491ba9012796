package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxLedgerReadsOnStaleConnection: the pool hands one of the ledger's
// reads (LookupEvent, LookupGuard, ListEvents: what idemctl show and a
// user's checks call) a connection whose session ended while it sat idle,
// as after a failover or pg_terminate_backend. The read goes to another
// connection, as the inbox's reads do (TestPgxInboxReadsOnStaleConnection),
// instead of failing with the terminated session's error (store
// unavailable: write failed: broken pipe, seen in
// TestPgxCurrentFaultSyncSessionsTerminated).
func TestPgxLedgerReadsOnStaleConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, pool, endSession := stalePool(t, "ledger")
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		read func(ctx context.Context) error
	}{
		{"LookupEvent", func(ctx context.Context) error { _, _, err := store.LookupEvent(ctx, "evt_stale"); return err }},
		{"LookupGuard", func(ctx context.Context) error {
			_, _, err := store.LookupGuard(ctx, "invoice-credit", "in_stale")
			return err
		}},
		{"ListEvents", func(ctx context.Context) error {
			_, err := store.ListEvents(ctx, idempotency.EventFilter{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endSession()
			require.NoError(t, tc.read(ctx))
		})
	}
}
