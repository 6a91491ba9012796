package idempotency_test

import (
	"context"
	"encoding/json"
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
// event's data.object (*stripe.Customer for an invoice) is never given
// the object decoded into it: json.Unmarshal would fill the fields the two
// share (the invoice's id as the customer's) and leave the rest zero, and
// the event would be processed on that. On refuses it for a type whose
// objects stripe-mock's specification gives
// (TestOnRefusesTheStripeTypeOfAnotherObject); for a type it does not
// describe (one Stripe added since), the event fails instead with an
// error that names both objects and no value of the payload: the
// synchronous Handler answers 500; the inbox retries it with its backoff
// and dead-letters it after MaxAttempts, and its LastError says why.
func TestOnWrongStripeTypeFails(t *testing.T) {
	t.Parallel()
	const typ = "invoice.reminder_sent" // a type the specification does not describe
	const want = `idempotency: decoding data.object of invoice.reminder_sent event into *stripe.Customer: data.object's object is "invoice": *stripe.Customer is another object's type`
	require.Empty(t, idempotency.EventObjects(typ))
	payload := idempotencytest.Derive(fixture(t, "invoice.paid"), map[string]any{"type": typ})
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			var ran atomic.Int32
			hs := idempotency.NewHandlers()
			idempotency.On(hs, typ, func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Customer]) error {
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

// TestOnRefusesTheStripeTypeOfAnotherObject: On refuses, when it is
// called, a stripe-go type that is none of the objects the event type
// carries, naming them, and registers nothing; the type of one of them, a
// polymorphic stripe-go type, a type of the service's own, a fetched
// OnCurrent handler and an event type the specification does not describe
// are registered.
func TestOnRefusesTheStripeTypeOfAnotherObject(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	err := onNothing[*stripe.Customer](hs, "invoice.paid")
	require.EqualError(t, err, `idempotency: On: events of type "invoice.paid" carry data.object "invoice", and *stripe.Customer is the stripe-go type of another object: each would be decoded wrong or fail to decode; register the handler with the stripe-go type of "invoice"`)
	require.Empty(t, hs.EventTypes(), "nothing registered")
	err = onNothing[*stripe.Charge](hs, "customer.source.created")
	require.ErrorContains(t, err, `carry data.object "bank_account", "card" or "source", and *stripe.Charge is`)
	require.ErrorContains(t, err, "*stripe.PaymentSource for customer.source.*")
	v, _ := panicValue(func() {
		idempotency.On(hs, "charge.dispute.created", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Charge]) error { return nil })
	}).(error)
	require.ErrorContains(t, v, `carry data.object "dispute"`)
	// Types whose names end as the object's does, of other objects: the
	// name must be the object's exactly.
	require.ErrorContains(t, onNothing[*stripe.TreasuryFinancialAccount](hs, "account.updated"), `carry data.object "account", and *stripe.TreasuryFinancialAccount is`)
	require.ErrorContains(t, onNothing[*stripe.IssuingDispute](hs, "charge.dispute.created"), `carry data.object "dispute", and *stripe.IssuingDispute is`)
	require.ErrorContains(t, onNothing[*stripe.IssuingCard](hs, "customer.source.created"), "*stripe.IssuingCard is")
	require.ErrorContains(t, onNothing[*stripe.CashBalance](hs, "balance.available"), "*stripe.CashBalance is")
	require.Empty(t, hs.EventTypes(), "nothing registered")

	type row struct{ ID string }
	for _, err := range []error{
		onNothing[*stripe.Invoice](hs, "invoice.paid"),
		onNothing[stripe.Dispute](hs, "charge.dispute.created"),
		onNothing[*stripe.Card](hs, "customer.source.created"),
		onNothing[*stripe.PaymentSource](hs, "customer.source.updated"),
		onNothing[*stripe.SigmaScheduledQueryRun](hs, "sigma.scheduled_query_run.created"),
		onNothing[*stripe.Discount](hs, "customer.discount.created"),
		onNothing[*stripe.Account](hs, "account.updated"),
		onNothing[*stripe.TreasuryFinancialAccount](hs, "treasury.financial_account.created"),
		onNothing[*stripe.TaxID](hs, "customer.tax_id.created"),
		onNothing[*stripe.InvoiceItem](hs, "invoiceitem.created"),
		onNothing[row](hs, "customer.updated"),
		onNothing[json.RawMessage](hs, "payout.paid"),
		onNothing[*stripe.Customer](hs, "invoice.reminder_sent"),
	} {
		require.NoError(t, err)
	}
	require.NotPanics(t, func() { // its handler is given the fetched object: nothing decodes data.object into it
		idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchNothing, handleNothing)
	})
}

// onNothing registers in hs, with OnSafely, a handler of eventType given
// an Event[T] that does nothing.
func onNothing[T any](hs *idempotency.Handlers, eventType string) error {
	return idempotency.OnSafely(hs, eventType, func(context.Context, idempotency.Tx, idempotency.Event[T]) error { return nil })
}
