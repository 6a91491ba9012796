package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// TestSubscriptionRowFollowsTheAPI: a later event of a subscription whose
// state changed in the API replaces every field of its row, on both
// stores. The out-of-order tests fetch one state only, so a row written
// once and never replaced passed them.
func TestSubscriptionRowFollowsTheAPI(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			c, _, api := serveSubscriptions(t, kind, false)
			first := fakeSub{Customer: "cus_follow", Status: "active", PeriodEnd: subPeriodEnd}
			api.set("sub_follow", first)
			c.deliverAll(idempotency.OutcomeProcessed,
				subscriptionEvent(t, "evt_follow_1", "customer.subscription.created", "sub_follow", "", subCreated, "incomplete"))
			c.requireSubscription("sub_follow", first)

			renewed := fakeSub{Customer: "cus_follow_2", Status: "past_due", PeriodEnd: subPeriodEnd + 31*86400}
			api.set("sub_follow", renewed)
			c.deliverAll(idempotency.OutcomeProcessed,
				subscriptionEvent(t, "evt_follow_2", "customer.subscription.updated", "sub_follow", "", subCreated+86400, "active"))
			c.requireSubscription("sub_follow", renewed)
		})
	}
}

// TestSubscriptionRowWithoutPeriodEnd: a subscription whose first item has
// no current_period_end (0) has a null current_period_end, not 1970.
func TestSubscriptionRowWithoutPeriodEnd(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	row := subscriptionRow(&stripe.Subscription{
		ID: "sub_noend", Status: stripe.SubscriptionStatusIncomplete,
		Items: &stripe.SubscriptionItemList{Data: []*stripe.SubscriptionItem{{ID: "si_noend"}}},
	}, now)
	require.Equal(t, Subscription{ID: "sub_noend", Status: "incomplete", UpdatedAt: now}, row)
}
