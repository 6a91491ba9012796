package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestMalformedEventTextOnce: a verified body that is not a Stripe event
// is reported (Result.Err, and the delivery's log line) as "idempotency:
// malformed event: " and what is wrong with it, and still wraps
// ErrMalformedEvent; so is a thin notification, and a v2 event fetched
// for one says that it is malformed, under ErrStripeAPI. They read
// "idempotency: malformed event: envelope: malformed event: \"type\" is
// missing": the words of the parser inside the package after the
// package's own.
func TestMalformedEventTextOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, body, want string
	}{
		{"no type", `{"id":"evt_1","object":"event","data":{"object":{"id":"in_1"}}}`, `idempotency: malformed event: "type" is missing`},
		{"not JSON", `{"id":`, `idempotency: malformed event: unexpected end of input at offset 6`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, idempotency.Config{}, nil)
			rec := b.serve(idempotencytest.NewSignedRequest("/", []byte(tt.body), testSecret))
			require.Equal(t, http.StatusBadRequest, rec.Code)
			err := b.lastResult(t).Err
			require.ErrorIs(t, err, idempotency.ErrMalformedEvent)
			require.EqualError(t, err, tt.want)
			require.NotContains(t, b.logs.String(), "envelope")
		})
	}

	t.Run("thin", func(t *testing.T) {
		t.Parallel()
		app := newService(t, "memory")
		thinEvents(app)
		f := newFakeStripe()
		n, _ := thinEvent("evt_thin_malformed")
		f.v2["evt_thin_malformed"] = []byte(`{"id":"evt_thin_malformed","object":"v2.core.event"}`)
		results := make(chan idempotency.Result, 1)
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
			OnResult: func(r idempotency.Result) { results <- r },
		})
		require.NoError(t, err)

		idempotencytest.Deliver(h, []byte(`{"id":"evt_thin_no_type","object":"v2.core.event"}`), testSecret)
		err = (<-results).Err
		require.ErrorIs(t, err, idempotency.ErrMalformedEvent)
		require.EqualError(t, err, `idempotency: malformed event: thin event notification: "type" is missing`)

		idempotencytest.Deliver(h, n, testSecret)
		err = (<-results).Err
		require.ErrorIs(t, err, idempotency.ErrStripeAPI)
		require.EqualError(t, err, `idempotency: Stripe API request failed: the v2 event fetched for evt_thin_malformed is malformed: "type" is missing`)
	})
}
