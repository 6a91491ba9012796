package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventNotFoundSaysAsWhatItWasFetched: a thin event the API does
// not find (404 resource_missing) fails with an error that names the
// context it was fetched as (the key's own account for none) and what to
// check: that Config.StripeClient's key is of the event destination's
// account and the event's mode. It said resource_missing alone.
func TestThinEventNotFoundSaysAsWhatItWasFetched(t *testing.T) {
	t.Parallel()
	api := idempotencytest.NewV2Events()
	h, res := newThinResultHandler(t, api)
	// Each notification names its event as a context the API does not
	// hold it under.
	other := idempotencytest.NewV2Events()
	for _, c := range []struct{ held, notified, as string }{
		{"acct_1", "", "as its own account (the notification has no context)"},
		{"", "acct_1", "as the notification's context acct_1"},
	} {
		id := "evt_thin_missing_" + c.notified
		api.Add(idempotencytest.ThinEvent{ID: id, Type: thinType, Context: c.held})
		a := idempotencytest.Deliver(h, other.Add(idempotencytest.ThinEvent{ID: id, Type: thinType, Context: c.notified}), testSecret)
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
		require.ErrorIs(t, res().Err, idempotency.ErrStripeAPI)
		require.EqualError(t, res().Err, "idempotency: Stripe API request failed: retrieving the v2 event: error invalid_request_error (resource_missing): "+
			"no such event for Config.StripeClient's API key, fetched "+c.as+": is the key of the account the event destination belongs to, and of the event's mode?")
	}
}

// newThinResultHandler is a synchronous Handler on a memory store that
// applies thinType's events fetched from api, and the Result of its last
// delivery.
func newThinResultHandler(t *testing.T, api *idempotencytest.V2Events) (*idempotency.Handler, func() idempotency.Result) {
	t.Helper()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
		return nil
	})
	var mu sync.Mutex
	var last idempotency.Result
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(),
		StripeClient: idempotencytest.NewStripeClient("sk_test_123", api),
		OnResult: func(r idempotency.Result) {
			mu.Lock()
			defer mu.Unlock()
			last = r
		},
	})
	require.NoError(t, err)
	return h, func() idempotency.Result {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}
