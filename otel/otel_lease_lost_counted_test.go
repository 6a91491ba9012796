package idempotencyotel_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// hungAttempt delivers one invoice.paid to an inbox on store with
// maxAttempts, stalls the first attempt before its transaction past its
// lease, runs WorkDue (the next lease takes the event over), then lets
// the stalled worker come back. It returns the telemetry and how many
// attempts the second WorkDue made.
func hungAttempt(t *testing.T, store idempotency.Store, maxAttempts int) (*telemetry, int) {
	t.Helper()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tel := newTelemetry(t, clock.Now)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	var calls atomic.Int32
	obs := *tel.Observer()
	attempt := obs.Attempt
	obs.Attempt = func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
		if calls.Add(1) == 1 { // the first attempt stalls before its transaction
			entered <- struct{}{}
			<-release
		}
		return attempt(ctx, rec, link)
	}
	logger := slog.New(slog.DiscardHandler)
	in, err := idempotency.NewInbox(store, handlers(), idempotency.InboxConfig{
		Now: clock.Now, MaxAttempts: maxAttempts, Lease: time.Minute, Logger: logger, Observer: &obs,
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: logger})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, event(t, "evt_hung", "invoice.paid", "in_1"), secret).Outcome)

	stalled := make(chan error, 1)
	go func() {
		_, err := in.WorkDue(context.Background())
		stalled <- err
	}()
	select {
	case <-entered:
	case <-time.After(time.Minute):
		t.Fatal("the first attempt did not start")
	}
	clock.Advance(time.Minute + time.Second)
	n, err := in.WorkDue(t.Context()) // the next lease finds the first expired
	require.NoError(t, err)
	letGo()
	select {
	case err := <-stalled:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("the stalled attempt did not return")
	}
	return tel, n
}

// TestHungLastAttemptCountedOnce: a worker stalls holding an event's last
// attempt past its lease; the next lease dead-letters the event and
// reports that attempt. When the stalled worker comes back (its write
// fenced off), its span ends, but the attempt is not counted again: one
// attempt, one dead letter, two spans. Both stores, on a fake clock.
func TestHungLastAttemptCountedOnce(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tel, n := hungAttempt(t, open(t), 1)
			require.Zero(t, n, "the lease dead-letters the event, no attempt runs")
			pts := tel.points(t)
			require.Equal(t, map[string]float64{"kind=event,outcome=failed,state=dead_letter": 1}, pts["idempotency.attempts"],
				"the attempt is counted once, by the lease that dead-lettered it")
			require.Equal(t, map[string]float64{"kind=event,outcome=failed": 1}, pts["idempotency.attempt.duration"])
			require.Equal(t, map[string]float64{"kind=event": 1, "kind=task": 0}, pts["idempotency.dead_letters"])
			require.Len(t, byName(tel.spans.GetSpans(), "process invoice.paid"), 2, "both spans end: the lease's report and the stalled worker's")
		})
	}
}

// TestHungAttemptBeforeTheLastCounted: a worker that hung past its lease
// at an attempt before the last is counted once, by the attempt that took
// the event over, which reports it as it starts (failed, state failed,
// with a span of its own); its end, when it comes back, ends its span and
// is not counted again. It was counted by nobody when the take-over
// reported nothing, and then by the worker when it came back, if it ever
// did: a worker that died was never counted. Both stores, on a fake
// clock.
func TestHungAttemptBeforeTheLastCounted(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tel, n := hungAttempt(t, open(t), 2)
			require.Equal(t, 1, n, "attempt 2 takes the event over and applies it")
			pts := tel.points(t)
			require.Equal(t, map[string]float64{
				"kind=event,outcome=processed,state=processed": 1,
				"kind=event,outcome=failed,state=failed":       1,
			}, pts["idempotency.attempts"], "both attempts are counted, each once: attempt 1 by the take-over's report")
			require.Equal(t, map[string]float64{"kind=event,outcome=processed": 1, "kind=event,outcome=failed": 1}, pts["idempotency.attempt.duration"])
			require.Equal(t, map[string]float64{"kind=event": 0, "kind=task": 0}, pts["idempotency.dead_letters"])
			require.Len(t, byName(tel.spans.GetSpans(), "process invoice.paid"), 3,
				"the take-over's report of attempt 1, attempt 2, and the stalled worker's end")
		})
	}
}
