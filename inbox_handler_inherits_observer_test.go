package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxHandlerTakesTheInboxsObserverAndLogger: an Inbox's Handler
// whose Config sets no Observer or Logger watches and logs its deliveries
// with InboxConfig's, so that a service that sets them once, on the
// inbox, loses neither its delivery metrics and trace links nor its
// delivery log lines; a Config that sets its own keeps them.
func TestInboxHandlerTakesTheInboxsObserverAndLogger(t *testing.T) {
	t.Parallel()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var inboxLog, ownLog bytes.Buffer
	inboxObs, ownObs := &observed{links: map[string]string{}}, &observed{links: map[string]string{}}
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Logger: slog.New(slog.NewJSONHandler(&inboxLog, nil)), Now: clock.Now, Observer: inboxObs.observer(traceparent),
	})
	require.NoError(t, err)

	bare, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}})
	require.NoError(t, err)
	a := idempotencytest.Deliver(bare, invoicePayload(t, "evt_inherit", "in_inherit", "acct_inherit"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	inboxObs.mu.Lock()
	require.Len(t, inboxObs.deliveries, 1, "the delivery is watched by InboxConfig.Observer")
	require.Equal(t, traceparent, inboxObs.links["evt_inherit"], "and its link stored")
	inboxObs.mu.Unlock()
	require.Contains(t, inboxLog.String(), `"event_id":"evt_inherit"`, "the delivery is logged to InboxConfig.Logger")

	own, err := in.Handler(idempotency.Config{Secrets: []string{testSecret},
		Logger: slog.New(slog.NewJSONHandler(&ownLog, nil)), Observer: ownObs.observer(traceparent)})
	require.NoError(t, err)
	a = idempotencytest.Deliver(own, invoicePayload(t, "evt_own", "in_own", "acct_own"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	ownObs.mu.Lock()
	require.Len(t, ownObs.deliveries, 1)
	ownObs.mu.Unlock()
	inboxObs.mu.Lock()
	require.Len(t, inboxObs.deliveries, 1, "a Config's own Observer replaces the inbox's")
	inboxObs.mu.Unlock()
	require.Contains(t, ownLog.String(), `"event_id":"evt_own"`)
	require.NotContains(t, inboxLog.String(), "evt_own")
}
