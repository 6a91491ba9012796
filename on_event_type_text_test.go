package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// OnSafely refuses an event type with a NUL byte or invalid UTF-8, as
// OnCurrent does. It accepted one: the Handler refuses every event whose
// type is such text (400, ErrMalformedEvent), so the handler could never
// run, and Handlers.EventTypes, which Recover's Types are meant to be
// given, then held a type Recover refuses.
func TestOnRefusesEventTypeNoEventCanHave(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error { return nil }
	for _, eventType := range []string{"invoice.paid\x00", "invoice.p\xffaid"} {
		hs := idempotency.NewHandlers()
		err := idempotency.OnSafely(hs, eventType, fn)
		require.ErrorIs(t, err, idempotency.ErrInvalidKey, "OnSafely(%q) registered %v", eventType, hs.EventTypes())
		require.Empty(t, hs.EventTypes())
		require.Panics(t, func() { idempotency.On(hs, eventType, fn) })
	}
}
