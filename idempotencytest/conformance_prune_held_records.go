package idempotencytest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneHeldRecords: OnCurrent's row of an object and CheckOrder's
// record of a key, past their windows, that a transaction in flight
// holds are passed over by a prune, as PostgreSQL passes over a locked
// row (SKIP LOCKED), and go with a prune after that transaction rolled
// back; the transaction keeps its lock meanwhile, and the record it read
// answers the CheckOrder that waited for it. A dry run counts them, as
// PostgreSQL's count does.
func testPruneHeldRecords(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	skipWithoutStoreTx(t, b)
	ctx := ctxT(t)
	cb := newCurrentBench(t, b)
	const scope = "prune-held"
	created := time.Now().Add(-time.Hour)
	for _, sub := range []string{"sub_ph_free", "sub_ph_held"} {
		cb.api.set(sub, "active", 1)
		cb.deliverSync(t, subscriptionEvent("evt_ph_"+sub, subUpdated, sub, "", currentCreated, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	}
	_, err := b.Store.Run(ctx, claim("evt_ph_order"), func(ctx context.Context, tx idempotency.Tx) error {
		for _, k := range []string{"free", "held"} {
			if _, err := idempotency.CheckOrder(ctx, tx, scope, k, created); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)

	// A delivery whose handler waits after its fetch holds sub_ph_held;
	// another event's CheckOrder holds the key held.
	releaseHolders, release := releaser(t)
	fetched := make(chan struct{})
	cb.setFail(func(id string) error {
		if id != "evt_ph_holder" {
			return nil
		}
		close(fetched)
		<-release
		return errHandler
	})
	delivery := cb.deliverSyncAsync(subscriptionEvent("evt_ph_holder", subUpdated, "sub_ph_held", "", currentCreated+1, "active"))
	receive(t, fetched, "the delivery holding sub_ph_held")
	ordered := make(chan struct{})
	orderHolder := make(chan error, 1)
	go func() {
		_, err := b.Store.Run(ctx, claim("evt_ph_order_holder"), func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := idempotency.CheckOrder(ctx, tx, scope, "held", time.Now()); err != nil {
				return err
			}
			close(ordered)
			<-release
			return errHandler
		})
		orderHolder <- err
	}()
	receive(t, ordered, "the CheckOrder holding the key held")

	// Measured past both windows: the objects' (EventIDs) and the
	// order keys' (Guards).
	r := idempotency.Retention{Guards: keysWindow, Pause: -1}
	at := time.Now().Add(keysWindow + 24*time.Hour)
	dry := r
	dry.DryRun = true
	rep := prune(t, rs, dry, at)
	require.Equal(t, [2]int{2, 2}, [2]int{rep.Objects, rep.Guards}, "a dry run counts the held ones too: %+v", rep)
	rep = prune(t, rs, r, at)
	require.Equal(t, [2]int{1, 1}, [2]int{rep.Objects, rep.Guards}, "the free object and order key, not the held ones: %+v", rep)

	waiter := checkOrderAsync(ctx, b, "evt_ph_order_waiter", scope, "held", created.Add(-time.Minute))
	waitingReaches(t, b, 1, waitLimit, "a CheckOrder of the key held should wait for its holder after the prune")

	releaseHolders()
	a := receive(t, delivery, "the delivery holding sub_ph_held")
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.ErrorIs(t, receive(t, orderHolder, "the CheckOrder holding the key held"), errHandler)
	got := receive(t, waiter, "the CheckOrder waiting for the key held")
	require.NoError(t, got.err)
	require.Equal(t, idempotency.OrderOlder, got.o, "the record the prune passed over answers it")

	rep = prune(t, rs, r, at)
	require.Equal(t, [2]int{1, 1}, [2]int{rep.Objects, rep.Guards}, "the held ones, once released: %+v", rep)
}
