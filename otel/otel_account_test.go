package idempotencyotel_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestSpansNameTheConnectedAccount: the spans of a connected account's
// event, its delivery's and its attempt's, carry stripe.account, the
// event's account: under Connect an object id such as a capability's
// card_payments is the same in every account, and stripe.object.id alone
// cannot tell whose event a span was. The platform's own events carry
// none.
func TestSpansNameTheConnectedAccount(t *testing.T) {
	t.Parallel()
	connect := func(t *testing.T, id, account string) []byte {
		t.Helper()
		ev := map[string]any{
			"id": id, "object": "event", "type": "invoice.paid", "created": 1756742400, "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{"id": "in_1", "object": "invoice"}},
		}
		if account != "" {
			ev["account"] = account
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		return b
	}
	want := map[string]string{"evt_connect": "acct_1A", "evt_platform": ""}
	requireAccounts := func(t *testing.T, spans map[string]tracetest.SpanStub) {
		t.Helper()
		require.Len(t, spans, len(want))
		for id, account := range want {
			if account == "" {
				requireNoAttr(t, spans[id], "stripe.account")
				continue
			}
			requireAttr(t, spans[id], "stripe.account", account)
		}
	}

	t.Run("synchronous", func(t *testing.T) {
		t.Parallel()
		tel := newTelemetry(t, time.Now)
		h := tel.synchronousHandler(t)
		for id, account := range want {
			a := idempotencytest.Deliver(h, connect(t, id, account), secret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
		}
		requireAccounts(t, byEvent(tel.spans.GetSpans(), isDelivery))
	})
	for name, open := range stores {
		t.Run("inbox/"+name, func(t *testing.T) {
			t.Parallel()
			in, h, clock, tel := observedInbox(t, open(t))
			for id, account := range want {
				a := idempotencytest.Deliver(h, connect(t, id, account), secret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			}
			_, err := idempotencytest.Drain(t.Context(), in, clock, time.Minute)
			require.NoError(t, err)
			spans := tel.spans.GetSpans()
			requireAccounts(t, byEvent(spans, isDelivery))
			requireAccounts(t, byEvent(spans, isAttempt(idempotency.KindEvent)))
		})
	}
}
