package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

const testSecret = "whsec_test_0123456789abcdef"

// fixture returns a Stripe event from testdata/stripe-events.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "stripe-events", name+".json"))
	require.NoError(t, err)
	return b
}

// eventPayload returns the fixture with its event id replaced and
// data.object.metadata set, re-encoded: the bytes a test signs and sends.
func eventPayload(t testing.TB, name, eventID string, metadata map[string]string) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, name), &ev))
	ev["id"] = eventID
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	md := map[string]any{}
	for k, v := range metadata {
		md[k] = v
	}
	obj["metadata"] = md
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// syncBuffer is a log sink safe for concurrent handlers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger logs every level as JSON into the returned buffer.
func testLogger() (*slog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// invoicePayload returns the invoice.paid fixture as event eventID about
// invoice invoiceID of account.
func invoicePayload(t testing.TB, eventID, invoiceID, account string) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(eventPayload(t, "invoice.paid", eventID, map[string]string{"account_id": account}), &ev))
	ev["data"].(map[string]any)["object"].(map[string]any)["id"] = invoiceID
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// observeResults has fn called with each inbox attempt's Result through
// the Observer's done, not OnResult: with OnResult set, a worker's commit
// does not begin its next event's transaction, and the PostgreSQL inbox
// tests are to run that chained path.
func observeResults(cfg *idempotency.InboxConfig, fn func(idempotency.Result)) {
	o := &idempotency.Observer{}
	if cfg.Observer != nil {
		*o = *cfg.Observer
	}
	inner := o.Attempt
	o.Attempt = func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
		var done func(idempotency.Result)
		if inner != nil {
			ctx, done = inner(ctx, rec, link)
		}
		return ctx, func(r idempotency.Result) {
			if done != nil {
				done(r)
			}
			fn(r)
		}
	}
	cfg.Observer = o
}

// counterValues returns the name and value of each row query selects
// from the counters table.
func counterValues(t *testing.T, pool *pgxpool.Pool, query string) map[string]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), query)
	require.NoError(t, err)
	counts := map[string]int{}
	for rows.Next() {
		var name string
		var v int
		require.NoError(t, rows.Scan(&name, &v))
		counts[name] = v
	}
	require.NoError(t, rows.Err())
	return counts
}

// queuedInvoice is an inbox on store, on a fake clock at 2026-03-01 12:00
// UTC, with cfg's Now and Logger set, whose invoice.paid handler counts
// its runs in runs; an event eventID about the invoice of the same name
// with "evt" replaced by "in" is delivered to it and queued.
func queuedInvoice(t *testing.T, store idempotency.Store, cfg idempotency.InboxConfig, eventID string) (inbox *idempotency.Inbox, clock *idempotencytest.Clock, runs *atomic.Int32) {
	t.Helper()
	clock = idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	runs = new(atomic.Int32)
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		runs.Add(1)
		return nil
	})
	cfg.Now, cfg.Logger = clock.Now, discardLogger()
	inbox, err := idempotency.NewInbox(store, hs, cfg)
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	payload := invoicePayload(t, eventID, "in_"+strings.TrimPrefix(eventID, "evt_"), "acct_1")
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, payload, testSecret).Outcome)
	return inbox, clock, runs
}

// workDueDying runs in.WorkDue on a goroutine that a handler ends with
// runtime.Goexit, as a process that dies mid-attempt: what it leased
// stays processing until its lease expires.
func workDueDying(t *testing.T, in *idempotency.Inbox) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = in.WorkDue(t.Context())
	}()
	recv(t, done, "the dying worker")
}

// runInbox starts in.Run, and returns the func that stops it and fails the
// test if Run fails or has not returned recvWait later.
func runInbox(t *testing.T, in *idempotency.Inbox) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- in.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-ran:
			require.NoError(t, err)
		case <-time.After(recvWait):
			t.Fatalf("Run did not return within %s", recvWait)
		}
	}
}
