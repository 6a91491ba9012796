package idempotency_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinDeliveryResultNamesTheAccount: a thin notification's Result
// carries its context as Account, also when the delivery ends before the
// event is fetched and accepted: a fetch the API refuses (a connected
// account the platform lost access to, an event it does not hold) is the
// case an operator needs the account for. It was set only once the
// fetched event was accepted.
func TestThinDeliveryResultNamesTheAccount(t *testing.T) {
	t.Parallel()
	api := idempotencytest.NewV2Events()
	h, res := newThinResultHandler(t, api)

	held := idempotencytest.ThinEvent{ID: "evt_thin_held", Type: thinType, Context: "acct_1"}
	a := idempotencytest.Deliver(h, api.Add(held), testSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, "acct_1", res().Account, "applied")

	other := idempotencytest.NewV2Events() // signs a notification of an event the API does not hold
	missing := idempotencytest.ThinEvent{ID: "evt_thin_missing", Type: thinType, Context: "acct_2"}
	a = idempotencytest.Deliver(h, other.Add(missing), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.ErrorIs(t, res().Err, idempotency.ErrStripeAPI)
	require.Equal(t, "acct_2", res().Account, "the fetch failed")
}
