package idempotency_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinHeldLostAnswerWakesAtTheResend: in inbox mode, a thin
// notification whose event was stored while the insert's answer was lost
// is answered 503, and wakes no worker; Stripe's resend, answered
// duplicate without a fetch since the inbox holds the event, wakes this
// process's workers, as the resend of a snapshot event does
// (TestInboxIngestLostAnswerWakesAtTheResend). A later resend wakes none.
func TestThinHeldLostAnswerWakesAtTheResend(t *testing.T) {
	t.Parallel()
	store := &idempotency.LostAnswerStore{MemoryStore: idempotency.NewMemoryStore()}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error { return nil })
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	f, notification, _ := newThinFake("evt_thin_lost_answer")
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t)})
	require.NoError(t, err)

	store.Lose.Store(true)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	store.Lose.Store(false)
	_, stored, err := in.Lookup(t.Context(), "evt_thin_lost_answer")
	require.NoError(t, err)
	require.True(t, stored, "the insert went through, its answer lost")

	woken := idempotency.InboxSignals(in)
	a = idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Greater(t, idempotency.InboxSignals(in), woken, "the resend of an event whose insert went unanswered wakes the workers")
	require.Len(t, f.calls(), 1, "the resend is answered without a fetch")

	woken = idempotency.InboxSignals(in)
	a = idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, a.Body)
	require.Equal(t, woken, idempotency.InboxSignals(in), "a later resend wakes nothing")
}
