package idempotencytest_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// failFirst returns a handler that answers its first requests with
// WriteStripeError, one each of statuses, and serves the rest with h.
func failFirst(h http.Handler, statuses ...int) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i := n.Add(1); i <= int64(len(statuses)) {
			code := ""
			if statuses[i-1] == http.StatusTooManyRequests {
				code = "rate_limit"
			}
			idempotencytest.WriteStripeError(w, statuses[i-1], code, "refused by the test")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// TestWriteStripeErrorFailsAsStripe: a request a test fails with
// WriteStripeError fails as Stripe's would: Recover asks again for a page
// answered 429 and then 500, 1 and 2 s later on testing/synctest's clock,
// and applies the missed event; a 401 stops it at once with ErrStripeAPI.
// stripe-go reads the v1 answer as a *stripe.Error of its status, type and
// code, and the v2 one (a V2Events' fetch) as a *stripe.V2RawError of its
// type and code; a Handler answers a delivery whose fetch was failed 429
// or 500 with 503, for Stripe to send it again. A status that is not an error's
// panics.
func TestWriteStripeErrorFailsAsStripe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h, credits := newCreditHandler(t)
		api := idempotencytest.NewV1Events()
		api.AddUndelivered(invoicePaid(t, "evt_missed", "in_1", "acct_1"))
		client := idempotencytest.NewStripeClient("sk_test_123", failFirst(api, http.StatusTooManyRequests, http.StatusInternalServerError))
		start := time.Now()
		rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: start.Add(-time.Hour)})
		require.NoError(t, err)
		require.Equal(t, idempotency.RecoverReport{Listed: 1, Processed: 1, Requests: 4, LastEventID: "evt_missed"}, rep)
		require.Equal(t, 2, api.Requests(), "the fake answered the third and the fourth, the page after the event")
		require.Equal(t, 3*time.Second+100*time.Millisecond, time.Since(start), "asked again 1 and 2 s later, the next page at the pace")
		require.Equal(t, 100, credits.get("acct_1"))
	})

	h, _ := newCreditHandler(t)
	api := idempotencytest.NewV1Events()
	client := idempotencytest.NewStripeClient("sk_test_123", failFirst(api, http.StatusUnauthorized))
	rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.ErrorContains(t, err, "HTTP 401")
	require.Equal(t, 1, rep.Requests)
	require.Zero(t, api.Requests())

	for status, want := range map[int]struct {
		typ  stripe.ErrorType
		code stripe.ErrorCode
	}{
		http.StatusTooManyRequests:     {stripe.ErrorTypeInvalidRequest, stripe.ErrorCodeRateLimit},
		http.StatusInternalServerError: {stripe.ErrorTypeAPI, ""},
		http.StatusUnauthorized:        {stripe.ErrorTypeInvalidRequest, ""},
	} {
		client := idempotencytest.NewStripeClient("sk_test_123", failFirst(idempotencytest.NewV1Events(), status))
		for _, err := range client.V1Events.List(t.Context(), &stripe.EventListParams{}) {
			var se *stripe.Error
			require.ErrorAs(t, err, &se, "%d", status)
			require.Equal(t, status, se.HTTPStatusCode)
			require.Equal(t, want.typ, se.Type, "%d", status)
			require.Equal(t, want.code, se.Code, "%d", status)
			require.Equal(t, "refused by the test", se.Msg)
		}

		client = idempotencytest.NewStripeClient("sk_test_123", failFirst(idempotencytest.NewV2Events(), status))
		_, err := client.V2CoreEvents.Retrieve(t.Context(), "evt_1", nil)
		var v2 *stripe.V2RawError
		require.True(t, errors.As(err, &v2), "%d: %v", status, err)
		require.Equal(t, want.typ, *v2.Type, "%d", status)
		require.Equal(t, string(want.code), v2.Code, "%d", status)
	}

	// A V2Events' fetch failed 429, then 500: each delivery is answered
	// 503, for Stripe to send it again, and the next is applied.
	hs := idempotency.NewHandlers()
	received := meterErrors(hs, 0)
	v2 := idempotencytest.NewV2Events()
	thin, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler),
		StripeClient: idempotencytest.NewStripeClient(thinKey, failFirst(v2, http.StatusTooManyRequests, http.StatusInternalServerError)),
	})
	require.NoError(t, err)
	notification := v2.Add(meterError("evt_thin", "", time.Now()))
	for range 2 {
		a := idempotencytest.Deliver(thin, notification, testSecret)
		require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	}
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(thin, notification, testSecret).Outcome)
	require.Len(t, received(), 1)

	require.PanicsWithValue(t, "idempotencytest: WriteStripeError: status 200 is not an error's (4xx or 5xx)", func() {
		idempotencytest.WriteStripeError(httptest.NewRecorder(), http.StatusOK, "", "")
	})
}
