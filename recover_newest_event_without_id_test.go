package idempotency_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverNewestEventWithoutIDIsAnAPIError: a listed page whose newest
// event has no id gives the next request no cursor: Recover fails with
// ErrStripeAPI after handling the page once (the event without an id
// failed, the other applied), and asks nothing more. (No test failed when
// the check went: the next request, made without ending_before, listed
// the same page again, handled it a second time, and the run reported
// success.)
func TestRecoverNewestEventWithoutIDIsAnAPIError(t *testing.T) {
	t.Parallel()
	created := time.Now().Add(-time.Minute).Unix()
	var requests atomic.Int64
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"object":"list","url":"/v1/events","has_more":false,"data":[`+
			`{"object":"event","type":"invoice.paid","created":%[1]d,"api_version":"%[2]s","data":{"object":{"id":"in_b","object":"invoice"}}},`+
			`{"id":"evt_a","object":"event","type":"invoice.paid","created":%[1]d,"api_version":"%[2]s","data":{"object":{"id":"in_a","object":"invoice"}}}]}`,
			created, stripe.APIVersion)
	})
	client := idempotencytest.NewStripeClient(fakeStripeKey, api)
	app := newService(t, "memory")
	rep, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{
		Since: time.Now().Add(-time.Hour), RequestsPerSecond: 100,
	})
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.ErrorContains(t, err, "an event without an id")
	require.Equal(t, int64(1), requests.Load())
	require.Equal(t, idempotency.RecoverReport{Listed: 2, Processed: 1, Failed: 1, FailedIDs: []string{""}, Requests: 1, LastEventID: "evt_a"}, rep)
	app.requireAppliedOnce(t, []string{"evt_a"})
}
