package idempotency_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestHandlerLogLevelPerOutcome: Config.Logger says processed and skipped
// deliveries log at Info, duplicates and ignored events at Debug (the
// copies Stripe sends of every event would otherwise double a service's
// Info logs), rejections at Warn.
func TestHandlerLogLevelPerOutcome(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	deliver := func(typ, id string, metadata map[string]string) {
		t.Helper()
		b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, typ, id, metadata), testSecret))
	}
	deliver("invoice.paid", "evt_lvl_processed", paid)
	deliver("invoice.paid", "evt_lvl_processed", paid)
	deliver("invoice.paid", "evt_lvl_skipped", nil)
	deliver("charge.refunded", "evt_lvl_ignored", nil)
	b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_lvl_rejected", paid), "whsec_another"))

	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(b.logs.String()))
	for sc.Scan() {
		var line struct {
			Msg, Level, Outcome string
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line.Msg == "stripe webhook" {
			require.NotContains(t, got, line.Outcome, "one delivery per outcome")
			got[line.Outcome] = line.Level
		}
	}
	require.Equal(t, map[string]string{
		"processed": "INFO", "duplicate": "DEBUG", "skipped": "INFO", "ignored": "DEBUG", "rejected": "WARN",
	}, got)
}

// TestInboxLogLevelQueuedAndSnoozed: as Config.Logger and
// InboxConfig.Logger say, an inbox's Handler logs a delivery it queued at
// Info, and a worker logs a task's attempt that snoozed (outcome queued)
// at Info, as a processed one.
func TestInboxLogLevelQueuedAndSnoozed(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	later := idempotency.NewTask(hs, "later", func(context.Context, idempotency.TaskRun[struct{}]) error {
		return idempotency.Snooze(time.Hour)
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := later.Enqueue(ctx, tx, ev.Object.ID, struct{}{})
		return err
	})
	log, buf := testLogger()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Now: clock.Now, Logger: log})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_lvl_queued", paid), testSecret).Outcome)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, n, "the event's attempt and the task's")

	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		var line struct {
			Msg, Level, Outcome string
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		switch line.Msg {
		case "stripe webhook", "stripe webhook: inbox attempt", "idempotency task: attempt":
			got[line.Msg] = line.Outcome + " " + line.Level
		}
	}
	require.Equal(t, map[string]string{
		"stripe webhook":                "queued INFO",
		"stripe webhook: inbox attempt": "processed INFO",
		"idempotency task: attempt":     "queued INFO",
	}, got)
}
