package idempotency_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnCurrentRefusesTypesNoScopeFits: OnCurrent's guard scope is
// "current:" and the kinds of object of its event types joined, a key
// both stores index (at most 1024 bytes). Types of kinds that add up past
// it are refused at registration, as NewAction refuses a name whose scope
// no store keeps. Accepted, every event of those types was skipped for
// good, answered 200, with the reason "data.object.id is not valid text",
// and never fetched.
func TestOnCurrentRefusesTypesNoScopeFits(t *testing.T) {
	t.Parallel()
	types := []string{"customer.subscription.updated"}
	kinds := []string{"customer.subscription"}
	for i := len(types); len("current:"+strings.Join(kinds, ",")) <= 1024; i++ {
		kinds = append(kinds, fmt.Sprintf("custom_object_%03d", i))
		types = append(types, kinds[i]+".updated")
	}
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
		res := idempotencytest.Deliver(h, eventPayload(t, "customer.subscription.updated", "evt_current_scope", nil), testSecret)
		t.Fatalf("OnCurrent accepted %d types (a scope of more than 1024 bytes); a delivery: outcome %s, fetched %t", len(types), res.Outcome, fetched)
	}
	err, ok := v.(error)
	require.True(t, ok, "the panic value is an error: %v", v)
	require.ErrorIs(t, err, idempotency.ErrInvalidKey)
}

// The scope names each kind once, however the kinds of a call's types
// interleave once sorted (custom_object_000.b.created between
// custom_object_000.a.created and custom_object_000.updated): types of
// kinds that fit in it, each once, are accepted.
func TestOnCurrentScopeNamesEachKindOnce(t *testing.T) {
	t.Parallel()
	var types, kinds []string
	for i := 0; ; i++ {
		object := fmt.Sprintf("custom_object_%03d", i)
		more := append(slices.Clone(kinds), object, object+".b")
		if len("current:"+strings.Join(more, ",")) > 1024 {
			break
		}
		kinds = more
		types = append(types, object+".a", object+".b.created", object+".updated")
	}
	// A kind named again after each interleaving one would not fit.
	require.Greater(t, len("current:"+strings.Join(kinds, ","))+len(types)/3*len(",custom_object_000"), 1024)
	hs := idempotency.NewHandlers()
	require.NotPanics(t, func() {
		idempotency.OnCurrent(hs, types, func(context.Context, string, string) (*stripe.Subscription, error) {
			return &stripe.Subscription{}, nil
		}, handleNothing)
	})
	require.Len(t, hs.EventTypes(), len(types))
}
