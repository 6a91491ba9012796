package idempotencytest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestV2EventsZeroValueIsReady: a V2Events declared without NewV2Events
// (a field of a test's fixture struct, a var) keeps and answers events as
// one NewV2Events returns, and counts the fetches of an id it never kept.
func TestV2EventsZeroValueIsReady(t *testing.T) {
	t.Parallel()
	var fixture struct{ api idempotencytest.V2Events }
	require.Zero(t, fixture.api.Fetches("evt_1"))
	client := idempotencytest.NewStripeClient(thinKey, &fixture.api)
	_, err := client.V2CoreEvents.Retrieve(t.Context(), "evt_1", nil)
	require.Error(t, err, "an event not kept yet")
	require.NotEmpty(t, fixture.api.Add(meterError("evt_1", "", time.Time{})))
	_, err = client.V2CoreEvents.Retrieve(t.Context(), "evt_1", nil)
	require.NoError(t, err)
	require.Equal(t, 2, fixture.api.Fetches("evt_1"))
}
