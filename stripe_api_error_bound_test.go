package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStripeAPIErrorQuotesNoAnswerText: the error of a refused request
// names Stripe's error type and code and the request id, which are short
// identifiers; an answer that carries something else there (a proxy's or
// a broken gateway's JSON, an object's data, a megabyte) is not quoted
// into the error, the delivery's log line or the inbox's LastError, and
// the error stays short.
func TestStripeAPIErrorQuotesNoAnswerText(t *testing.T) {
	t.Parallel()
	const secret = "jane.doe@example.com"
	filler := strings.Repeat("x", 4<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req "+secret+" "+filler)
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(`{"error":{"type":"api_error ` + secret + filler + `","code":"` + secret + ` ` + filler + `","message":"` + secret + `"}}`))
	}))
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))

	_, err := idempotency.Retrieve(client.V1Subscriptions.Retrieve)(t.Context(), "sub_1", "")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.Contains(t, err.Error(), "HTTP 502")
	require.NotContains(t, err.Error(), secret)
	require.Less(t, len(err.Error()), 500, "the error is bounded")

	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, idempotency.Retrieve(client.V1Subscriptions.Retrieve),
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
	log, logs := testLogger()
	store := idempotency.NewMemoryStore()
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: log})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, fixture(t, "customer.subscription.updated"), testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
	require.NotContains(t, logs.String(), secret)
	require.Less(t, len(logs.String()), 2000, "the log line is bounded")

	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: log, Backoff: func(int) time.Duration { return time.Hour }})
	require.NoError(t, err)
	ih, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: log})
	require.NoError(t, err)
	ev := eventPayload(t, "customer.subscription.updated", "evt_inbox_bound", nil)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, ev, testSecret).Outcome)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, ok, err := in.Lookup(t.Context(), "evt_inbox_bound")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxFailed, rec.State)
	require.Contains(t, rec.LastError, "HTTP 502")
	require.NotContains(t, rec.LastError, secret)
}
