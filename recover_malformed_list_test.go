package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// An Events API answer that breaks its own filter (an event created
// before the created[gte] asked for, on a page with more after it) fails
// the run with ErrStripeAPI. The search for the oldest page took it for a
// page whose events had been delivered meanwhile and started again, for
// as long as the context lasted.
func TestRecoverEventBeforeSinceIsAnAPIError(t *testing.T) {
	t.Parallel()
	since := time.Now().Truncate(time.Second).Add(-time.Hour)
	// Long before Since, and in the second just before it.
	for _, created := range []int64{5, since.Unix() - 1} {
		t.Run(fmt.Sprint(created), func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int64
			api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Query().Get("created[lt]") != "" {
					// Nothing is both before a second and at or after Since.
					_, _ = w.Write([]byte(`{"object":"list","url":"/v1/events","has_more":false,"data":[]}`))
					return
				}
				_, _ = fmt.Fprintf(w, `{"object":"list","url":"/v1/events","has_more":true,"data":[`+
					`{"id":"evt_old","object":"event","type":"invoice.paid","created":%d,"api_version":"2025-08-27.basil",`+
					`"data":{"object":{"id":"in_old","object":"invoice"}}}]}`, created)
			})
			client := idempotencytest.NewStripeClient(fakeStripeKey, api)
			app := newService(t, "memory")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := app.handler(t).Recover(ctx, client, idempotency.RecoverOptions{
				Since: since, RequestsPerSecond: 100,
			})
			require.ErrorIs(t, err, idempotency.ErrStripeAPI)
			require.Less(t, requests.Load(), int64(100), "a bounded number of requests")
		})
	}
}
