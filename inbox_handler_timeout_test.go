package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxHandlerTimeoutIsErrTimeout: an inbox Handler whose insert of
// the event runs out of Config.Timeout (here, waiting for a lock another
// session holds on the inbox) answers 503 and reports an error that
// wraps ErrTimeout, as a synchronous delivery's timeout does. It was
// reported as the bare context.DeadlineExceeded (wrapped in "inbox
// enqueue" on PostgreSQL), which no sentinel of the package matched.
// PostgreSQL only: the memory store's insert cannot be held up.
func TestInboxHandlerTimeoutIsErrTimeout(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	in, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	var res idempotency.Result
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: 200 * time.Millisecond,
		OnResult: func(r idempotency.Result) { res = r }})
	require.NoError(t, err)

	lock, err := b.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(context.Background()) }()
	_, err = lock.Exec(t.Context(), `LOCK TABLE idempotency_inbox IN SHARE MODE`) // holds up every insert
	require.NoError(t, err)

	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_insert_timeout", "in_1", "acct_1"), testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeUnavailable, res.Outcome)
	require.ErrorIs(t, res.Err, idempotency.ErrTimeout, "Result.Err: %v", res.Err)
	require.Contains(t, res.Err.Error(), "(storing the event in the inbox, Config.Timeout)", "names what timed out, and the setting")
	require.ErrorIs(t, res.Err, context.DeadlineExceeded)
}
