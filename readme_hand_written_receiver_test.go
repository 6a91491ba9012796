package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// claimOld is the README's wrapper (Moving a live endpoint onto it): it
// claims the hand-written receiver's processed_events beside the ledger
// and runs the handler it wraps unless the old code applied the event.
func claimOld[T any](fn idempotency.EventFunc[T]) idempotency.EventFunc[T] {
	return func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[T]) error {
		tag, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO processed_events (id) VALUES ($1) ON CONFLICT DO NOTHING`, ev.ID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return idempotency.Skip("applied by the hand-written receiver")
		}
		return fn(ctx, tx, ev)
	}
}

// TestHandWrittenReceiverClaimedBothWays: a handler wrapped in the
// README's claimOld applies an event once whichever side claims it first.
// An id the old code applied, or holds in a transaction in flight, is
// skipped once that commits; an id the handler holds makes the old code's
// plain INSERT wait, then fail on the key. Held past the delivery's
// Timeout, the event fails, and is skipped when it comes again once the
// old code committed. The wrapped handler keeps what it does: an invoice
// without an account is skipped with its own reason, not failed. An event
// only the old code received is not in the ledger: Forget reports false,
// and deleting its id from processed_events has it applied when it comes
// again.
func TestHandWrittenReceiverClaimedBothWays(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := newPgBackend(t, idempotency.PgxConfig{})
	_, err := b.db.Pool.Exec(ctx, `CREATE TABLE processed_events (id text PRIMARY KEY)`)
	require.NoError(t, err)
	claimed, release := make(chan struct{}), make(chan struct{})
	hs := idempotency.NewHandlers()
	credit := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.Object.Metadata["account_id"] == "" {
			return idempotency.Skip("invoice without metadata.account_id")
		}
		if ev.ID == "evt_hw_first" { // the old code's delivery comes now
			close(claimed)
			<-release
		}
		return b.add(ctx, tx, "credits", 1)
	}
	idempotency.On(hs, "invoice.paid", claimOld(credit))
	h, err := idempotency.NewHandler(b.store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	deliver := func(eventID string) idempotencytest.Answer {
		return idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret)
	}

	// Applied by the old code before the move.
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO processed_events (id) VALUES ('evt_hw_old')`)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeSkipped, deliver("evt_hw_old").Outcome)

	// Being applied by an old replica as the delivery comes.
	a := holdingWrite(t, b, `INSERT INTO processed_events (id) VALUES ('evt_hw_held')`, func() idempotencytest.Answer { return deliver("evt_hw_held") })
	require.Equal(t, idempotency.OutcomeSkipped, a.Outcome)
	require.Zero(t, b.get(t, "credits"))

	// The handler claims first; the old code checked the table before that
	// claim committed and inserts the id plainly.
	answered := make(chan idempotencytest.Answer, 1)
	go func() { answered <- deliver("evt_hw_first") }()
	recv(t, claimed, "the handler's claim")
	oldErr := make(chan error, 1)
	go func() {
		_, err := b.db.Pool.Exec(ctx, `INSERT INTO processed_events (id) VALUES ('evt_hw_first')`)
		oldErr <- err
	}()
	require.Eventually(t, func() bool { return b.waiting(t) == 1 }, 10*time.Second, time.Millisecond, "the old code's insert waits")
	close(release)
	require.Equal(t, idempotency.OutcomeProcessed, recv(t, answered, "the delivery").Outcome)
	var pgErr *pgconn.PgError
	require.True(t, errors.As(recv(t, oldErr, "the old code's insert"), &pgErr))
	require.Equal(t, "23505", pgErr.Code, "unique_violation")
	require.Equal(t, 1, b.get(t, "credits"))

	// Held by the old code past the delivery's Timeout: it fails, and
	// Stripe's retry, after the old code committed, is skipped.
	short, err := idempotency.NewHandler(b.store, hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	oldTx, err := b.db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = oldTx.Rollback(context.Background()) }()
	_, err = oldTx.Exec(ctx, `INSERT INTO processed_events (id) VALUES ('evt_hw_slow')`)
	require.NoError(t, err)
	a = idempotencytest.Deliver(short, invoicePayload(t, "evt_hw_slow", "in_evt_hw_slow", "acct_1"), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status)
	require.NoError(t, oldTx.Commit(ctx))
	require.Equal(t, idempotency.OutcomeSkipped, deliver("evt_hw_slow").Outcome)

	// The wrapped handler's own Skip.
	a = idempotencytest.Deliver(h, invoicePayload(t, "evt_hw_no_account", "in_hw_no_account", ""), testSecret)
	require.Equal(t, idempotency.OutcomeSkipped, a.Outcome)
	rec, ok, err := b.store.LookupEvent(ctx, "evt_hw_no_account")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "invoice without metadata.account_id", rec.SkipReason)

	// Applied by the old code alone, its effects undone by hand: the forget
	// finds nothing, the delete has it applied when it comes again.
	_, err = b.db.Pool.Exec(ctx, `INSERT INTO processed_events (id) VALUES ('evt_hw_only_old')`)
	require.NoError(t, err)
	forgotten, err := b.store.Forget(ctx, "evt_hw_only_old")
	require.NoError(t, err)
	require.False(t, forgotten)
	_, err = b.db.Pool.Exec(ctx, `DELETE FROM processed_events WHERE id = 'evt_hw_only_old'`)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, deliver("evt_hw_only_old").Outcome)
	require.Equal(t, 2, b.get(t, "credits"))
}
