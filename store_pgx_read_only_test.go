package idempotency_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxReadOnlyDatabase: on a database that cannot store (a standby, or
// a role or database whose default_transaction_read_only is on) no
// delivery is answered 2xx unless nothing was to be stored, both modes
// answer 503 store_unavailable, and the error says why. The synchronous
// Handler answered 500 processing_failed, as if the handler had failed,
// and its Result was OutcomeFailed, not ErrStoreUnavailable.
func TestPgxReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	cfg, err := pgxpool.ParseConfig(pgtest.WithOptions(b.db.URL, "-c default_transaction_read_only=on"))
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	ro, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: b.db.Schema})
	require.NoError(t, err)

	require.NoError(t, ro.Ping(t.Context()), "it answers: idemctl reads a standby")
	require.NoError(t, ro.Migrate(t.Context()), "nothing to create")

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil })
	var results []idempotency.Result
	h, err := idempotency.NewHandler(ro, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { results = append(results, r) }})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_ro_sync", "in_ro", "acct_1"), testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.Equal(t, `{"error":"store_unavailable"}`, a.Body)
	require.Len(t, results, 1)
	require.ErrorIs(t, results[0].Err, idempotency.ErrStoreUnavailable)
	require.ErrorContains(t, results[0].Err, "read-only transaction")

	in, err := idempotency.NewInbox(ro, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a = idempotencytest.Deliver(ih, invoicePayload(t, "evt_ro_inbox", "in_ro", "acct_1"), testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	_, err = in.WorkDue(t.Context())
	require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)

	var stored int
	require.NoError(t, b.db.Pool.QueryRow(t.Context(),
		`SELECT (SELECT count(*) FROM idempotency_events) + (SELECT count(*) FROM idempotency_inbox)`).Scan(&stored))
	require.Zero(t, stored)
}
