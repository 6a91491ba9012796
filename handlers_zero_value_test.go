package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A zero Handlers (&idempotency.Handlers{}, as NewTask, NewAction and
// NewHandler already take it) registers handlers with On and OnSafely.
// OnSafely, which returns its errors "instead of panicking", panicked on
// it with "assignment to entry in nil map", and so did On.
func TestHandlersZeroValueRegisters(t *testing.T) {
	t.Parallel()
	hs := &idempotency.Handlers{}
	ran := 0
	var err error
	require.NotPanics(t, func() {
		err = idempotency.OnSafely(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
			ran++
			return nil
		})
	})
	require.NoError(t, err)
	require.Equal(t, []string{"invoice.paid"}, hs.EventTypes())
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_zero_hs", "in_zero_hs", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	require.Equal(t, 1, ran)
}
