package idempotencytest_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV1EventsRefusesAParameterAsStripe: V1Events refuses a parameter as
// the Stripe API does, with the code and the param stripe-go reads
// (stripe.Error's Code and Param): one it does not know is
// parameter_unknown, an integer that is not one parameter_invalid_integer,
// a cursor it does not list resource_missing, a value out of bounds and
// both cursors no code (Stripe has none for them), each naming the parameter,
// so that a test of code that lists events itself sees the refusal
// Stripe would give it.
func TestV1EventsRefusesAParameterAsStripe(t *testing.T) {
	t.Parallel()
	f := idempotencytest.NewV1Events()
	f.Add(snapshot(t, "evt_1", "invoice.paid", "", 100))
	client := idempotencytest.NewStripeClient("sk_test_123", f)
	for _, c := range []struct {
		param, value string
		code         stripe.ErrorCode
	}{
		{"not_a_parameter", "1", stripe.ErrorCodeParameterUnknown},
		{"created[gte]", "yesterday", stripe.ErrorCodeParameterInvalidInteger},
		{"limit", "ten", stripe.ErrorCodeParameterInvalidInteger},
		{"starting_after", "evt_nope", stripe.ErrorCodeResourceMissing},
		{"ending_before", "evt_nope", stripe.ErrorCodeResourceMissing},
		// A value out of bounds has no code of its own: stripe-go's
		// ErrorCode lists none, and Stripe answers both cursors with
		// none. An invented code would pass a test that Stripe fails.
		{"limit", "101", ""},
		{"delivery_success", "maybe", ""},
	} {
		params := &stripe.EventListParams{}
		params.Filters.AddFilter(c.param, "", c.value)
		se := listError(t, client, params)
		require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode, c.param)
		require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type, c.param)
		require.Equal(t, c.code, se.Code, c.param)
		require.Equal(t, c.param, se.Param, c.param)
	}
	params := &stripe.EventListParams{}
	params.Filters.AddFilter("starting_after", "", "evt_1")
	params.Filters.AddFilter("ending_before", "", "evt_1")
	se := listError(t, client, params)
	require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
	require.Empty(t, se.Code, "Stripe answers both cursors without a code")
	require.Equal(t, "Received both starting_after and ending_before parameters. Please pass in only one.", se.Msg)
}

// listError lists events with params through client and returns the
// *stripe.Error its first page fails with, failing t if it does not.
func listError(t *testing.T, client *stripe.Client, params *stripe.EventListParams) *stripe.Error {
	t.Helper()
	var se *stripe.Error
	for ev, err := range client.V1Events.List(t.Context(), params) {
		require.Nil(t, ev)
		require.True(t, errors.As(err, &se), "%v", err)
		break
	}
	require.NotNil(t, se, "the list failed with no *stripe.Error")
	return se
}
