package idempotencytest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV1EventsRefusesExpandSayingWhy: expand[], a parameter the Events
// API takes, is refused 400 with param expand and no code (not
// parameter_unknown, which says Stripe does not take it), and a message
// that names the path and says why: an event is listed as Add kept it,
// and a test that wants an object expanded writes it into the payload.
func TestV1EventsRefusesExpandSayingWhy(t *testing.T) {
	t.Parallel()
	f := idempotencytest.NewV1Events()
	f.Add(snapshot(t, "evt_1", "invoice.paid", "", 100))
	client := idempotencytest.NewStripeClient("sk_test_123", f)
	params := &stripe.EventListParams{}
	params.AddExpand("data.data.object.customer")
	se := listError(t, client, params)
	require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	require.Empty(t, se.Code, "Stripe has no code for a path it cannot expand")
	require.Equal(t, "expand", se.Param)
	require.Equal(t, "idempotencytest.V1Events expands nothing (data.data.object.customer): it lists each event as Add kept it; "+
		"write the expanded object into the payload instead", se.Msg)

	status, listed, _, stripeErr := listV1(t, f, "expand[]=data.request&limit=1", "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Empty(t, listed)
	require.Equal(t, "expand", stripeErr["param"])
	require.Contains(t, stripeErr["message"], "(data.request)")
}
