package idempotencytest_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// subscriptionUpdated returns a customer.subscription.updated event id
// about subscription sub.
func subscriptionUpdated(t testing.TB, id, sub string) []byte {
	t.Helper()
	return idempotencytest.Derive(invoicePaid(t, id, sub, ""), map[string]any{
		"type": "customer.subscription.updated", "data.object.object": "subscription",
	})
}

// TestTableKeepsTheLaterFetch: a store releases OnCurrent's object lock at
// the commit, before the transaction's AfterCommit funcs, so the next
// event of the object fetches, commits and puts its row while the first
// event's Put waits behind a func of its transaction. The Table keeps the
// later fetch's state, on both stores; a fake that wrote each row as its
// AfterCommit func ran kept the earlier one. A transaction that rolls
// back puts nothing.
func TestTableKeepsTheLaterFetch(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			api := map[string]stripe.SubscriptionStatus{"sub_1": stripe.SubscriptionStatusPastDue}
			var table idempotencytest.Table[stripe.SubscriptionStatus]
			reached, release := make(chan struct{}), make(chan struct{})
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
				func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
					mu.Lock()
					defer mu.Unlock()
					return &stripe.Subscription{ID: id, Status: api[id]}, nil
				},
				func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
					switch tx.EventID() {
					case "evt_first": // its Put waits, after the commit, behind this func
						tx.AfterCommit(func(context.Context) {
							close(reached)
							<-release
						})
					case "evt_rolled_back":
						table.Put(tx, ev.Object.ID, ev.Object.Status)
						return errors.New("rolled back")
					}
					table.Put(tx, ev.Object.ID, ev.Object.Status)
					return nil
				})
			h, err := idempotency.NewHandler(store(t), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)

			first := make(chan idempotencytest.Answer, 1)
			go func() { first <- idempotencytest.Deliver(h, subscriptionUpdated(t, "evt_first", "sub_1"), testSecret) }()
			<-reached // committed, its row not yet put
			mu.Lock()
			api["sub_1"] = stripe.SubscriptionStatusActive
			mu.Unlock()
			a := idempotencytest.Deliver(h, subscriptionUpdated(t, "evt_second", "sub_1"), testSecret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			close(release)
			a = <-first
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			status, ok := table.Get("sub_1")
			require.True(t, ok)
			require.Equal(t, stripe.SubscriptionStatusActive, status, "the later fetch's state")

			a = idempotencytest.Deliver(h, subscriptionUpdated(t, "evt_rolled_back", "sub_2"), testSecret)
			require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
			_, ok = table.Get("sub_2")
			require.False(t, ok, "a transaction that rolled back puts nothing")
		})
	}
}

// TestTableDeleteKeepsTheRowDeleted: a .deleted handler registered with
// On beside OnCurrent takes the object's lock, so it deletes after the
// updated event's commit, while that event's Put still waits behind a
// func of its transaction. The Table keeps the row deleted, on both
// stores; a fake that wrote each change as its AfterCommit func ran
// brought the row back. A deletion that rolls back deletes nothing.
func TestTableDeleteKeepsTheRowDeleted(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var table idempotencytest.Table[stripe.SubscriptionStatus]
			reached, release := make(chan struct{}), make(chan struct{})
			hs := idempotency.NewHandlers()
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
				func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
					return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
				},
				func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
					if tx.EventID() == "evt_updated" { // its Put waits, after the commit, behind this func
						tx.AfterCommit(func(context.Context) {
							close(reached)
							<-release
						})
					}
					table.Put(tx, ev.Object.ID, ev.Object.Status)
					return nil
				})
			idempotency.On(hs, "customer.subscription.deleted", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
				table.Delete(tx, ev.Object.ID)
				if tx.EventID() == "evt_deleted_rolled_back" {
					return errors.New("rolled back")
				}
				return nil
			})
			h, err := idempotency.NewHandler(store(t), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			deleted := func(id, sub string) []byte {
				return idempotencytest.Derive(subscriptionUpdated(t, id, sub), map[string]any{"type": "customer.subscription.deleted"})
			}

			updated, payload := make(chan idempotencytest.Answer, 1), subscriptionUpdated(t, "evt_updated", "sub_1")
			go func() { updated <- idempotencytest.Deliver(h, payload, testSecret) }()
			<-reached // committed, its row not yet put
			a := idempotencytest.Deliver(h, deleted("evt_deleted", "sub_1"), testSecret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			close(release)
			a = <-updated
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			_, ok := table.Get("sub_1")
			require.False(t, ok, "the earlier Put, run last, brought the deleted row back")

			a = idempotencytest.Deliver(h, subscriptionUpdated(t, "evt_updated_2", "sub_2"), testSecret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			a = idempotencytest.Deliver(h, deleted("evt_deleted_rolled_back", "sub_2"), testSecret)
			require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
			status, ok := table.Get("sub_2")
			require.True(t, ok, "a deletion that rolled back deleted the row")
			require.Equal(t, stripe.SubscriptionStatusActive, status)
		})
	}
}
