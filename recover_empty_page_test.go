package idempotency_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverEmptyPageWithMoreIsAnAPIError: an Events API page with no
// event that says more follow (has_more true) gives the walk no cursor to
// go on from. Recover fails with ErrStripeAPI, whichever request gets it:
// it panicked (index out of range) when it was the first page or a page
// of the first second, and ended the run as complete, reporting nothing
// of the events it had not listed, when it was a later page.
func TestRecoverEmptyPageWithMoreIsAnAPIError(t *testing.T) {
	t.Parallel()
	now := time.Now()
	created := now.Add(-time.Minute).Unix()
	event := []byte(`{"id":"evt_edge_1","object":"event","type":"invoice.paid","created":` + itoa(created) +
		`,"api_version":"` + stripe.APIVersion + `","data":{"object":{"id":"in_edge_1","object":"invoice"}}}`)
	page := func(hasMore bool, events ...[]byte) []byte {
		b := []byte(`{"object":"list","url":"/v1/events","has_more":`)
		if hasMore {
			b = append(b, "true"...)
		} else {
			b = append(b, "false"...)
		}
		b = append(b, `,"data":[`...)
		for i, ev := range events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, ev...)
		}
		return append(b, "]}"...)
	}
	cases := map[string]func(r *http.Request) []byte{
		"first page": func(*http.Request) []byte { return page(true) },
		"a later page": func(r *http.Request) []byte {
			if r.URL.Query().Get("ending_before") == "" {
				return page(false, event)
			}
			return page(true)
		},
		"within the first second": func(r *http.Request) []byte {
			q := r.URL.Query()
			switch {
			case q.Get("starting_after") != "":
				return page(true)
			case q.Get("created[lt]") != "" || q.Get("ending_before") == "":
				return page(true, event)
			}
			return page(false)
		},
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(answer(r))
			})
			client := idempotencytest.NewStripeClient(fakeStripeKey, api)
			app := newService(t, "memory")
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var rep idempotency.RecoverReport
			var err error
			require.NotPanics(t, func() {
				rep, err = app.handler(t).Recover(ctx, client, idempotency.RecoverOptions{
					Since: now.Add(-time.Hour), RequestsPerSecond: 100,
				})
			})
			require.ErrorIs(t, err, idempotency.ErrStripeAPI, "%+v", rep)
			require.Contains(t, err.Error(), "has_more")
			require.Less(t, rep.Requests, 100, "a bounded number of requests")
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
