package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// heldFirstPut is the memory subscriptions table whose first Put's
// transaction runs, after its commit, a func that waits for release
// before the table's own write.
type heldFirstPut struct {
	*memorySubscriptions
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (h *heldFirstPut) Put(ctx context.Context, tx idempotency.Tx, sub Subscription) error {
	h.once.Do(func() {
		tx.AfterCommit(func(context.Context) {
			close(h.reached)
			<-h.release
		})
	})
	return h.memorySubscriptions.Put(ctx, tx, sub)
}

// TestMemorySubscriptionKeepsTheLaterFetch: the memory store releases
// OnCurrent's object lock at the commit, as PostgreSQL does, before the
// transaction's AfterCommit funcs run, so the next event of the object
// may fetch, commit and write its row while the first one's write waits.
// The row keeps the later fetch's state, that of the handler run that
// took the lock last. (The table wrote each row in its AfterCommit
// func, in the order the funcs ran: the earlier fetch's past_due, written
// last, replaced the active the API had.)
func TestMemorySubscriptionKeepsTheLaterFetch(t *testing.T) {
	t.Parallel()
	api := newFakeStripe(t)
	subs := &heldFirstPut{memorySubscriptions: newMemorySubscriptions(), reached: make(chan struct{}), release: make(chan struct{})}
	hs := idempotency.NewHandlers()
	registerSubscriptions(hs, api.client(t), subs, time.Now)
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{"whsec_test"}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	api.set("sub_later", fakeSub{Customer: "cus_later", Status: "past_due", PeriodEnd: subPeriodEnd})
	first := make(chan idempotencytest.Answer, 1)
	go func() {
		first <- idempotencytest.Deliver(h, subscriptionEvent(t, "evt_later_1", "customer.subscription.updated", "sub_later", "", subCreated, "incomplete"), "whsec_test")
	}()
	<-subs.reached // committed; its row not yet written
	api.set("sub_later", fakeSub{Customer: "cus_later", Status: "active", PeriodEnd: subPeriodEnd})
	a := idempotencytest.Deliver(h, subscriptionEvent(t, "evt_later_2", "customer.subscription.updated", "sub_later", "", subCreated+60, "incomplete"), "whsec_test")
	require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
	close(subs.release)
	require.Equal(t, http.StatusOK, (<-first).Status)

	row, ok, err := subs.Get(t.Context(), "sub_later")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "active", row.Status)
}
