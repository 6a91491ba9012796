package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// What Run and the ingest do in the background on PostgreSQL besides the
// workers' leases and attempts (the notifications of other processes,
// the listen connection, the clock check) meets a panic in the code of
// the store's connections (a pgx tracer) as its error: it does not end
// the process, and the pool gets its connection back.

// tracedLoggedInbox is an inbox with cfg on a pool whose connections
// trace with tr, on the process's clock, whose invoice.paid handler does
// nothing, its Handler, its pool and its logs.
func tracedLoggedInbox(t *testing.T, tr *panickingTracer, cfg idempotency.InboxConfig) (*idempotency.Inbox, http.Handler, *pgxpool.Pool, *syncBuffer) {
	t.Helper()
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr })
	b := newPgBackendIn(t, db, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error { return nil })
	logger, logs := testLogger()
	cfg.Logger = logger
	in, err := idempotency.NewInbox(b.store, hs, cfg)
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	return in, h, db.Pool, logs
}

// storeConnsPanickedText is what a PanicError of the store's connections
// says panicked.
const storeConnsPanickedText = "the store's connections panicked (a pgx tracer, a pool's hook or the PgxBeginner)"

// deliverQueued delivers an invoice.paid eventID to h, which queues it.
func deliverQueued(t *testing.T, h http.Handler, eventID string) {
	t.Helper()
	a := idempotencytest.Deliver(h, invoicePayload(t, eventID, "in_"+eventID, "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
}

// requireConnsGivenBack requires every connection of pool to be given
// back, or closed, soon.
func requireConnsGivenBack(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	require.Eventually(t, func() bool { return pool.Stat().AcquiredConns() == 0 }, 10*time.Second, time.Millisecond,
		"the connections are given back to the pool")
}

// A panic in a user's pgx tracer as the ingest notifies other processes
// (on a goroutine of the library's) is the notification's error, logged
// at Debug as a failed one is; the next delivery's notification goes out
// (and panics again). It went up that goroutine and ended the process.
func TestPgxInboxTracerPanicInTheNotifyIsItsError(t *testing.T) {
	t.Parallel()
	tr := newPanickingTracer("pg_notify")
	tr.again = []string{"pg_notify"}
	_, h, pool, logs := tracedLoggedInbox(t, tr, idempotency.InboxConfig{})
	tr.armed.Store(true)
	deliverQueued(t, h, "evt_notify_panic")
	recv(t, tr.panicked, "the tracer's panic")
	deliverQueued(t, h, "evt_notify_panic_again")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "tracer: boom again") }, 10*time.Second, time.Millisecond,
		"the next notification goes out:\n%s", logs)
	require.Contains(t, logs.String(), "notify failed")
	require.Contains(t, logs.String(), storeConnsPanickedText+": tracer: boom")
	requireConnsGivenBack(t, pool)
}

// A panic in a user's pgx tracer as Run's listen connection starts to
// listen is the listen's error: Run says it lost the notification
// connection, polls meanwhile, and listens again. It went up the listen
// loop's goroutine and ended the process.
func TestPgxInboxTracerPanicInTheListenIsItsError(t *testing.T) {
	t.Parallel()
	tr := newPanickingTracer("LISTEN")
	in, _, pool, logs := tracedLoggedInbox(t, tr, idempotency.InboxConfig{PollInterval: 10 * time.Millisecond})
	tr.armed.Store(true)
	stop := runInbox(t, in)
	recv(t, tr.panicked, "the tracer's panic")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "listening for notifications again") }, 10*time.Second, time.Millisecond,
		"Run listens again:\n%s", logs)
	require.Contains(t, logs.String(), "lost the notification connection")
	require.Contains(t, logs.String(), "inbox listen: "+storeConnsPanickedText+": tracer: boom")
	stop()
	requireConnsGivenBack(t, pool)
}

// A panic in a user's pgx tracer as Run compares its clock with the
// database's is the clock check's error, which tells nothing, as a
// failed one: Run goes on and applies what is delivered. It went up
// Run's goroutine (the caller's) and ended the process.
func TestPgxInboxTracerPanicInTheClockCheckIsItsError(t *testing.T) {
	t.Parallel()
	tr := newPanickingTracer("clock_timestamp")
	in, h, pool, _ := tracedLoggedInbox(t, tr, idempotency.InboxConfig{PollOnly: true, PollInterval: 10 * time.Millisecond})
	tr.armed.Store(true)
	stop := runInbox(t, in)
	recv(t, tr.panicked, "the tracer's panic")
	deliverQueued(t, h, "evt_clock_panic")
	require.Eventually(t, func() bool {
		rec, _, err := in.Lookup(t.Context(), "evt_clock_panic")
		return err == nil && rec.State == idempotency.InboxProcessed
	}, 10*time.Second, time.Millisecond, "Run applies the event")
	stop()
	requireConnsGivenBack(t, pool)
}
