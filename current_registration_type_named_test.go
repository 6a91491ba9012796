package idempotency_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestOnCurrentRegistrationNamesItsType: the error of a second handler for
// an event type names the types of both. A type registered by OnCurrent
// was named "struct {}", a type the user never wrote, whichever T the
// OnCurrent call had: "event type "customer.subscription.updated" has a
// handler for struct {}; a second one (for *stripe.Subscription) ...".
func TestOnCurrentRegistrationNamesItsType(t *testing.T) {
	t.Parallel()
	const typ = "customer.subscription.updated"
	rawFn := func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error { return nil }

	t.Run("On after OnCurrent", func(t *testing.T) {
		hs := idempotency.NewHandlers()
		idempotency.OnCurrent(hs, []string{typ}, fetchNothing, handleNothing)
		err := idempotency.OnSafely(hs, typ, rawFn)
		require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
		require.NotContains(t, err.Error(), "struct {}")
		require.ErrorContains(t, err, "has a handler for *stripe.Subscription (OnCurrent)")
		require.ErrorContains(t, err, "a second one (for json.RawMessage)")
	})
	t.Run("OnCurrent after On", func(t *testing.T) {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, typ, rawFn)
		err, _ := panicValue(func() { idempotency.OnCurrent(hs, []string{typ}, fetchNothing, handleNothing) }).(error)
		require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
		require.NotContains(t, err.Error(), "struct {}")
		require.ErrorContains(t, err, "has a handler for json.RawMessage; a second one (for *stripe.Subscription (OnCurrent))")
	})
	t.Run("a type given twice", func(t *testing.T) {
		hs := idempotency.NewHandlers()
		err, _ := panicValue(func() { idempotency.OnCurrent(hs, []string{typ, typ}, fetchNothing, handleNothing) }).(error)
		require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
		require.NotContains(t, err.Error(), "struct {}")
	})
}
