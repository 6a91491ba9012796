package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A handler registered for a misspelt type (invoice.payed) never ran, and
// the events of the type meant were answered ignored, 200, never sent
// again: nothing said so. NewHandler and NewInbox log, at Warn, each
// registered type the stripe-go they are built with does not know, with
// the known type it is likely a misspelling of; a type newer than
// stripe-go is still registered and served, and one far from every known
// type, more likely a newer one, is logged at Info. Known types log
// nothing, and a Handlers the second of them is built from logs nothing
// again.
func TestNewHandlerWarnsOfAnEventTypeStripeGoDoesNotKnow(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, idempotency.Tx, idempotency.Event[serviceObject]) error { return nil }
	newHandlers := func(types ...string) *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		for _, typ := range types {
			idempotency.On(hs, typ, fn)
		}
		return hs
	}
	warnings := func(logs *bytes.Buffer) []map[string]any {
		var lines []map[string]any
		for line := range bytes.Lines(logs.Bytes()) {
			var m map[string]any
			require.NoError(t, json.Unmarshal(line, &m))
			lines = append(lines, m)
		}
		return lines
	}
	requireWarned := func(lines []map[string]any, fn string) {
		t.Helper()
		require.Len(t, lines, 2, "%v", lines)
		byType := map[string]map[string]any{}
		for _, m := range lines {
			require.Contains(t, m["msg"], "not one stripe-go v82.5.1 knows")
			require.Equal(t, fn, m["checked_by"])
			byType[m["event_type"].(string)] = m
		}
		// One letter from invoice.paid: a misspelling, at Warn.
		require.Equal(t, "WARN", byType["invoice.payed"]["level"])
		require.Contains(t, byType["invoice.payed"]["msg"], "check its spelling")
		require.Equal(t, "invoice.paid", byType["invoice.payed"]["did_you_mean"])
		// Far from every known type: more likely a newer one, at Info.
		require.Equal(t, "INFO", byType["shop.widget.frobbed"]["level"])
		require.NotContains(t, byType["shop.widget.frobbed"], "did_you_mean")
	}
	logger := func(logs *bytes.Buffer) *slog.Logger {
		return slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	types := []string{"invoice.payed", "checkout.session.completed", "shop.widget.frobbed"}

	var logs bytes.Buffer
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), newHandlers(types...),
		idempotency.Config{Secrets: []string{testSecret}, Logger: logger(&logs)})
	require.NoError(t, err)
	requireWarned(warnings(&logs), "NewHandler")
	// Still served: a type newer than stripe-go is one Stripe may send.
	a := idempotencytest.Deliver(h, idempotencytest.Derive(eventPayload(t, "invoice.paid", "evt_newer_type", nil),
		map[string]any{"type": "shop.widget.frobbed"}), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)

	logs.Reset()
	_, err = idempotency.NewInbox(idempotency.NewMemoryStore(), newHandlers(types...), idempotency.InboxConfig{Logger: logger(&logs)})
	require.NoError(t, err)
	requireWarned(warnings(&logs), "NewInbox")

	logs.Reset()
	_, err = idempotency.NewHandler(idempotency.NewMemoryStore(), newHandlers("invoice.paid", "checkout.session.completed", "v1.billing.meter.error_report_triggered"),
		idempotency.Config{Secrets: []string{testSecret}, Logger: logger(&logs)})
	require.NoError(t, err)
	require.Empty(t, logs.String())

	// A Handler and an Inbox of one Handlers (synchronous mode with tasks)
	// warn once: the types cannot change after the first.
	logs.Reset()
	hs := newHandlers(types...)
	_, err = idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: logger(&logs)})
	require.NoError(t, err)
	_, err = idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: logger(&logs)})
	require.NoError(t, err)
	requireWarned(warnings(&logs), "NewHandler")
}
