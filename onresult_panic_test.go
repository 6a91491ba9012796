package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// A panicking OnResult is logged and goes no further: the delivery is
// answered, the Observer still sees its result (a trace's span ends), and
// an inbox worker goes on to the next event. It crashed an inbox worker's
// process, and left the span unended in both modes.
func TestOnResultPanicGoesNoFurther(t *testing.T) {
	t.Parallel()
	observer := func(seen *[]idempotency.Outcome) *idempotency.Observer {
		done := func(r idempotency.Result) { *seen = append(*seen, r.Outcome) }
		return &idempotency.Observer{
			Delivery: func(ctx context.Context, _ *http.Request) (context.Context, func(idempotency.Result)) {
				return ctx, done
			},
			Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
				return ctx, done
			},
		}
	}
	onResult := func(idempotency.Result) { panic("a metrics bug") }
	handlers := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
		return hs
	}
	checkLog := func(t *testing.T, log *bytes.Buffer, events int) {
		require.Equal(t, events, bytes.Count(log.Bytes(), []byte(`msg="idempotency: OnResult panicked"`)), log.String())
		require.Contains(t, log.String(), `panic="a metrics bug"`)
		require.NotContains(t, log.String(), "acct_42", "no payload in the log")
	}

	t.Run("synchronous", func(t *testing.T) {
		t.Parallel()
		var log bytes.Buffer
		var seen []idempotency.Outcome
		h, err := idempotency.NewHandler(&idempotency.MemoryStore{}, handlers(), idempotency.Config{
			Secrets: []string{testSecret}, Logger: slog.New(slog.NewTextHandler(&log, nil)),
			OnResult: onResult, Observer: observer(&seen),
		})
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_onresult_sync", paid), testSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
		require.Equal(t, []idempotency.Outcome{idempotency.OutcomeProcessed}, seen)
		checkLog(t, &log, 1)
	})

	t.Run("inbox", func(t *testing.T) {
		t.Parallel()
		var log bytes.Buffer
		var seen []idempotency.Outcome
		store := &idempotency.MemoryStore{}
		clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		in, err := idempotency.NewInbox(store, handlers(), idempotency.InboxConfig{
			Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&log, nil)),
			OnResult: onResult, Observer: observer(&seen),
		})
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		for _, id := range []string{"evt_onresult_1", "evt_onresult_2"} {
			a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", id, paid), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
		}
		n, err := in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, n)
		// The Handler watches its deliveries with the inbox's Observer too.
		want := []idempotency.Outcome{idempotency.OutcomeQueued, idempotency.OutcomeQueued, idempotency.OutcomeProcessed, idempotency.OutcomeProcessed}
		require.Equal(t, want, seen)
		stats, err := in.Stats(t.Context())
		require.NoError(t, err)
		require.Equal(t, 2, stats.Counts[idempotency.InboxProcessed])
		checkLog(t, &log, 2)
	})
}
