package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestSubscriptionUnstorableSkipped: a subscription event whose fetched
// subscription has a current_period_end outside the years 1 to 9999, or
// a status holding a NUL byte, is skipped with a reason that says so, no
// row written, on both stores alike, as a paid invoice with such a period
// or account id is. The far period was written, and /subscriptions/{id}
// answered 500 for the row until the next event replaced it; the NUL
// status was written on the memory store and refused by PostgreSQL on
// every attempt. Once the API's subscription is storable, its next event
// writes the row.
func TestSubscriptionUnstorableSkipped(t *testing.T) {
	t.Parallel()
	const (
		year3170843 = 99999999999999
		beforeYear1 = -62135596801 // 0000-12-31T23:59:59Z
	)
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			svc, api := subscriptionStore(t, kind)
			c, _, _ := serve(t, svc, false, idempotency.InboxConfig{})
			api.set("sub_far", fakeSub{Customer: "cus_far", Status: "active", PeriodEnd: year3170843})
			api.set("sub_early", fakeSub{Customer: "cus_early", Status: "active", PeriodEnd: beforeYear1})
			api.set("sub_nul", fakeSub{Customer: "cus_nul", Status: "act\x00ive", PeriodEnd: subPeriodEnd})
			for _, tc := range []struct{ event, sub, reason string }{
				{"evt_far", "sub_far", "subscription's first item's current period ends outside the years 1 to 9999"},
				{"evt_early", "sub_early", "subscription's first item's current period ends outside the years 1 to 9999"},
				{"evt_nul", "sub_nul", "subscription's id, customer or status holds a NUL byte or invalid UTF-8, which no row can"},
			} {
				status, body := c.deliver(subscriptionEvent(t, tc.event, "customer.subscription.updated", tc.sub, "", subCreated, "active"))
				require.Equal(t, http.StatusOK, status, "%s: %s", tc.event, body)
				require.JSONEq(t, `{"outcome":"skipped"}`, body, tc.event)
				require.Equal(t, tc.reason, skipReason(t, svc, tc.event), tc.event)
				status, body = c.get("/subscriptions/" + tc.sub)
				require.Equal(t, http.StatusNotFound, status, "%s: %s", tc.sub, body)
			}

			fixed := fakeSub{Customer: "cus_far", Status: "active", PeriodEnd: subPeriodEnd}
			api.set("sub_far", fixed)
			c.deliverAll(idempotency.OutcomeProcessed, subscriptionEvent(t, "evt_far_2", "customer.subscription.updated", "sub_far", "", subCreated+1, "active"))
			c.requireSubscription("sub_far", fixed)
		})
	}
}
