package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The MemoryStore's Run stopped midway, with an event per object failing
// its first attempt: once Run returns nothing is processing, and a second
// Run applies every event exactly once, each object's in id order (their
// created is the same second).
//
// The order is the handlers' own, in their transactions: AfterCommit funcs
// run after the commit that lets the object's next event be leased, so
// that event's may run first, on either store.
func TestMemoryInboxRunStopMidway(t *testing.T) {
	t.Parallel()
	const objects, perObject, stopAfter = 5, 8, 13
	store := idempotency.NewMemoryStore()
	hs := idempotency.NewHandlers()
	var mu sync.Mutex
	applied := map[string][]string{} // by AfterCommit: once each
	order := map[string][]string{}   // by the handler: an attempt rolled back after it is there too
	failedOnce := map[string]bool{}
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		mu.Lock()
		defer mu.Unlock()
		if ev.ID[len(ev.ID)-2:] == "03" && !failedOnce[ev.ID] {
			failedOnce[ev.ID] = true
			return errors.New("downstream refused")
		}
		order[ev.Object.ID] = append(order[ev.Object.ID], ev.ID)
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			applied[ev.Object.ID] = append(applied[ev.Object.ID], ev.ID)
		})
		return nil
	})
	ctx, stop := context.WithCancel(t.Context())
	var seen int
	newInbox := func() *idempotency.Inbox {
		in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
			Workers: 3, IngestWorkers: 3, Logger: discardLogger(), Backoff: func(int) time.Duration { return 0 },
			OnResult: func(idempotency.Result) {
				mu.Lock()
				defer mu.Unlock()
				seen++
				if seen == stopAfter {
					stop()
				}
			},
		})
		require.NoError(t, err)
		return in
	}
	in := newInbox()
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for o := range objects {
		for k := range perObject {
			id := fmt.Sprintf("evt_mstop_%d_%02d", o, perObject-1-k)
			a := idempotencytest.Deliver(h, invoicePayload(t, id, fmt.Sprintf("in_mstop_%d", o), "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
		}
	}
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	// Run applies stopAfter events before the stop: many steps, which a
	// busy machine can take longer for than recv's 30 s.
	require.NoError(t, recvWithin(t, done, time.Minute, fmt.Sprintf("Run, stopped after %d attempts", stopAfter)))
	recs, err := in.List(t.Context(), idempotency.InboxFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, recs, objects*perObject)
	mu.Lock()
	for _, r := range recs {
		require.NotEqual(t, idempotency.InboxProcessing, r.State, "%s left processing", r.EventID)
		switch r.State {
		case idempotency.InboxPending:
			// Never attempted, or given back without counting the attempt.
			require.Zero(t, r.Attempt, "%s given back without counting the attempt", r.EventID)
		case idempotency.InboxFailed:
			// Its failed attempt, and given back as it was if leased again.
			require.True(t, failedOnce[r.EventID], "%s failed", r.EventID)
			require.Equal(t, 1, r.Attempt, "%s given back without counting the attempt", r.EventID)
		}
	}
	mu.Unlock()

	in2 := newInbox()
	ctx2, stop2 := context.WithCancel(t.Context())
	go func() { done <- in2.Run(ctx2) }()
	require.Eventually(t, func() bool {
		st, err := in2.Stats(t.Context())
		require.NoError(t, err)
		return st.Counts[idempotency.InboxProcessed] == objects*perObject
	}, 30*time.Second, 5*time.Millisecond)
	stop2()
	require.NoError(t, recv(t, done, "the second Run"))
	mu.Lock()
	defer mu.Unlock()
	for o := range objects {
		got := applied[fmt.Sprintf("in_mstop_%d", o)]
		require.Len(t, got, perObject, "object %d: each event applied once", o)
		slices.Sort(got)
		require.Len(t, slices.Compact(got), perObject, "object %d: each event applied once", o)
		ran := order[fmt.Sprintf("in_mstop_%d", o)]
		require.True(t, slices.IsSorted(ran), "object %d in id order: %v", o, ran)
	}
}
