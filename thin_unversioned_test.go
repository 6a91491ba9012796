package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventIsUnversioned: a thin notification's fetched event (API
// v2, unversioned) of a type whose handler decodes its data is applied
// under Config.StrictAPIVersion, and without it logs no warning of another
// API version. (No test failed when the API version check took a v2
// event's empty version for another release train: every thin event was
// answered 400 under StrictAPIVersion.)
func TestThinEventIsUnversioned(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{true, false} {
		var applied atomic.Int32
		hs := idempotency.NewHandlers()
		idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			applied.Add(1)
			return nil
		})
		f, notification, _ := newThinFake("evt_thin_unversioned")
		log, logs := testLogger()
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: log, StripeClient: f.serve(t), StrictAPIVersion: strict,
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, notification, testSecret)
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, "StrictAPIVersion %v: %s", strict, a.Body)
		require.EqualValues(t, 1, applied.Load())
		require.NotContains(t, logs.String(), "api_version", "StrictAPIVersion %v", strict)
	}
}
