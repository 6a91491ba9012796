package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestSubscriptionRowsDatedByTheClock: newServer dates the subscription
// rows with InboxConfig.Now, the clock the Handler and the inbox run on,
// as its doc says, to the microsecond, what PostgreSQL keeps, on both
// stores alike (the memory store kept the nanoseconds, and answered
// another time than PostgreSQL for the same write).
func TestSubscriptionRowsDatedByTheClock(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			svc, api := subscriptionStore(t, kind)
			// A minute back: within the signatures' tolerance, and far
			// from the wall clock's now; nanoseconds past a microsecond.
			at := time.Now().Add(-time.Minute).Truncate(time.Second).Add(123456789).UTC()
			c, _, _ := serve(t, svc, false, idempotency.InboxConfig{Now: idempotencytest.NewClock(at).Now})
			api.set("sub_clock", fakeSub{Customer: "cus_clock", Status: "active", PeriodEnd: subPeriodEnd})
			c.deliverAll(idempotency.OutcomeProcessed,
				subscriptionEvent(t, "evt_clock", "customer.subscription.created", "sub_clock", "", subCreated, "incomplete"))
			status, body := c.get("/subscriptions/sub_clock")
			require.Equal(t, http.StatusOK, status, body)
			var row struct {
				UpdatedAt string `json:"updated_at"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &row))
			require.Equal(t, at.Truncate(time.Microsecond).Format(time.RFC3339Nano), row.UpdatedAt, body)
		})
	}
}
