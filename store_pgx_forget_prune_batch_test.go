package idempotency_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxForgetDuringAPruneBatch: Forget of a processed event whose inbox
// row a prune batch is deleting (its DELETE holds the row until the batch
// commits) waits for the batch, then forgets the event: its claim is
// deleted. It was refused at once with ErrUnfinished, "still to be
// applied", which idemctl forget and the dashboard then told the operator,
// for an event that was processed, and its claim was kept.
func TestPgxForgetDuringAPruneBatch(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{})
	p.deliver(t, "evt_pruned", "in_pruned", 0)
	_, err := p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessed, p.record(t, "evt_pruned").State)

	// A prune batch's statement, in a transaction not yet committed.
	ctx := t.Context()
	batch, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer batch.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after the commit: nothing to do
	table := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	tag, err := batch.Exec(ctx, `DELETE FROM `+table+` WHERE event_id IN (SELECT event_id FROM `+table+`
WHERE event_id = 'evt_pruned' AND finished_at IS NOT NULL FOR UPDATE SKIP LOCKED)`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	type forgot struct {
		found bool
		err   error
	}
	done := make(chan forgot, 1)
	go func() {
		found, err := p.inbox.Forget(context.Background(), "evt_pruned")
		done <- forgot{found, err}
	}()
	// Forget waits for the batch's row lock (or has answered already).
	var early *forgot
	for early == nil && b.waiting(t) == 0 {
		select {
		case f := <-done:
			early = &f
		default:
		}
	}
	require.NoError(t, batch.Commit(ctx))
	f := early
	if f == nil {
		got := recv(t, done, "Forget")
		f = &got
	}
	require.NoError(t, f.err, "a processed event whose row a prune deletes is not still to be applied")
	require.True(t, f.found)
	_, ok, err := b.store.LookupEvent(ctx, "evt_pruned")
	require.NoError(t, err)
	require.False(t, ok, "its claim is forgotten")
}
