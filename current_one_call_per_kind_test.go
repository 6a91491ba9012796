package idempotency_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestOnCurrentRefusesASecondCallOfOneKind: OnCurrent's lock and fetch
// record are a kind of object's, named by its event types less their last
// segment (a v2 type's bracketed part aside, and a v1 thin event's "v1."
// prefix: v1.billing.meter.error_report_triggered is about the meter that
// billing.meter.updated is), so that a release adding a
// type to the call shares them with the release before it. A second
// OnCurrent call with a type of a kind the first has panics with
// ErrDuplicateRegistration, naming the kind and a type of that kind the
// first call has (not its first type, which may be of another kind): the
// two would share the fetch record, and an event of one call covered by the other's fetch
// would never run its own handler. (Accepted, the two calls locked the
// object apart, and events of one subscription registered by the two did
// not wait for each other.) Calls of different kinds, customer and
// customer.subscription, are two registrations.
func TestOnCurrentRefusesASecondCallOfOneKind(t *testing.T) {
	t.Parallel()
	fetch := func(context.Context, string, string) (*stripe.Subscription, error) {
		return &stripe.Subscription{}, nil
	}
	for _, c := range []struct {
		first, second []string
		kind, with    string
	}{
		{[]string{"customer.subscription.created", "customer.subscription.updated"}, []string{"customer.subscription.deleted"}, "customer.subscription", "customer.subscription.created"},
		{[]string{"customer.updated", "customer.subscription.updated"}, []string{"customer.subscription.deleted"}, "customer.subscription", "customer.subscription.updated"},
		{[]string{"customer.subscription.updated", "customer.updated"}, []string{"customer.deleted"}, "customer", "customer.updated"},
		{[]string{"v2.core.account[requirements].updated"}, []string{"v2.core.account.created"}, "v2.core.account", "v2.core.account[requirements].updated"},
		{[]string{"billing.meter.updated"}, []string{"v1.billing.meter.error_report_triggered"}, "billing.meter", "billing.meter.updated"},
	} {
		hs := idempotency.NewHandlers()
		idempotency.OnCurrent(hs, c.first, fetch, handleNothing)
		v := panicValue(func() { idempotency.OnCurrent(hs, c.second, fetch, handleNothing) })
		err, ok := v.(error)
		require.True(t, ok, "OnCurrent(%q) after OnCurrent(%q) panics with an error: %v", c.second, c.first, v)
		require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
		require.ErrorContains(t, err, "the events of "+c.kind+" objects have an OnCurrent call already (with "+strconv.Quote(c.with)+")")
	}

	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.updated"}, func(context.Context, string, string) (*stripe.Customer, error) {
		return &stripe.Customer{}, nil
	}, func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Customer]) error { return nil })
	require.NotPanics(t, func() { idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetch, handleNothing) })
}
