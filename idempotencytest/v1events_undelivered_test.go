package idempotencytest_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV1EventsAddUndelivered: Add keeps an event Stripe delivered and
// AddUndelivered one whose delivery failed, each returning the payload;
// delivery_success=false lists only the missed one, true only the
// delivered one, and a missed event added again with Add (Stripe's retry
// reached the endpoint) is delivered, in its place.
func TestV1EventsAddUndelivered(t *testing.T) {
	t.Parallel()
	f := idempotencytest.NewV1Events()
	delivered, missed := snapshot(t, "evt_delivered", "invoice.paid", "", 100), snapshot(t, "evt_missed", "invoice.paid", "", 101)
	require.Equal(t, delivered, f.Add(delivered))
	require.Equal(t, missed, f.AddUndelivered(missed))
	for query, want := range map[string][]string{
		"":                       {"evt_missed", "evt_delivered"},
		"delivery_success=false": {"evt_missed"},
		"delivery_success=true":  {"evt_delivered"},
	} {
		status, listed, _, stripeErr := listV1(t, f, query, "")
		require.Equal(t, http.StatusOK, status, "%s: %v", query, stripeErr)
		require.Equal(t, want, listed, query)
	}

	f.Add(missed)
	_, listed, _, _ := listV1(t, f, "delivery_success=false", "")
	require.Empty(t, listed)
	_, listed, _, _ = listV1(t, f, "delivery_success=true", "")
	require.Equal(t, []string{"evt_missed", "evt_delivered"}, listed)

	require.PanicsWithValue(t, "idempotencytest: V1Events.AddUndelivered: the payload's id is empty", func() {
		f.AddUndelivered([]byte(`{"type":"invoice.paid","created":100}`))
	})
}
