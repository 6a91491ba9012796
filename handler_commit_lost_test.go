package idempotency_test

import (
	"bytes"
	"context"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// commitLostHandler is a synchronous Handler on store whose invoice.paid
// handler arms armed, and the Results given to OnResult and to the
// Observer's done.
func commitLostHandler(t *testing.T, store idempotency.Store, armed *atomic.Bool) (http.Handler, func() map[string][]idempotency.Result) {
	t.Helper()
	return reportingHandler(t, store, func(context.Context, idempotency.Tx) error {
		armed.Store(true)
		return nil
	})
}

// reportingHandler is a synchronous Handler on store whose invoice.paid
// handler is apply, and the Results given to OnResult and to the
// Observer's done. Its deliveries have 30 s (Config.Timeout), not the
// default 10 s: the tests answer them 503 or 200, never by a timeout, and a
// busy machine's claim may wait seconds for a connection.
func reportingHandler(t *testing.T, store idempotency.Store, apply func(context.Context, idempotency.Tx) error) (http.Handler, func() map[string][]idempotency.Result) {
	t.Helper()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, _ idempotency.Event[*stripe.Invoice]) error {
		return apply(ctx, tx)
	})
	var got hookResults
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: 30 * time.Second, OnResult: got.add("OnResult", nil),
		Observer: &idempotency.Observer{Delivery: func(ctx context.Context, _ *http.Request) (context.Context, func(idempotency.Result)) {
			return ctx, got.add("Observer", nil)
		}},
	})
	require.NoError(t, err)
	return h, got.all
}

// hookResults are the Results given to each named hook.
type hookResults struct {
	mu  sync.Mutex
	got map[string][]idempotency.Result
}

// add is a hook, named name, that keeps the Results keep accepts (all
// with a nil keep).
func (h *hookResults) add(name string, keep func(idempotency.Result) bool) func(idempotency.Result) {
	return func(r idempotency.Result) {
		if keep != nil && !keep(r) {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.got == nil {
			h.got = map[string][]idempotency.Result{}
		}
		h.got[name] = append(h.got[name], r)
	}
}

// all is a copy of the Results kept so far, by hook.
func (h *hookResults) all() map[string][]idempotency.Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.got)
}

// requireReported requires each of OnResult and the Observer to have been
// told outcomes, in order.
func requireReported(t *testing.T, got map[string][]idempotency.Result, outcomes ...idempotency.Outcome) {
	t.Helper()
	require.Len(t, got, 2)
	for name, rs := range got {
		var seen []idempotency.Outcome
		for _, r := range rs {
			seen = append(seen, r.Outcome)
		}
		require.Equal(t, outcomes, seen, name)
	}
}

// TestHandlerCommitLostAnsweredProcessed: the COMMIT of an event's
// transaction went through on PostgreSQL while the connection dropped
// before its answer. The store finds its claim committed, on another
// connection: the delivery is answered 200 processed and reported
// processed, once; Stripe's resend is a duplicate.
func TestHandlerCommitLostAnsweredProcessed(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	store := answerLostStore(t, &armed, func(b []byte) bool { return bytes.Contains(b, []byte("commit")) }, "COMMIT\x00")
	h, results := commitLostHandler(t, store, &armed)
	payload := invoicePayload(t, "evt_sync_commit_lost", "in_sync_commit_lost", "acct_1")

	a := idempotencytest.Deliver(h, payload, testSecret)
	require.False(t, armed.Load(), "the COMMIT was sent and its answer lost")
	requireCommittedOnce(t, h, store, payload, "evt_sync_commit_lost", a, results)
}

// requireCommittedOnce requires a, the answer of h to payload (event
// eventID) whose COMMIT went through unanswered, to be 200 processed with
// the claim in store's ledger, Stripe's resend to be a duplicate, and
// OnResult and the Observer to have been told so, once each.
func requireCommittedOnce(t *testing.T, h http.Handler, store *idempotency.PgxStore, payload []byte, eventID string, a idempotencytest.Answer, results func() map[string][]idempotency.Result) {
	t.Helper()
	require.Equal(t, 200, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
	_, ok, err := store.LookupEvent(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok, "the COMMIT went through")

	again := idempotencytest.Deliver(h, payload, testSecret)
	require.Equal(t, idempotency.OutcomeDuplicate, again.Outcome, again.Body)
	requireReported(t, results(), idempotency.OutcomeProcessed, idempotency.OutcomeDuplicate)
}

// commitDroppedConn is a connection to PostgreSQL that, once armed,
// closes instead of sending the next COMMIT, calls dropped, and then
// tells its client the COMMIT went out: the server rolls the transaction
// back, and the client cannot tell that it did. A COMMIT is the
// statement's whole text: a BEGIN ... READ COMMITTED passes.
type commitDroppedConn struct {
	net.Conn
	armed   *atomic.Bool
	dropped func()
}

func (c *commitDroppedConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("commit\x00")) && c.armed.CompareAndSwap(true, false) {
		_ = c.Conn.Close()
		c.dropped()
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// TestHandlerCommitLostResendRacesLookUp: the COMMIT of an event's
// transaction never reached PostgreSQL, whose session ended; a resend of
// the event, to another process, claimed and applied it before the store
// of the first delivery looked its claim up. The claim found is the
// resend's, not the first delivery's: the first is answered 503 and
// reported failed, and the event is reported processed once, by the
// resend.
func TestHandlerCommitLostResendRacesLookUp(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	payload := invoicePayload(t, "evt_sync_commit_raced", "in_sync_commit_raced", "acct_1")
	var other http.Handler
	var resent idempotencytest.Answer
	db := wrappedConnsDB(t, func(conn net.Conn) net.Conn {
		return &commitDroppedConn{Conn: conn, armed: &armed, dropped: func() {
			resent = idempotencytest.Deliver(other, payload, testSecret)
		}}
	})
	newStore := func() *idempotency.PgxStore {
		store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
		require.NoError(t, err)
		return store
	}
	first := newStore()
	require.NoError(t, first.Migrate(t.Context()))
	h, results := commitLostHandler(t, first, &armed)
	var idle atomic.Bool
	other, otherResults := commitLostHandler(t, newStore(), &idle) // another process's: its own recent claims

	a := idempotencytest.Deliver(h, payload, testSecret)
	require.False(t, armed.Load(), "the COMMIT was dropped")
	require.Equal(t, idempotency.OutcomeProcessed, resent.Outcome, resent.Body)
	require.Equal(t, 503, a.Status, a.Body)
	requireReported(t, results(), idempotency.OutcomeUnavailable)
	requireReported(t, otherResults(), idempotency.OutcomeProcessed)
}
