package idempotency_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStrictAPIVersionAnswersAKnownEventDuplicate: while an endpoint
// moves to another API version, Stripe sends each event to both
// endpoints, rendered in each one's version under one event id. Under
// StrictAPIVersion the copy of the other version was answered 400 even
// when its event had been applied from the other copy, and Stripe
// retried it for days, until it disabled that endpoint. A copy of
// another version whose event the store already holds (the ledger, or
// in inbox mode the inbox) is answered 200 duplicate, as any copy of a
// known event is, and nothing runs; one of an event the store does not
// hold is still refused 400, nothing stored. On both stores, in both
// modes.
func TestStrictAPIVersionAnswersAKnownEventDuplicate(t *testing.T) {
	t.Parallel()
	pinned := invoicePayload(t, "evt_strict_known", "in_strict_known", "acct_1")
	other := bytes.Replace(pinned, []byte(`"api_version":"`+stripe.APIVersion+`"`), []byte(`"api_version":"2025-09-30.clover"`), 1)
	require.NotEqual(t, pinned, other, "the copy of the other version")
	unknown := bytes.Replace(other, []byte("evt_strict_known"), []byte("evt_strict_unknown"), 1)

	for name, store := range bothStores(t) {
		for _, mode := range []string{"sync", "inbox"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				runs := 0
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
					runs++
					return nil
				})
				var results []idempotency.Result
				cfg := idempotency.Config{Secrets: []string{testSecret}, StrictAPIVersion: true, Logger: discardLogger(),
					OnResult: func(r idempotency.Result) { results = append(results, r) }}
				var h http.Handler
				var inbox *idempotency.Inbox
				if mode == "sync" {
					sh, err := idempotency.NewHandler(store, hs, cfg)
					require.NoError(t, err)
					h = sh
				} else {
					var err error
					inbox, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
					require.NoError(t, err)
					ih, err := inbox.Handler(cfg)
					require.NoError(t, err)
					h = ih
				}
				id := func(b []byte) []byte {
					return bytes.Replace(b, []byte("evt_strict_"), []byte("evt_strict_"+name+mode+"_"), 1)
				}

				a := idempotencytest.Deliver(h, id(unknown), testSecret)
				require.Equal(t, http.StatusBadRequest, a.Status, "an event the store does not hold: %s", a.Body)
				require.ErrorIs(t, results[len(results)-1].Err, idempotency.ErrAPIVersionMismatch)

				want := idempotency.OutcomeProcessed
				if mode == "inbox" {
					want = idempotency.OutcomeQueued
				}
				require.Equal(t, want, idempotencytest.Deliver(h, id(pinned), testSecret).Outcome)
				a = idempotencytest.Deliver(h, id(other), testSecret)
				require.Equal(t, http.StatusOK, a.Status, a.Body)
				require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome)
				require.Equal(t, idempotency.OutcomeDuplicate, results[len(results)-1].Outcome)
				require.NoError(t, results[len(results)-1].Err)

				if inbox != nil {
					_, err := inbox.WorkDue(t.Context())
					require.NoError(t, err)
					a = idempotencytest.Deliver(h, id(other), testSecret)
					require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, "applied: %s", a.Body)
					_, ok, err := inbox.Lookup(t.Context(), string(id([]byte("evt_strict_unknown"))))
					require.NoError(t, err)
					require.False(t, ok, "the refused event was not stored")
				}
				require.Equal(t, 1, runs, "applied once")
			})
		}
	}
}
