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

// TestThinEventDecodeErrorNamesData: a thin event's Object is its data,
// which has no data.object: a data that does not decode into the handler's
// type fails the event with a DecodeError that names data, in the
// synchronous Handler's Result and in the inbox's LastError.
func TestThinEventDecodeErrorNamesData(t *testing.T) {
	t.Parallel()
	const want = "idempotency: decoding data of " + thinType + " event into stripe.V1BillingMeterErrorReportTriggeredEventData: "
	register := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			return nil
		})
		return hs
	}
	event := idempotencytest.ThinEvent{ID: "evt_thin_data_string", Type: thinType, Data: "not an object"}

	t.Run("handler", func(t *testing.T) {
		t.Parallel()
		api := idempotencytest.NewV2Events()
		var res idempotency.Result
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), register(), idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(),
			StripeClient: idempotencytest.NewStripeClient("sk_test_123", api),
			OnResult:     func(r idempotency.Result) { res = r },
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, api.Add(event), testSecret)
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
		var de *idempotency.DecodeError
		require.ErrorAs(t, res.Err, &de)
		require.Contains(t, res.Err.Error(), want)
		require.NotContains(t, res.Err.Error(), "data.object")
	})

	t.Run("inbox", func(t *testing.T) {
		t.Parallel()
		api := idempotencytest.NewV2Events()
		clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
		in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), register(), idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, StripeClient: idempotencytest.NewStripeClient("sk_test_123", api)})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, api.Add(event), testSecret).Outcome)
		n, err := in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		rec, ok, err := in.Lookup(t.Context(), event.ID)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxFailed, rec.State)
		require.Contains(t, rec.LastError, want)
		require.NotContains(t, rec.LastError, "data.object")
	})
}
