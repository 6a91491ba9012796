package idempotency_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxClosedPoolIsUnavailable: a delivery that reaches a PgxStore
// whose pool is closed (a shutdown that closed the pool before the HTTP
// server stopped serving) is answered 503 store_unavailable, in
// synchronous mode and at the inbox's ingest, and its Result says the
// store was unavailable: pgxpool's "closed pool" read as a handler's
// failure, 500, with the runbook's "a handler fails" to follow instead
// of "the database".
func TestPgxClosedPoolIsUnavailable(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	var results []idempotency.Result
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { results = append(results, r) }}
	sync, err := idempotency.NewHandler(b.store, hs, cfg)
	require.NoError(t, err)
	inbox, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{})
	require.NoError(t, err)
	ingest, err := inbox.Handler(cfg)
	require.NoError(t, err)

	b.db.Pool.Close()
	for name, h := range map[string]http.Handler{"synchronous": sync, "inbox": ingest} {
		results = nil
		a := idempotencytest.Deliver(h, invoicePayload(t, "evt_closed_pool", "in_closed_pool", ""), testSecret)
		require.Equal(t, http.StatusServiceUnavailable, a.Status, "%s: %+v", name, a)
		require.JSONEq(t, `{"error":"store_unavailable"}`, a.Body, name)
		require.Len(t, results, 1, name)
		require.Equal(t, idempotency.OutcomeUnavailable, results[0].Outcome, name)
		require.ErrorIs(t, results[0].Err, idempotency.ErrStoreUnavailable, name)
	}
}
