package idempotency_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxForgetRefusesRowAttemptedAgainWhileItWaited: Forget of a
// processed event whose inbox row another transaction holds waits for it;
// when that transaction attempted the event again (a redrive and a new
// attempt, final again), Forget refuses with ErrUnfinished rather than
// forget the event that attempt has just applied.
func TestPgxForgetRefusesRowAttemptedAgainWhileItWaited(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	p := newPgInbox(t, b, idempotency.InboxConfig{})
	p.deliver(t, "evt_again", "in_again", 0)
	_, err := p.inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessed, p.record(t, "evt_again").State)

	ctx := t.Context()
	other, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after the commit: nothing to do
	table := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	tag, err := other.Exec(ctx, `UPDATE `+table+` SET attempt = attempt + 1, attempted_at = attempted_at + interval '1 minute' WHERE event_id = 'evt_again'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	done := make(chan error, 1)
	go func() {
		_, err := p.inbox.Forget(context.Background(), "evt_again")
		done <- err
	}()
	var early error
	answered := false
	for !answered && b.waiting(t) == 0 {
		select {
		case early = <-done:
			answered = true
		default:
		}
	}
	require.False(t, answered, "Forget answered before the attempt committed: %v", early)
	require.NoError(t, other.Commit(ctx))
	require.ErrorIs(t, recv(t, done, "Forget"), idempotency.ErrUnfinished)
	_, ok, err := b.store.LookupEvent(ctx, "evt_again")
	require.NoError(t, err)
	require.True(t, ok, "the claim of the attempt is kept")
}
