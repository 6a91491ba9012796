package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// In inbox mode an event of a type without a handler is answered
// {"outcome":"ignored"} and stored nowhere, unless Config.RecordIgnored
// stores its row as ignored, which then answers its copies duplicate; a
// handled event is answered {"outcome":"queued"}, then duplicate, and its
// row holds the envelope's fields.
func TestInboxHandlerAnswersAndRows(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "customer.created", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Customer]) error { return nil })
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
			require.NoError(t, err)
			plain, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			recording, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), RecordIgnored: true})
			require.NoError(t, err)
			want := func(h http.Handler, id, body string) {
				t.Helper()
				a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret)
				require.Equal(t, http.StatusOK, a.Status, id)
				require.Equal(t, body, a.Body, id)
			}
			want(plain, "evt_plain", `{"outcome":"ignored"}`)
			want(plain, "evt_plain", `{"outcome":"ignored"}`)
			_, found, err := in.Lookup(t.Context(), "evt_plain")
			require.NoError(t, err)
			require.False(t, found, "an ignored event is stored only with RecordIgnored")

			want(recording, "evt_recorded", `{"outcome":"ignored"}`)
			want(recording, "evt_recorded", `{"outcome":"duplicate"}`)
			want(plain, "evt_recorded", `{"outcome":"ignored"}`)
			rec, found, err := in.Lookup(t.Context(), "evt_recorded")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.InboxIgnored, rec.State)
			require.True(t, rec.NextAttemptAt.IsZero(), "an ignored row is never due")
			require.True(t, rec.FinishedAt.Equal(clock.Now()), "an ignored row is finished when stored")

			customer := func(id string) []byte {
				return []byte(`{"id":"` + id + `","object":"event","type":"customer.created","api_version":"` + stripe.APIVersion +
					`","created":1756742400,"livemode":true,"account":"acct_live","data":{"object":{"id":"cus_1","object":"customer"}}}`)
			}
			for _, body := range []string{`{"outcome":"queued"}`, `{"outcome":"duplicate"}`} {
				a := idempotencytest.Deliver(plain, customer("evt_handled"), testSecret)
				require.Equal(t, http.StatusOK, a.Status)
				require.Equal(t, body, a.Body)
			}
			rec, found, err = in.Lookup(t.Context(), "evt_handled")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, idempotency.InboxPending, rec.State)
			require.Equal(t, "customer.created", rec.EventType)
			require.Equal(t, "cus_1", rec.ObjectID)
			require.Equal(t, "acct_live", rec.Account)
			require.True(t, rec.Livemode)
			require.Equal(t, stripe.APIVersion, rec.APIVersion)
			require.True(t, rec.Created.Equal(time.Unix(1756742400, 0)))
			require.True(t, rec.NextAttemptAt.Equal(clock.Now()))

			// A sender that hung up does not cut the insert short: the
			// event is stored and answered queued.
			hungUp, cancel := context.WithCancel(t.Context())
			cancel()
			w := httptest.NewRecorder()
			plain.ServeHTTP(w, idempotencytest.NewSignedRequest("/", customer("evt_hung_up"), testSecret).WithContext(hungUp))
			require.Equal(t, `{"outcome":"queued"}`, w.Body.String())
		})
	}
}
