package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxInboxAttemptAsksTheDatabase: an inbox attempt claims its event
// in the database, not from the process's memory of recent claims: an
// event this process applied synchronously, whose claim another replica
// has forgotten since, is applied again by the inbox's worker, not marked
// processed unapplied. (No test failed when inbox attempts were answered
// from that memory.)
func TestPgxInboxAttemptAsksTheDatabase(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{}) // RecentClaims on, as by default
	var applied atomic.Int32
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		applied.Add(1)
		return nil
	})
	payload := invoicePayload(t, "evt_asks_db", "in_asks_db", "acct_1")
	sync, err := idempotency.NewHandler(b.store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(sync, payload, testSecret).Outcome)
	require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(sync, payload, testSecret).Outcome)

	// Another replica forgets the event: its claim leaves the ledger.
	table := pgx.Identifier{b.db.Schema, "idempotency_events"}.Sanitize()
	tag, err := b.db.Pool.Exec(t.Context(), `DELETE FROM `+table+` WHERE event_id = 'evt_asks_db'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	in, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Now: idempotencytest.NewClock(time.Now()).Now, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, `{"outcome":"queued"}`, idempotencytest.Deliver(h, payload, testSecret).Body)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, found, err := in.Lookup(t.Context(), "evt_asks_db")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.EqualValues(t, 2, applied.Load(), "the forgotten event is applied again by the inbox")
}
