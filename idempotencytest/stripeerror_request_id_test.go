package idempotencytest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestWriteStripeErrorAnswersAsStripe: WriteStripeError answers as the
// Stripe API does where stripe-go's *stripe.Error reads it: a Request-Id
// (req_ and 14 letters or digits, one per answer, or the one the handler
// set), which stripe.Error.RequestID keeps and Recover's error quotes as
// "request req_..."; the type card_error for a 402, which stripe-go
// types as a *stripe.CardError. V1Events' and V2Events' own answers have
// a Request-Id too. A v2 request's error is the same
// {"error":{"type","code","message"}}, Stripe's v2 shape, which stripe-go
// reads as a *stripe.V2RawError of its type and code.
func TestWriteStripeErrorAnswersAsStripe(t *testing.T) {
	t.Parallel()
	const requestID = `^req_[A-Za-z0-9]{14}$`
	client := idempotencytest.NewStripeClient("sk_test_123", failFirst(idempotencytest.NewV1Events(),
		http.StatusPaymentRequired, http.StatusTooManyRequests))
	var ids []string
	for _, want := range []struct {
		status int
		typ    stripe.ErrorType
	}{
		{http.StatusPaymentRequired, stripe.ErrorTypeCard},
		{http.StatusTooManyRequests, stripe.ErrorTypeInvalidRequest},
	} {
		se := listError(t, client, &stripe.EventListParams{})
		require.Equal(t, want.status, se.HTTPStatusCode)
		require.Equal(t, want.typ, se.Type, want.status)
		require.Regexp(t, requestID, se.RequestID, want.status)
		ids = append(ids, se.RequestID)
	}
	require.NotEqual(t, ids[0], ids[1], "one Request-Id per answer")

	card := idempotencytest.NewStripeClient("sk_test_123", failEvery(http.StatusPaymentRequired, "card_declined", "Your card was declined."))
	se := listError(t, card, &stripe.EventListParams{})
	require.Equal(t, stripe.ErrorTypeCard, se.Type)
	require.Equal(t, stripe.ErrorCodeCardDeclined, se.Code)
	var ce *stripe.CardError
	require.ErrorAs(t, se.Err, &ce)

	chosen := idempotencytest.NewStripeClient("sk_test_123", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", "req_chosenByTest1")
		idempotencytest.WriteStripeError(w, http.StatusInternalServerError, "", "An error occurred")
	}))
	require.Equal(t, "req_chosenByTest1", listError(t, chosen, &stripe.EventListParams{}).RequestID)

	h, _ := newCreditHandler(t)
	_, err := h.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_123", failFirst(idempotencytest.NewV1Events(), http.StatusUnauthorized)),
		idempotency.RecoverOptions{Since: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.Regexp(t, `HTTP 401 invalid_request_error, request req_[A-Za-z0-9]{14}\b`, err.Error())

	for _, c := range []struct {
		h    http.Handler
		path string
	}{
		{idempotencytest.NewV1Events(), "/v1/events"},
		{idempotencytest.NewV1Events(), "/v1/events?limit=0"},
		{idempotencytest.NewV2Events(), "/v2/core/events/evt_1"},
	} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		require.Regexp(t, requestID, rec.Header().Get("Request-Id"), c.path)
	}

	// A v2 request: the body is the one stripe-go reads as a V2RawError.
	rec := httptest.NewRecorder()
	idempotencytest.WriteStripeError(rec, http.StatusTooManyRequests, "rate_limit", "Too many requests")
	var body map[string]map[string]string
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, map[string]map[string]string{"error": {
		"type": "invalid_request_error", "code": "rate_limit", "message": "Too many requests",
	}}, body)
	v2client := idempotencytest.NewStripeClient("sk_test_123", failEvery(http.StatusTooManyRequests, "rate_limit", "Too many requests"))
	_, err = v2client.V2CoreEvents.Retrieve(t.Context(), "evt_1", nil)
	var v2 *stripe.V2RawError
	require.True(t, errors.As(err, &v2), "%v", err)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, *v2.Type)
	require.Equal(t, "rate_limit", v2.Code)
	require.Equal(t, "Too many requests", v2.Message)
}

// failEvery returns a handler that answers every request with
// WriteStripeError(w, status, code, message).
func failEvery(status int, code, message string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		idempotencytest.WriteStripeError(w, status, code, message)
	})
}
