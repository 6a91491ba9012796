package idempotencyotel_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// TestObserveInboxRefusesAnotherTelemetrysSeries: two Telemetries on one
// MeterProvider with the same Config.Attributes (none, say) report their
// inboxes' gauges as one series, and a collection kept one inbox's: the
// second ObserveInbox fails, registering nothing, naming
// Config.Attributes, while the first is registered; with attributes that
// differ, both inboxes are observed and told apart; once the first is
// unregistered, the second Telemetry observes. Both stores.
func TestObserveInboxRefusesAnotherTelemetrysSeries(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
			newTel := func(attrs ...attribute.KeyValue) *idempotencyotel.Telemetry {
				tel, err := idempotencyotel.New(idempotencyotel.Config{MeterProvider: mp, Attributes: attrs})
				require.NoError(t, err)
				return tel
			}
			newInbox := func(tel *idempotencyotel.Telemetry) *idempotency.Inbox {
				in, err := idempotency.NewInbox(open(t), handlers(), idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler), Observer: tel.Observer()})
				require.NoError(t, err)
				return in
			}
			billingTel, refundsTel := newTel(), newTel()
			billing, refunds := newInbox(billingTel), newInbox(refundsTel)
			h, err := billing.Handler(idempotency.Config{Secrets: []string{secret}})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, event(t, "evt_billing", "invoice.paid", "in_1"), secret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

			reg, err := billingTel.ObserveInbox(billing)
			require.NoError(t, err)
			again, err := refundsTel.ObserveInbox(refunds)
			require.EqualError(t, err, "idempotencyotel: ObserveInbox: another Telemetry on this MeterProvider, with the same Config.Attributes, observes an inbox, whose series this one's would share: "+
				"name each inbox in Config.Attributes")
			require.Nil(t, again)
			require.NoError(t, reg.Unregister())
			reg, err = refundsTel.ObserveInbox(refunds)
			require.NoError(t, err, "the first unregistered")
			require.NoError(t, reg.Unregister())

			// Named apart, both are observed.
			billingTel, refundsTel = newTel(attribute.String("inbox", "billing")), newTel(attribute.String("inbox", "refunds"))
			billing, refunds = newInbox(billingTel), newInbox(refundsTel)
			h, err = billing.Handler(idempotency.Config{Secrets: []string{secret}})
			require.NoError(t, err)
			a = idempotencytest.Deliver(h, event(t, "evt_billing_2", "invoice.paid", "in_1"), secret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			for _, r := range []struct {
				tel *idempotencyotel.Telemetry
				in  *idempotency.Inbox
			}{{billingTel, billing}, {refundsTel, refunds}} {
				reg, err := r.tel.ObserveInbox(r.in)
				require.NoError(t, err)
				t.Cleanup(func() { _ = reg.Unregister() })
			}
		})
	}
}
