package idempotencytest_test

import (
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestSignatureHeader: stripe-go verifies what SignatureHeader signs, and
// nothing else.
func TestSignatureHeader(t *testing.T) {
	t.Parallel()
	payload := invoicePaid(t, "evt_sig", "in_sig", "acct_sig")
	header := idempotencytest.SignatureHeader(payload, testSecret, time.Now())
	require.NoError(t, webhook.ValidatePayload(payload, header, testSecret))
	require.Error(t, webhook.ValidatePayload(payload, header, "whsec_other"))
	require.Error(t, webhook.ValidatePayload(append(payload, ' '), header, testSecret))

	old := idempotencytest.SignatureHeader(payload, testSecret, time.Now().Add(-time.Hour))
	require.ErrorIs(t, webhook.ValidatePayload(payload, old, testSecret), webhook.ErrTooOld)
}

func TestNewSignedRequest(t *testing.T) {
	t.Parallel()
	payload := invoicePaid(t, "evt_req", "in_req", "acct_req")
	at := time.Now().Add(-time.Minute)
	req := idempotencytest.NewSignedRequestAt("/webhooks/stripe", payload, testSecret, at)
	require.Equal(t, "POST", req.Method)
	require.Equal(t, "/webhooks/stripe", req.URL.Path)
	require.Equal(t, "application/json", req.Header.Get("Content-Type"))
	require.Equal(t, idempotencytest.SignatureHeader(payload, testSecret, at), req.Header.Get("Stripe-Signature"))
	body, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	require.Equal(t, payload, body)
}

func TestNewSignedRequestJSON(t *testing.T) {
	t.Parallel()
	h, credits := newCreditHandler(t)
	ev := stripe.Event{
		ID: "evt_go_value", Object: "event", Type: "invoice.paid", APIVersion: stripe.APIVersion, Created: time.Now().Unix(),
		Data: &stripe.EventData{Object: map[string]any{
			"id": "in_go_value", "object": "invoice", "metadata": map[string]string{"account_id": "acct_go"},
		}},
	}
	for _, value := range []any{ev, &ev, map[string]any{
		"id": "evt_map", "object": "event", "type": "invoice.paid", "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": "in_map", "object": "invoice", "metadata": map[string]string{"account_id": "acct_go"}}},
	}} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, idempotencytest.NewSignedRequestJSON("/", value, testSecret))
		require.Equal(t, 200, rec.Code, rec.Body.String())
	}
	require.Equal(t, 200, credits.get("acct_go"), "two invoices, the Go value sent twice")
	require.Nil(t, ev.Data.Raw, "the caller's event is not modified")

	require.PanicsWithValue(t, "idempotencytest: NewSignedRequestJSON: encoding event: json: unsupported type: chan int", func() {
		idempotencytest.NewSignedRequestJSON("/", make(chan int), testSecret)
	})
}
