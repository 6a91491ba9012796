package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/stripeapi"
)

// subscriptionEvents are the events the subscription projection handles.
// Each is a trigger: the row written is the subscription as the API
// returns it when the event is handled, never the event's payload.
var subscriptionEvents = []string{
	"customer.subscription.created",
	"customer.subscription.updated",
	"customer.subscription.deleted",
}

// Subscription is the service's copy of a Stripe subscription, as the API
// last returned it.
type Subscription struct {
	ID       string `json:"id"`
	Customer string `json:"customer"`
	Status   string `json:"status"`
	// CurrentPeriodEnd is the first item's: since API version
	// 2025-03-31.basil the billing period is on the subscription's items,
	// and the items of a subscription with mixed intervals (flexible
	// billing mode) can end theirs at different times.
	CurrentPeriodEnd *time.Time `json:"current_period_end"`
	UpdatedAt        time.Time  `json:"updated_at"` // when this service last wrote the row, to the microsecond
}

// subscriptions is the projection's table. Put writes inside the event's
// transaction, so the row commits or rolls back with the claim.
type subscriptions interface {
	// Put creates or replaces the subscription's row.
	Put(ctx context.Context, tx idempotency.Tx, sub Subscription) error
	// Get returns the subscription, or false when there is no row.
	Get(ctx context.Context, id string) (Subscription, bool, error)
}

// registerSubscriptions keeps the subscriptions table equal to Stripe's:
// every event of a subscription fetches it as it is now, with api, under
// the library's per-object lock, and replaces its row. Events that arrive
// out of order, or two of one second, leave the same row: the API's.
func registerSubscriptions(hs *idempotency.Handlers, api *stripe.Client, subs subscriptions, now func() time.Time) {
	idempotency.OnCurrent(hs, subscriptionEvents, cutAtStop(idempotency.Retrieve(api.V1Subscriptions.Retrieve)),
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			if reason := unstorable(ev.Object); reason != "" {
				// A retry fetches the same: the subscription's next event
				// writes its row once the API's is storable.
				return idempotency.Skip(reason)
			}
			return subs.Put(ctx, tx, subscriptionRow(ev.Object, now()))
		})
}

// unstorable is why no row can be sub as the API returned it, or "": text
// PostgreSQL refuses (on every attempt, where the memory store would keep
// it), or a period end outside the years 1 to 9999 ([storableTime]).
func unstorable(sub *stripe.Subscription) string {
	if !storableText(sub.ID) || (sub.Customer != nil && !storableText(sub.Customer.ID)) || !storableText(string(sub.Status)) {
		return "subscription's id, customer or status holds a NUL byte or invalid UTF-8, which no row can"
	}
	if sub.Items != nil && len(sub.Items.Data) > 0 && !storableTime(sub.Items.Data[0].CurrentPeriodEnd) {
		return "subscription's first item's current period ends outside the years 1 to 9999"
	}
	return ""
}

// subscriptionRow is the row of sub, written at now, to the microsecond
// as PostgreSQL keeps it, so that both stores answer the same time.
func subscriptionRow(sub *stripe.Subscription, now time.Time) Subscription {
	row := Subscription{ID: sub.ID, Status: string(sub.Status), UpdatedAt: now.UTC().Truncate(time.Microsecond)}
	if sub.Customer != nil {
		row.Customer = sub.Customer.ID
	}
	if sub.Items != nil && len(sub.Items.Data) > 0 && sub.Items.Data[0].CurrentPeriodEnd != 0 {
		end := time.Unix(sub.Items.Data[0].CurrentPeriodEnd, 0).UTC()
		row.CurrentPeriodEnd = &end
	}
	return row
}

// newStripeClient returns the client the projection fetches with: key is a
// secret or restricted key (a restricted key needs read access to
// subscriptions only), apiBase the API's base URL. Neither error names the
// key.
func newStripeClient(key, apiBase string) (*stripe.Client, error) {
	c, err := stripeapi.NewClient(key, apiBase, nil)
	if be, ok := errors.AsType[*stripeapi.BaseURLError](err); ok {
		return nil, fmt.Errorf("-stripe-api-base %v", be)
	}
	return c, err
}

// loggedAPIBase is apiBase, which newStripeClient accepted with key, as
// the start-up log names it: without the password of its user info (a
// proxy's), masked as text up to the last '@' even where Go's parser read
// part of it as a port, and not at all when it may hold an API key (the
// key, another, or either percent-encoded: stripeapi.HoldsKey), as the
// error refusing a base URL does.
func loggedAPIBase(key, apiBase string) string {
	if stripeapi.HoldsKey(apiBase, key) {
		return "(not logged: it holds the API key)"
	}
	return stripeapi.Redacted(apiBase)
}

// memorySubscriptions keeps the projection in memory, writing each row when
// its transaction commits, in the order of the handler runs (see
// [memoryTable]).
type memorySubscriptions struct{ memoryTable[Subscription] }

func newMemorySubscriptions() *memorySubscriptions {
	return &memorySubscriptions{newMemoryTable[Subscription]()}
}

func (s *memorySubscriptions) Put(_ context.Context, tx idempotency.Tx, sub Subscription) error {
	s.replace(tx, sub.ID, sub)
	return nil
}
