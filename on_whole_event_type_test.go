package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnWholeEventTypeRefused: a handler is given the event's data
// (data.object, or a thin event's data), never the event. stripe-go names
// a type for each thin event (stripe.V1BillingMeterErrorReportTriggeredEvent),
// which a handler of that type reaches for; data decoded into it fills
// nothing of it (the event's "reason" aside, into its V2BaseEvent), and the
// event was processed on zero values, its meter errors lost. On refuses
// such a type, and every whole event's type of stripe-go (stripe.V2BaseEvent,
// which each embeds, too), at registration, naming the type to register
// instead; the types of an event's data, and the API's objects named
// ...Event (stripe.BillingMeterEvent), it takes.
func TestOnWholeEventTypeRefused(t *testing.T) {
	t.Parallel()
	const thin = "v1.billing.meter.error_report_triggered"
	refused := []struct {
		register  func(*idempotency.Handlers, string) error
		eventType string
		typ       string
	}{
		{onNothing[stripe.V1BillingMeterErrorReportTriggeredEvent], thin, "stripe.V1BillingMeterErrorReportTriggeredEvent"},
		{onNothing[*stripe.V1BillingMeterErrorReportTriggeredEvent], thin, "*stripe.V1BillingMeterErrorReportTriggeredEvent"},
		{onNothing[*stripe.V2RawEvent], thin, "*stripe.V2RawEvent"},
		{onNothing[stripe.ThinEvent], thin, "stripe.ThinEvent"},
		{onNothing[stripe.V2BaseEvent], thin, "stripe.V2BaseEvent"},
		{onNothing[*stripe.V2BaseEvent], thin, "*stripe.V2BaseEvent"},
		{onNothing[*stripe.Event], "invoice.paid", "*stripe.Event"},
	}
	for _, c := range refused {
		t.Run(c.typ, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			require.EqualError(t, c.register(hs, c.eventType), fmt.Sprintf(`idempotency: On: %s is a whole event's type: a handler is given the event's data (data.object; a thin event's data): register the type of the data (for a thin event, its stripe-go event's Data field)`, c.typ))
			require.Empty(t, hs.EventTypes(), "nothing registered")
		})
	}

	// Objects of the API named ...Event, and the types of an event's data,
	// are data: registered.
	taken := []struct {
		register  func(*idempotency.Handlers, string) error
		eventType string
	}{
		{onNothing[stripe.V1BillingMeterErrorReportTriggeredEventData], thin},
		{onNothing[*stripe.V1BillingMeterNoMeterFoundEventData], "v1.billing.meter.no_meter_found"},
		{onNothing[*stripe.BillingMeterEvent], "billing.meter_event.created"},
		{onNothing[stripe.V2BillingMeterEvent], "v2.billing.meter_event.created"},
		{onNothing[*stripe.V2EventDestination], "v2.core.event_destination.updated"},
	}
	t.Run("data types taken", func(t *testing.T) {
		t.Parallel()
		hs := idempotency.NewHandlers()
		for _, c := range taken {
			require.NoError(t, c.register(hs, c.eventType))
		}
		require.Len(t, hs.EventTypes(), len(taken))
	})

	t.Run("On panics", func(t *testing.T) {
		t.Parallel()
		require.PanicsWithError(t, `idempotency: On: stripe.V1BillingMeterErrorReportTriggeredEvent is a whole event's type: a handler is given the event's data (data.object; a thin event's data): register the type of the data (for a thin event, its stripe-go event's Data field)`, func() {
			idempotency.On(idempotency.NewHandlers(), thin, func(context.Context, idempotency.Tx, idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEvent]) error {
				return nil
			})
		})
	})

	// The type of its Data is taken, and the handler is given the data.
	t.Run("data's type", func(t *testing.T) {
		t.Parallel()
		api := idempotencytest.NewV2Events()
		hs := idempotency.NewHandlers()
		var got stripe.V1BillingMeterErrorReportTriggeredEventData
		idempotency.On(hs, thin, func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
			got = ev.Object
			return nil
		})
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: idempotencytest.NewStripeClient("sk_test_123", api),
		})
		require.NoError(t, err)
		notification := api.Add(idempotencytest.ThinEvent{
			ID: "evt_whole_1", Type: thin, RelatedObject: &stripe.RelatedObject{ID: "mtr_1", Type: "billing.meter"},
			Data: stripe.V1BillingMeterErrorReportTriggeredEventData{
				DeveloperMessageSummary: "There is 1 invalid event",
				Reason:                  &stripe.V1BillingMeterErrorReportTriggeredEventDataReason{ErrorCount: 1},
			},
		})
		a := idempotencytest.Deliver(h, notification, testSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, "There is 1 invalid event", got.DeveloperMessageSummary)
		require.Equal(t, int64(1), got.Reason.ErrorCount)
	})
}
