package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestCountsMatchTheInbox: 500 events, applied by WorkDue on a fake clock
// (8 calls side by side a round) with MaxAttempts 3, whose handler
// succeeds, fails once and then succeeds, skips, panics every time,
// fails every time with a text that quotes the payload's marker, or runs
// past its timeout once and then skips. Once nothing is left to apply, the metrics
// equal what the inbox shows: the attempts that ended in processed,
// skipped and dead_letter are its Stats, and every attempt the handler
// saw (and every attempt the records count) is counted once, failed ones
// as failed. Every attempt's span that started ended, with Error status
// for the failed ones and no error text, payload or secret. Both stores.
func TestCountsMatchTheInbox(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testCountsMatchTheInbox(t, open(t))
		})
	}
}

func testCountsMatchTheInbox(t *testing.T, store idempotency.Store) {
	const events, maxAttempts = 500, 3
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tel := newTelemetry(t, clock.Now)

	var mu sync.Mutex
	calls := map[string]int{} // handler runs by event id
	var handled atomic.Int64
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, ev idempotency.Event[json.RawMessage]) error {
		handled.Add(1)
		mu.Lock()
		calls[ev.ID]++
		n := calls[ev.ID]
		mu.Unlock()
		var i int
		_, err := fmt.Sscanf(ev.ID, "evt_%d", &i)
		require.NoError(t, err)
		switch {
		case i%100 == 7 && n == 1: // past its timeout, once; then skipped (i%5 == 2)
			<-ctx.Done()
			return ctx.Err()
		case i%5 == 1 && n == 1:
			return errDownstream
		case i%5 == 2:
			return idempotency.Skip("nothing to do")
		case i%5 == 3:
			panic("handler bug " + marker)
		case i%5 == 4:
			return errors.New("refused: " + marker + " " + secret)
		}
		return nil
	})

	var started atomic.Int64
	obs := *tel.Observer()
	attempt := obs.Attempt
	obs.Attempt = func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
		started.Add(1)
		return attempt(ctx, rec, link)
	}
	var reported atomic.Int64
	logger := slog.New(slog.DiscardHandler)
	// Timeout bounds every attempt, its lease and the recording of its end,
	// which must beat it while the WorkDue calls share the machine: 10 s,
	// room on a busy one, where 100 ms, and on a busier machine 2 s, could
	// cut attempts that should not time out, and move the counts. A
	// WorkDue call makes its attempts one at a time, so each round runs
	// callers calls side by side: the timeout events, in different calls'
	// leases, wait their timeout out together, not one after another (50
	// s). Each times out once, in the first round: each round they timed
	// out in cost 10 s of the package's run, the other rounds
	// milliseconds. Both stores lease the events due at one time in event
	// id order, where the timeout events stand 45 or more apart, farther
	// than one lease (Workers, 8) reaches, and two timeout events in one
	// call's lease made their round wait 20 s. The Backoff is fixed so
	// that the events that failed in a round come due together again
	// (DefaultBackoff's ±10% would shuffle them).
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
		Now: clock.Now, MaxAttempts: maxAttempts, Timeout: 10 * time.Second, Logger: logger, Observer: &obs,
		Backoff:  func(int) time.Duration { return time.Second },
		OnResult: func(idempotency.Result) { reported.Add(1) },
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: logger, Observer: &obs})
	require.NoError(t, err)
	for i := range events {
		a := idempotencytest.Deliver(h, event(t, fmt.Sprintf("evt_%d", i), "invoice.paid", fmt.Sprintf("in_%d", i)), secret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	const callers = 8
	made := 0
	for range 2 * maxAttempts {
		var wg sync.WaitGroup
		var ns [callers]int
		var errs [callers]error
		for i := range callers {
			wg.Go(func() { ns[i], errs[i] = in.WorkDue(t.Context()) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs[:]...))
		for _, n := range ns {
			made += n
		}
		clock.Advance(time.Hour) // past every backoff
	}

	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	for _, s := range []idempotency.InboxState{idempotency.InboxPending, idempotency.InboxProcessing, idempotency.InboxFailed} {
		require.Zero(t, st.Counts[s], "nothing left in %s", s)
	}
	recs, err := in.List(t.Context(), idempotency.InboxFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, recs, events)
	recorded := 0
	for _, r := range recs {
		recorded += r.Attempt
	}

	pts := tel.points(t)
	attempts := pts["idempotency.attempts"]
	total := 0.0
	for _, v := range attempts {
		total += v
	}
	require.Equal(t, float64(made), total, "every attempt counted once")
	require.Equal(t, float64(recorded), total, "as many as the records count")
	require.Equal(t, float64(handled.Load()), total, "as many as the handler saw")
	require.Equal(t, reported.Load(), int64(made), "OnResult once per attempt")
	require.Equal(t, map[string]float64{
		"kind=event,outcome=processed,state=processed": float64(st.Events(idempotency.InboxProcessed)),
		"kind=event,outcome=skipped,state=skipped":     float64(st.Events(idempotency.InboxSkipped)),
		"kind=event,outcome=failed,state=dead_letter":  float64(st.Events(idempotency.InboxDeadLetter)),
		"kind=event,outcome=failed,state=failed":       float64(events/5 + events/100 + 2*(2*events/5)), // one per fail-once or time-out-once event, two per dead-lettered one
	}, attempts)
	require.Equal(t, map[string]float64{"kind=event": float64(st.Events(idempotency.InboxDeadLetter)), "kind=task": 0}, pts["idempotency.dead_letters"])
	require.Equal(t, float64(2*events/5), float64(st.Events(idempotency.InboxDeadLetter)), "panics and refusals dead-letter")

	spans := byName(tel.spans.GetSpans(), "process invoice.paid")
	require.Len(t, spans, int(started.Load()), "every attempt's span that started ended")
	require.Len(t, spans, made)
	requireClean(t, spans)
	for _, s := range spans {
		outcome, _ := attr(s, "idempotency.outcome")
		if outcome.AsString() == string(idempotency.OutcomeFailed) {
			require.Equal(t, codes.Error, s.Status.Code)
			require.Equal(t, "failed", s.Status.Description, "the outcome, not the error's text")
		} else {
			require.Equal(t, codes.Unset, s.Status.Code)
		}
		require.Empty(t, s.Events, "no error recorded as a span event")
	}
}
