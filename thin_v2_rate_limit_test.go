package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinEventV2RateLimitIsUnavailable: the v2 API answers a rate limit
// with the error type rate_limit (v1's is rate_limit_error, or
// invalid_request_error with the code rate_limit), and stripe-go keeps no
// status of a v2 error: a thin event whose fetch is rate limited is
// answered 503 stripe_unavailable, as a 429 is, not 500.
func TestThinEventV2RateLimitIsUnavailable(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	thinEvents(app)
	notification, _ := thinEvent("evt_thin_rate")
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"type":"rate_limit","message":"Too many requests."}}`))
	})
	var res idempotency.Result
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(),
		StripeClient: retryingClient(api),
		OnResult:     func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.JSONEq(t, `{"error":"stripe_unavailable"}`, a.Body)
	require.ErrorIs(t, res.Err, idempotency.ErrStripeAPI)
	require.Equal(t, idempotency.OutcomeFailed, res.Outcome, "failed, answered 503, as OutcomeFailed says")
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	require.Empty(t, app.appliedCounts(t))
}
