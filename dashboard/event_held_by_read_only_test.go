package dashboard_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestEventHeldByOnAReadOnlyConnection: on a connection that may not
// write, where Inbox.HeldBy cannot probe row locks, the event page still
// shows the record, says in a fixed sentence that what holds it back
// could not be read, and logs the error.
func TestEventHeldByOnAReadOnlyConnection(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	w := newFixture(t, db.NewStore(t, idempotency.PgxConfig{}), dashboard.Config{})
	w.deliver(t, "invoice.paid", "evt_ro_a", "in_ro")
	w.deliver(t, "invoice.paid", "evt_ro_b", "in_ro")

	pool, err := pgxpool.New(t.Context(), pgtest.WithOptions(db.URL, "-c default_transaction_read_only=on"))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	ro := newFixture(t, st, dashboard.Config{})

	status, body := ro.get(t, "event?id=evt_ro_b")
	require.Equal(t, http.StatusOK, status, body)
	contains(t, body, `id="state">pending<`)
	contains(t, body, `id="held-by-unread"`)
	notContains(t, body, "SQLSTATE", "the error goes to the log only")
	logged, err := os.ReadFile(ro.logPath)
	require.NoError(t, err)
	require.Contains(t, string(logged), "read-only transaction")
}
