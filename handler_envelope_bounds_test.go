package idempotency_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The bounds of what the Handler accepts are themselves accepted, and
// kept, by both stores: an event id and an object id of 1024 bytes, and a
// created of the first second of the year 1 and the last of the year
// 9999. (TestHandlerRefusesEnvelopeNoStoreKeeps refuses one past each; no
// test failed when the bound itself was refused.)
func TestHandlerAcceptsEnvelopeAtItsBounds(t *testing.T) {
	t.Parallel()
	longID := func(id string) string { return id + strings.Repeat("x", 1024-len(id)) }
	cases := []struct {
		name, eventID string
		set           func(ev, obj map[string]any)
		created       time.Time // of the handler's Event, zero: not checked
	}{
		{name: "event id of 1024 bytes", eventID: longID("evt_bound_id_")},
		{name: "object id of 1024 bytes", eventID: "evt_bound_object_id",
			set: func(_, obj map[string]any) { obj["id"] = longID("in_bound_") }},
		{name: "created in the first second of the year 1", eventID: "evt_bound_created_early",
			set:     func(ev, _ map[string]any) { ev["created"] = int64(-62135596800) },
			created: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "created in the last second of the year 9999", eventID: "evt_bound_created_late",
			set:     func(ev, _ map[string]any) { ev["created"] = int64(253402300799) },
			created: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
	}
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seen := map[string]idempotency.Event[*stripe.Invoice]{}
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				seen[ev.ID] = ev
				return nil
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			for _, c := range cases {
				set := c.set
				if set == nil {
					set = func(map[string]any, map[string]any) {}
				}
				a := idempotencytest.Deliver(h, withField(t, c.eventID, set), testSecret)
				require.Equal(t, 200, a.Status, "%s: %s", c.name, a.Body)
				require.JSONEq(t, `{"outcome":"processed"}`, a.Body, c.name)
				ev, ran := seen[c.eventID]
				require.True(t, ran, "%s: the handler ran", c.name)
				if !c.created.IsZero() {
					require.True(t, ev.Created.Equal(c.created), "%s: Event.Created %s", c.name, ev.Created)
				}
				rec, found, err := store.(interface {
					LookupEvent(context.Context, string) (idempotency.EventRecord, bool, error)
				}).LookupEvent(t.Context(), c.eventID)
				require.NoError(t, err, c.name)
				require.True(t, found, "%s: the claim is stored", c.name)
				require.Equal(t, ev.ObjectID, rec.ObjectID, c.name)
			}
		})
	}
}
