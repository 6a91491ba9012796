package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestRetrieveOfNilPanics: Retrieve of a nil method is a programming
// error, refused where it is made, as OnCurrent refuses a nil fetch. It
// returned a FetchFunc that OnCurrent took, and that panicked at every
// fetch: every event of the registration failed, at run time.
func TestRetrieveOfNilPanics(t *testing.T) {
	t.Parallel()
	var retrieve func(context.Context, string, *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error)
	require.PanicsWithError(t, "idempotency: Retrieve: nil retrieve func", func() {
		idempotency.Retrieve(retrieve)
	})
}
