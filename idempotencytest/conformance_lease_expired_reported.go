package idempotencytest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxLeaseExpiredReported: a worker that dies (here, stalls before
// its transaction) holding an event's last attempt past its lease leaves
// the event to the next lease, which dead-letters it. That lease reports
// the attempt, failed with ErrLeaseExpired and state dead_letter, to
// OnResult and to the Observer, as any attempt's end is: a poison event
// that kills its process every time is seen by the dead-letter metrics.
// The stalled attempt, let go, recorded nothing (it lost its lease): its
// end goes to the Observer's done, with no state, and not to OnResult,
// which the lease already called for that attempt. The Result is an event attempt's as any
// other: no Kind (it was KindEvent, where every other event attempt's is
// empty).
func testInboxLeaseExpiredReported(t *testing.T, b StoreBackend) {
	var mu sync.Mutex
	var observed, reported []idempotency.Result
	calls := 0
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	obs := &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			entered <- struct{}{}
			<-release
		}
		return ctx, func(res idempotency.Result) {
			mu.Lock()
			defer mu.Unlock()
			observed = append(observed, res)
		}
	}}
	onResult := func(res idempotency.Result) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, res)
	}
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1, Observer: obs, OnResult: onResult}, nil)
	ib.deliver(t, "evt_lease_expired", "invoice.paid", "in_lease_expired", 1756742400, idempotency.OutcomeQueued)
	stalled := make(chan int, 1)
	go func() {
		n, _ := ib.inbox.WorkDue(context.Background())
		stalled <- n
	}()
	receive(t, entered, "the Observer of attempt 1")

	ib.clock.Advance(idempotency.DefaultLease + time.Second)
	ib.work(t, 0)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_lease_expired").State)
	mu.Lock()
	require.Len(t, reported, 1, "the dead-lettering lease reports the dead worker's attempt to OnResult")
	require.Len(t, observed, 1, "and to the Observer")
	for _, res := range []idempotency.Result{reported[0], observed[0]} {
		require.Equal(t, "evt_lease_expired", res.EventID)
		require.Equal(t, "invoice.paid", res.EventType)
		require.Equal(t, "in_lease_expired", res.ObjectID)
		require.Equal(t, 1, res.Attempt)
		// As every event attempt's Result: Kind is KindTask for a task,
		// empty otherwise (Result.Kind's doc), so that OnResult and the
		// Observer see one Kind per event attempt, however it ended.
		require.Empty(t, res.Kind, "an event attempt's Result has no Kind")
		require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
		require.Equal(t, idempotency.InboxDeadLetter, res.State)
		require.True(t, errors.Is(res.Err, idempotency.ErrLeaseExpired), "Err: %v", res.Err)
		// The attempt held the event from its start until the lease that
		// found it expired (on the inbox's clock): not 0, which put a dead
		// worker's attempt in the lowest bucket of the attempt duration.
		require.GreaterOrEqual(t, res.Duration, idempotency.DefaultLease, "Duration: from the attempt's start to the lease that dead-lettered it")
		require.LessOrEqual(t, res.Duration, idempotency.DefaultLease+2*time.Second, "the clock moved the lease and a second")
	}
	mu.Unlock()

	letGo()
	receive(t, stalled, "the stalled WorkDue")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reported, 1, "OnResult is called once per attempt: the lease reported this one")
	require.Len(t, observed, 2, "the stalled attempt's span ends")
	require.Equal(t, idempotency.InboxState(""), observed[1].State, "the stalled attempt lost its lease and recorded nothing")
	require.ErrorIs(t, observed[1].Err, idempotency.ErrLeaseExpired, "so that a metric counts the attempt once, by the lease's report")
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_lease_expired").State)
	require.Zero(t, ib.attempts["evt_lease_expired"], "no handler ran")
}
