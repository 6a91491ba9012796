package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentRefusesTypesNoScopeFits: OnCurrent's guard scope of an
// event is "current:" and the kind of object of its type, a key both
// stores index (at most 1024 bytes). A type of a kind whose scope is past
// it is refused at registration, as NewAction refuses a name whose scope
// no store keeps. Accepted, every event of the type was skipped for good,
// answered 200, with the reason "data.object.id is not valid text", and
// never fetched.
func TestOnCurrentRefusesTypesNoScopeFits(t *testing.T) {
	t.Parallel()
	kind := strings.Repeat("x", 1024-len("current:")+1)
	types := []string{"customer.subscription.updated", kind + ".updated"}
	hs := idempotency.NewHandlers()
	fetched := false
	v := panicValue(func() {
		idempotency.OnCurrent(hs, types, func(context.Context, string, string) (*stripe.Subscription, error) {
			fetched = true
			return &stripe.Subscription{}, nil
		}, handleNothing)
	})
	if v == nil {
		// What a delivery met before: the event skipped, unfetched.
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		body := fmt.Sprintf(`{"id":"evt_current_scope","object":"event","type":%q,"data":{"object":{"id":"x_1"}}}`, types[1])
		res := idempotencytest.Deliver(h, []byte(body), testSecret)
		t.Fatalf("OnCurrent accepted a kind of %d bytes (a scope of more than 1024 bytes); a delivery: outcome %s, fetched %t", len(kind), res.Outcome, fetched)
	}
	err, ok := v.(error)
	require.True(t, ok, "the panic value is an error: %v", v)
	require.ErrorIs(t, err, idempotency.ErrInvalidKey)
	require.Empty(t, hs.EventTypes(), "nothing registered")
}

// Each event is locked under its own kind's scope, not under the call's
// kinds joined: a call of more kinds than would fit in one scope together
// is accepted, and an event of one of them is fetched and applied.
func TestOnCurrentScopeIsTheEventsKind(t *testing.T) {
	t.Parallel()
	types := []string{"customer.subscription.updated"}
	kinds := []string{"customer.subscription"}
	for i := len(types); len("current:"+strings.Join(kinds, ",")) <= 1024; i++ {
		kinds = append(kinds, fmt.Sprintf("custom_object_%03d", i))
		types = append(types, kinds[i]+".updated")
	}
	hs := idempotency.NewHandlers()
	var fetched, ran atomic.Int32
	require.NotPanics(t, func() {
		idempotency.OnCurrent(hs, types, func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			fetched.Add(1)
			return &stripe.Subscription{ID: id}, nil
		}, func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error {
			ran.Add(1)
			return nil
		})
	})
	require.Len(t, hs.EventTypes(), len(types))
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	res := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_current_scope_kind", nil), testSecret)
	require.Equal(t, http.StatusOK, res.Status, res.Body)
	require.Equal(t, idempotency.OutcomeProcessed, res.Outcome)
	require.EqualValues(t, 1, fetched.Load())
	require.EqualValues(t, 1, ran.Load())
}
