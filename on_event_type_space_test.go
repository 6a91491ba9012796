package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnRefusesEventTypeNoEventHas: an event type with white space, a
// control character or invalid UTF-8 (read from an env file with its
// newline, split from "a, b") can never match a delivered event's type.
// On accepted it, and every event of the type meant was answered 200
// ignored: Stripe never sent it again and the handler never ran. It is
// refused, as Config.Secrets refuses a secret with white space.
func TestOnRefusesEventTypeNoEventHas(t *testing.T) {
	t.Parallel()
	ran := false
	fn := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		ran = true
		return nil
	}
	for _, typ := range []string{"invoice.paid\n", " invoice.paid", "invoice. paid", "invoice.paid\x01", "invoice.\x7fpaid", "invoice.paid\x00", "invoice.\xffpaid"} {
		hs := idempotency.NewHandlers()
		err := idempotency.OnSafely(hs, typ, fn)
		if err == nil {
			h, herr := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, herr)
			a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_type_text", nil), testSecret)
			t.Fatalf("OnSafely accepted %q; an invoice.paid delivery: %d %s, handler ran: %t", typ, a.Status, a.Body, ran)
		}
		require.ErrorContains(t, err, "event type")
		require.Panics(t, func() { idempotency.On(hs, typ, fn) })
		require.Empty(t, hs.EventTypes())
	}
	require.NoError(t, idempotency.OnSafely(idempotency.NewHandlers(), "v1.billing.meter.error_report_triggered", fn))
}
