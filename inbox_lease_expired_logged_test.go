package idempotency_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An event that kills its process every time leaves no line of its
// attempt: the attempt's line is written when it returns. The attempt at
// an event whose last worker died holding it is logged when it starts, so
// that the last lines of a process that died name the event that may have
// killed it, before it reaches dead letter.
func TestInboxAttemptAfterAnExpiredLeaseLoggedAtItsStart(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		runtime.Goexit() // its process dies, every time
		return nil
	})
	logger, logs := testLogger()
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, Lease: time.Minute, Timeout: 10 * time.Second, Logger: logger,
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_poison_log", "in_poison_log", "acct_1"), testSecret).Outcome)
	workDueDying(t, in)
	clock.Advance(time.Minute)
	workDueDying(t, in)

	// runtime.Goexit runs the attempt's deferred end line, which a process
	// that dies does not write: the line sought is the one before it.
	var warned []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["level"] == "WARN" {
			warned = append(warned, rec)
		}
		if rec["msg"] == "stripe webhook: inbox attempt" && rec["attempt"] == float64(2) {
			require.Len(t, warned, 1, "the second attempt's start is logged before its end: %s", logs)
		}
	}
	require.Len(t, warned, 1, logs.String())
	rec := warned[0]
	require.Contains(t, rec["msg"], "if this process dies now")
	require.Equal(t, "evt_poison_log", rec["event_id"])
	require.Equal(t, "invoice.paid", rec["event_type"])
	require.Equal(t, "in_poison_log", rec["object_id"])
	require.Equal(t, float64(2), rec["attempt"])
}
