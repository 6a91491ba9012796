package idempotency_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverRefusesTheCheckpointOfAnotherStripeAccount: a service with
// two Stripe accounts of its own (US, EU) recovers each with its key, on
// one store, under one checkpoint name by mistake. The checkpoint keeps a
// connected account's Account, not which platform account listed it, so
// the EU run continued the US checkpoint: it listed from the US
// checkpoint's last event on, missed every EU event before it and
// reported success (Resumed, the US event as LastEventID). The EU listing
// does not list the checkpoint's last event: the run stops with
// ErrCheckpointMismatch, before any event created after that event's
// second and without moving the checkpoint, whether the EU account has
// such events or none. On both stores.
func TestRecoverRefusesTheCheckpointOfAnotherStripeAccount(t *testing.T) {
	t.Parallel()
	now := time.Now()
	paid := func(id string, at time.Time) []byte {
		return idempotencytest.Derive(fixture(t, "invoice.paid"), map[string]any{"id": id, "created": at.Unix()})
	}
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var applied sync.Map
			handler := func(secret string) *idempotency.Handler {
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(_ context.Context, tx idempotency.Tx, _ idempotency.Event[*stripe.Invoice]) error {
					applied.Store(tx.EventID(), true)
					return nil
				})
				h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{secret}, Logger: discardLogger()})
				require.NoError(t, err)
				return h
			}
			us, eu := handler("whsec_us_account"), handler("whsec_eu_account")
			usEvents, euEvents, eu2Events := &idempotencytest.V1Events{}, &idempotencytest.V1Events{}, &idempotencytest.V1Events{}
			usEvents.AddUndelivered(paid("evt_us_1", now.Add(-time.Hour)))
			euEvents.AddUndelivered(paid("evt_eu_old", now.Add(-5*time.Hour)))
			euEvents.AddUndelivered(paid("evt_eu_new", now.Add(-30*time.Minute)))
			eu2Events.AddUndelivered(paid("evt_eu2_old", now.Add(-5*time.Hour)))
			opts := idempotency.RecoverOptions{Since: now.Add(-6 * time.Hour), Checkpoint: "outage", RequestsPerSecond: 100}

			rep, err := us.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_us", usEvents), opts)
			require.NoError(t, err)
			require.Equal(t, "evt_us_1", rep.LastEventID)

			for _, c := range []struct {
				events *idempotencytest.V1Events
				ids    []string
			}{{euEvents, []string{"evt_eu_old", "evt_eu_new"}}, {eu2Events, []string{"evt_eu2_old"}}} {
				_, err = eu.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_eu", c.events), opts)
				require.ErrorIs(t, err, idempotency.ErrCheckpointMismatch)
				require.Contains(t, err.Error(), `checkpoint "outage"`)
				require.Contains(t, err.Error(), "evt_us_1")
				require.NotErrorAs(t, err, new(*idempotency.CheckpointMismatchError), "no option differs")
				for _, id := range c.ids {
					_, ok := applied.Load(id)
					require.False(t, ok, "%s handed to the Handler under the other account's checkpoint", id)
				}
			}

			rep, err = us.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_us", usEvents), opts)
			require.NoError(t, err, "the US checkpoint was not moved")
			require.True(t, rep.Resumed)
			require.Equal(t, "evt_us_1", rep.LastEventID)

			opts.Checkpoint = "outage:eu"
			rep, err = eu.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_eu", euEvents), opts)
			require.NoError(t, err)
			require.Equal(t, 2, rep.Processed, "the EU account under a checkpoint of its own")
		})
	}
}

// TestRecoverContinuesACheckpointWhoseLastEventMayHaveGone: the Events API
// keeps an event 30 days, so a checkpoint whose last event is within a day
// of that end may continue with a listing that no longer has it: the run
// goes on from it, as before there was a check, rather than taking the
// listing for another Stripe account's. On both stores.
func TestRecoverContinuesACheckpointWhoseLastEventMayHaveGone(t *testing.T) {
	t.Parallel()
	now := time.Now()
	old := now.Add(-idempotency.RecoveryWindow + 12*time.Hour)
	paid := func(id string, at time.Time) []byte {
		return idempotencytest.Derive(fixture(t, "invoice.paid"), map[string]any{"id": id, "created": at.Unix()})
	}
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{"whsec_edge"}, Logger: discardLogger()})
			require.NoError(t, err)
			opts := idempotency.RecoverOptions{Since: old.Add(-time.Minute), Checkpoint: "edge", RequestsPerSecond: 100}

			before := &idempotencytest.V1Events{}
			before.AddUndelivered(paid("evt_edge_old", old))
			rep, err := h.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_edge", before), opts)
			require.NoError(t, err)
			require.Equal(t, "evt_edge_old", rep.LastEventID)

			after := &idempotencytest.V1Events{} // the Events API let evt_edge_old go
			after.AddUndelivered(paid("evt_edge_new", now.Add(-time.Hour)))
			rep, err = h.Recover(t.Context(), idempotencytest.NewStripeClient("sk_test_edge", after), opts)
			require.NoError(t, err)
			require.True(t, rep.Resumed)
			require.Equal(t, 1, rep.Processed)
			require.Equal(t, "evt_edge_new", rep.LastEventID)
		})
	}
}
