package idempotency_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// An OnCurrent call that panics registers none of its types: one type
// that already has a handler, or that On refuses, or a type given twice,
// left the types sorted before it registered, so that a caller that
// recovered (a plugin loader, a test of its own registration) kept half
// a call, whose lock and fetch record no later call could share.
func TestOnCurrentThatPanicsRegistersNothing(t *testing.T) {
	t.Parallel()
	fetch := func(context.Context, string, string) (*stripe.Subscription, error) {
		return nil, errors.New("not called")
	}
	fn := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil }
	for name, tc := range map[string]struct {
		before func(hs *idempotency.Handlers)
		types  []string
		want   string
	}{
		"a later type has a handler": {
			before: func(hs *idempotency.Handlers) {
				idempotency.On(hs, "customer.subscription.updated", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
			},
			types: []string{"customer.subscription.created", "customer.subscription.updated"},
			want:  `event type "customer.subscription.updated" has a handler`,
		},
		"a later type On refuses": {
			types: []string{"customer.subscription.created", "customer.subscription.*"},
			want:  "customer.subscription.*",
		},
		"a type given twice": {
			types: []string{"customer.subscription.created", "customer.subscription.deleted", "customer.subscription.created"},
			want:  `event type "customer.subscription.created" is given twice`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			if tc.before != nil {
				tc.before(hs)
			}
			before := hs.EventTypes()
			require.PanicsWithError(t, panicText(t, func() { idempotency.OnCurrent(hs, tc.types, fetch, fn) }), func() {
				idempotency.OnCurrent(hs, tc.types, fetch, fn)
			})
			require.Contains(t, panicText(t, func() { idempotency.OnCurrent(hs, tc.types, fetch, fn) }), tc.want)
			require.Equal(t, before, hs.EventTypes(), "nothing registered")
			// The kind is still free for a call that is right.
			idempotency.OnCurrent(hs, []string{"customer.subscription.deleted"}, fetch, fn)
		})
	}
}

// panicText is the text of the error f panics with.
func panicText(t *testing.T, f func()) (text string) {
	t.Helper()
	defer func() {
		err, ok := recover().(error)
		require.True(t, ok, "panics with an error")
		text = err.Error()
	}()
	f()
	return ""
}
