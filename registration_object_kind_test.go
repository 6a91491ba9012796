package idempotency_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A handler registered with the stripe-go type of another object than the
// event's data.object (*stripe.Customer for invoice.paid) is never given
// the object decoded into it: json.Unmarshal would fill the fields the two
// share (the invoice's id as the customer's) and leave the rest zero, and
// the event would be processed on that. The event fails instead with an
// error that names both objects and no value of the payload: the
// synchronous Handler answers 500; the inbox retries it with its backoff
// and dead-letters it after MaxAttempts, and its LastError says why.
func TestOnWrongStripeTypeFails(t *testing.T) {
	t.Parallel()
	const want = `idempotency: decoding data.object of invoice.paid event into *stripe.Customer: data.object's object is "invoice": *stripe.Customer is another object's type`
	payload := fixture(t, "invoice.paid")
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Customer]) error {
				ran.Add(1)
				return nil
			})

			var results []idempotency.Result
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(),
				OnResult: func(r idempotency.Result) { results = append(results, r) }})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, payload, testSecret)
			require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
			require.Len(t, results, 1)
			var decodeErr *idempotency.DecodeError
			require.ErrorAs(t, results[0].Err, &decodeErr)
			require.EqualError(t, results[0].Err, want)

			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(), MaxAttempts: 2})
			require.NoError(t, err)
			ih, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(ih, payload, testSecret).Outcome)
			id := parseFixture(t, payload).ID
			for attempt, state := range []idempotency.InboxState{idempotency.InboxFailed, idempotency.InboxDeadLetter} {
				n, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, n)
				rec, _, err := inbox.Lookup(t.Context(), id)
				require.NoError(t, err)
				require.Equal(t, state, rec.State)
				require.Equal(t, attempt+1, rec.Attempt)
				require.Equal(t, want, rec.LastError)
				clock.Advance(2 * time.Second) // past the first backoff (1 s ±10%)
			}
			require.Zero(t, ran.Load(), "the handler ran on a wrongly decoded object")
		})
	}
}
