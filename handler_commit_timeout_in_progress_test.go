package idempotency_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestHandlerCommitCutByTimeoutInProgressAnswered503: Config.Timeout ran
// out while the COMMIT of an event's transaction was still in progress on
// the server (held by a deferred constraint trigger that waits for a
// lock), on a network that lost the cancel request pgx then sent, and it
// still was when the store's look-ups gave up. It may yet commit, so the
// delivery is answered 503 store_unavailable, as a COMMIT whose
// connection dropped is, not 500, which says that nothing was stored. It
// did commit: Stripe's resend is a duplicate, and the handler's write is
// there once.
func TestHandlerCommitCutByTimeoutInProgressAnswered503(t *testing.T) {
	t.Parallel()
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn { return cancelLostConn{conn} })
	// Time enough for the claim and the handler's write on a loaded
	// machine: the COMMIT must have gone out when it runs out.
	requireInProgressCommitAnswered503(t, db, 5*time.Second, nil)
}

// TestHandlerCommitLostInProgressAnswered503: the same for a COMMIT whose
// connection dropped just after it went out; the error says once that
// the store is unavailable.
func TestHandlerCommitLostInProgressAnswered503(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	db := newCommitCutDB(t, &armed, queryEndTracer(func(string) {}))
	requireInProgressCommitAnswered503(t, db, 30*time.Second, &armed)
}

// requireInProgressCommitAnswered503 delivers an event whose COMMIT a
// deferred trigger holds at a closed gate, its wait cut by timeout or,
// with armed, by the connection armed cuts once the handler wrote; it
// requires the 503 answer and report, then opens the gate and requires
// the event committed once, Stripe's resend a duplicate.
func requireInProgressCommitAnswered503(t *testing.T, db *pgtest.DB, timeout time.Duration, armed *atomic.Bool) {
	t.Helper()
	ctx := t.Context()
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	idempotency.SetPgxLostCommitWait(store, time.Second)
	_, err = db.Pool.Exec(ctx, `CREATE TABLE paid (invoice text)`)
	require.NoError(t, err)
	gate := newTriggerGate(t, db, "INSERT", "paid", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO paid VALUES ($1)`, ev.Object.ID)
		if armed != nil {
			armed.Store(true)
		}
		return err
	})
	var got hookResults
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: timeout, OnResult: got.add("OnResult", nil),
	})
	require.NoError(t, err)
	payload := invoicePayload(t, "evt_commit_in_progress", "in_commit_in_progress", "acct_1")

	a := idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.JSONEq(t, `{"error":"store_unavailable"}`, a.Body)
	res := got.all()["OnResult"]
	require.Len(t, res, 1)
	require.Equal(t, idempotency.OutcomeUnavailable, res[0].Outcome)
	require.ErrorIs(t, res[0].Err, idempotency.ErrStoreUnavailable)
	require.Equal(t, 1, strings.Count(res[0].Err.Error(), "store unavailable"), res[0].Err.Error())
	require.ErrorContains(t, res[0].Err, "still in progress")

	gate.open(t) // the COMMIT goes on
	faultAwait(t, time.Minute, "the COMMIT in progress to end", func() bool {
		_, ok, err := store.LookupEvent(ctx, "evt_commit_in_progress")
		return err == nil && ok
	})
	again := idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, idempotency.OutcomeDuplicate, again.Outcome, again.Body)
	var n int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM paid`).Scan(&n))
	require.Equal(t, 1, n)
}

// cancelLostConn is a connection to PostgreSQL on a network that loses
// every cancel request: the statement it would cancel goes on.
type cancelLostConn struct{ net.Conn }

func (c cancelLostConn) Write(b []byte) (int, error) {
	if isCancelRequest(b) {
		_ = c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}
