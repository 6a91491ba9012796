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
	for _, typ := range []string{"invoice.paid\n", " invoice.paid", "invoice. paid", "invoice.paid\x01", "invoice.\x7fpaid", "invoice.paid\x00", "invoice.\xffpaid"} {
		requireOnRefuses(t, typ, "event type")
	}
	fn := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil }
	require.NoError(t, idempotency.OnSafely(idempotency.NewHandlers(), "v1.billing.meter.error_report_triggered", fn))
}

// TestOnRefusesWildcardEventType: a wildcard ("*", "invoice.*"), as a
// Stripe endpoint's enabled events take it, never matches a delivered
// event's type, which has no '*'. On accepted it, with the same loss as
// above. It is refused, asking for the exact types, as
// RecoverOptions.Types refuses a wildcard; by OnCurrent too.
func TestOnRefusesWildcardEventType(t *testing.T) {
	t.Parallel()
	fetch := func(context.Context, string, string) (*stripe.Invoice, error) { return nil, nil }
	fn := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil }
	for _, typ := range []string{"*", "invoice.*", "customer.subscription.*"} {
		err := requireOnRefuses(t, typ, "is a wildcard")
		require.ErrorContains(t, err, "register each exact event type")
		hs := idempotency.NewHandlers()
		require.Panics(t, func() { idempotency.OnCurrent(hs, []string{typ}, fetch, fn) })
		require.Empty(t, hs.EventTypes())
	}
}

// requireOnRefuses checks that OnSafely refuses typ with an error that
// says want, that On panics on it, and that nothing is registered; it
// fails the test with what an invoice.paid delivery got when OnSafely
// accepted typ. It returns OnSafely's error.
func requireOnRefuses(t *testing.T, typ, want string) error {
	t.Helper()
	ran := false
	fn := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		ran = true
		return nil
	}
	hs := idempotency.NewHandlers()
	err := idempotency.OnSafely(hs, typ, fn)
	if err == nil {
		h, herr := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, herr)
		a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_type_text", nil), testSecret)
		t.Fatalf("OnSafely accepted %q; an invoice.paid delivery: %d %s, handler ran: %t", typ, a.Status, a.Body, ran)
	}
	require.ErrorContains(t, err, want)
	require.Panics(t, func() { idempotency.On(hs, typ, fn) })
	require.Empty(t, hs.EventTypes())
	return err
}
