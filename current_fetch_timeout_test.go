package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentFetchIsBoundedByFetchTimeout: OnCurrent's fetch runs within
// FetchTimeout, not only within the handler's longer Config.Timeout, so
// that a hanging API call fails the event in 5 seconds.
func TestOnCurrentFetchIsBoundedByFetchTimeout(t *testing.T) {
	t.Parallel()
	left := make(chan time.Duration, 1)
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(ctx context.Context, id, _ string) (*stripe.Subscription, error) {
			d := time.Duration(-1)
			if dl, ok := ctx.Deadline(); ok {
				d = time.Until(dl)
			}
			left <- d
			return &stripe.Subscription{ID: id}, nil
		},
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: time.Hour,
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_fetch_timeout", nil), testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	d := <-left
	require.Positive(t, d, "the fetch's context has a deadline")
	require.LessOrEqual(t, d, idempotency.FetchTimeout, "the fetch's deadline is FetchTimeout, not the handler's hour")
}
