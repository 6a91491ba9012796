package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxReadsOnStaleConnection: the pool hands one of the inbox's
// reads a connection whose session ended while it sat idle (a failover,
// an operator's pg_terminate_backend, as while Run's workers apply
// events). The read goes to another connection, as Prune's and Forget's
// do, instead of failing with the terminated session's error
// (store unavailable: FATAL: terminating connection due to administrator
// command).
func TestPgxInboxReadsOnStaleConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, pool, endSession := stalePool(t, "operator")
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		read func(ctx context.Context) error
	}{
		{"Stats", func(ctx context.Context) error { _, err := in.Stats(ctx); return err }},
		{"List", func(ctx context.Context) error { _, err := in.List(ctx, idempotency.InboxFilter{}); return err }},
		{"Lookup", func(ctx context.Context) error { _, _, err := in.Lookup(ctx, "evt_stale"); return err }},
		{"Payload", func(ctx context.Context) error { _, _, err := in.Payload(ctx, "evt_stale"); return err }},
		{"HeldBy", func(ctx context.Context) error { _, err := in.HeldBy(ctx, "evt_stale"); return err }},
		{"RedriveDryRun", func(ctx context.Context) error {
			_, err := in.Redrive(ctx, idempotency.RedriveFilter{DryRun: true})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endSession()
			require.NoError(t, tc.read(ctx))
		})
	}
}
