package idempotency_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverWithABadKeySaysSo: an API key the Events API refuses (401),
// or one without read access to events (403), stops Recover with an
// ErrStripeAPI that says the key is the cause, never quoting the key nor
// Stripe's message (which repeats part of it). It said "HTTP 401
// invalid_request_error" and nothing of the key.
func TestRecoverWithABadKeySaysSo(t *testing.T) {
	t.Parallel()
	const badKey = "rk_live_refused_0123456789abcdef"
	for status, says := range map[int]string{
		http.StatusUnauthorized: "the API key was refused",
		http.StatusForbidden:    "the API key is not allowed this request",
	} {
		api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, body := stripeError(status, "invalid_request_error", "", "Invalid API Key provided: rk_live_****cdef")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write(body)
		})
		client := idempotencytest.NewStripeClient(badKey, api)
		app := newService(t, "memory")
		rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{Since: time.Now().Add(-time.Hour)})
		require.ErrorIs(t, err, idempotency.ErrStripeAPI, "%d", status)
		require.Contains(t, err.Error(), says, status)
		require.False(t, strings.Contains(err.Error(), "cdef") || strings.Contains(err.Error(), "refused_0123"), "%d: %v", status, err)
		require.Zero(t, rep.Listed)
	}
}
