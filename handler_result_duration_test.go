package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Result.Duration of a delivery spans the handler's run and no more than
// the request: OnResult's metrics see how long the answer took. (No test
// failed when it was left zero.)
func TestHandlerResultDurationSpansTheDelivery(t *testing.T) {
	t.Parallel()
	const work = 20 * time.Millisecond
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
			time.Sleep(work) // the handler's work, which the duration must include
			return b.creditInvoice(ctx, tx, ev)
		})
	})
	start := time.Now()
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_duration", paid), testSecret)),
		200, `{"outcome":"processed"}`)
	took := time.Since(start)
	res := b.lastResult(t)
	require.GreaterOrEqual(t, res.Duration, work, "the handler's run is in the duration")
	require.LessOrEqual(t, res.Duration, took, "no more than the request took")
}
