package idempotency_test

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverPageThatDoesNotMoveTheCursorIsAnAPIError: an Events API page
// that says more follow but would give the next request the cursor it was
// asked with (it repeats the cursor's event, or the page before) cannot
// be gone on from: Recover fails with ErrStripeAPI. It asked the same
// again, counting the repeated events duplicates, until its context
// ended.
func TestRecoverPageThatDoesNotMoveTheCursorIsAnAPIError(t *testing.T) {
	t.Parallel()
	event := func(id string, created int64) string {
		return `{"id":"` + id + `","object":"event","type":"invoice.paid","created":` + strconv.FormatInt(created, 10) +
			`,"api_version":"` + stripe.APIVersion + `","data":{"object":{"id":"in_` + id + `","object":"invoice"}}}`
	}
	cases := map[string]func(q map[string]string, created int64) (string, bool){
		// ending_before=evt_b answers evt_b again, with more after it.
		"newer pages": func(q map[string]string, created int64) (string, bool) {
			if q["ending_before"] == "" {
				return event("evt_b", created) + "," + event("evt_a", created), false
			}
			return event("evt_b", created), true
		},
		// starting_after=evt_y, paging within the first second, answers
		// evt_y again, with more after it.
		"within the first second": func(q map[string]string, created int64) (string, bool) {
			if q["starting_after"] != "" || q["ending_before"] != "" {
				return event("evt_y", created), true
			}
			return event("evt_z", created) + "," + event("evt_y", created), true
		},
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				created := now.Add(-time.Minute).Unix()
				var requests atomic.Int64
				api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					requests.Add(1)
					q := map[string]string{}
					for k, v := range r.URL.Query() {
						q[k] = v[0]
					}
					data, more := answer(q, created)
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"object":"list","url":"/v1/events","has_more":` + strconv.FormatBool(more) + `,"data":[` + data + `]}`))
				})
				client := idempotencytest.NewStripeClient(fakeStripeKey, api)
				app := newService(t, "memory")
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				rep, err := app.handler(t).Recover(ctx, client, idempotency.RecoverOptions{
					Since: now.Add(-time.Hour), PageSize: 2, RequestsPerSecond: 100,
				})
				require.ErrorIs(t, err, idempotency.ErrStripeAPI, "%+v", rep)
				require.NotErrorIs(t, err, context.DeadlineExceeded)
				require.Less(t, requests.Load(), int64(100), "a bounded number of requests")
			})
		})
	}
}
