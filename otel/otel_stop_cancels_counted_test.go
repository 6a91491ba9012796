package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStopCancelsCountedOnce: Run's context is done while a worker's
// handler waits for its own context; ShutdownTimeout passes and Run
// cancels the attempt, and says so (ErrShutdownTimeout). By the time Run
// returns the attempt is counted once, failed, as the inbox records it
// (failed, retried after the backoff), and its span has ended with Error
// status. The event then applied by the next WorkDue is counted once
// more, processed. Both stores.
func TestStopCancelsCountedOnce(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t, nil)
			entered := make(chan struct{}, 1)
			hold := true
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, _ idempotency.Tx, _ idempotency.Event[json.RawMessage]) error {
				if hold {
					hold = false
					entered <- struct{}{}
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			})
			logger := slog.New(slog.DiscardHandler)
			in, err := idempotency.NewInbox(open(t), hs, idempotency.InboxConfig{
				Logger: logger, Observer: tel.Observer(), ShutdownTimeout: 10 * time.Millisecond,
				Backoff: func(int) time.Duration { return 0 },
			})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Logger: logger})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, event(t, "evt_stop", "invoice.paid", "in_stop"), secret).Outcome)

			ctx, stop := context.WithCancel(t.Context())
			ran := make(chan error, 1)
			go func() { ran <- in.Run(ctx) }()
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the attempt did not start")
			}
			stop()
			select {
			case err := <-ran:
				require.ErrorIs(t, err, idempotency.ErrShutdownTimeout, "Run says it cut the attempt")
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return")
			}

			rec, ok, err := in.Lookup(t.Context(), "evt_stop")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxFailed, rec.State)
			require.Equal(t, map[string]float64{"kind=event,outcome=failed,state=failed": 1}, tel.points(t)["idempotency.attempts"],
				"the cancelled attempt is counted once, before Run returns")
			spans := byName(tel.spans.GetSpans(), "process invoice.paid")
			require.Len(t, spans, 1, "its span ended before Run returned")
			require.Equal(t, codes.Error, spans[0].Status.Code)

			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, map[string]float64{
				"kind=event,outcome=failed,state=failed":       1,
				"kind=event,outcome=processed,state=processed": 1,
			}, tel.points(t)["idempotency.attempts"])
			require.Len(t, byName(tel.spans.GetSpans(), "process invoice.paid"), 2)
		})
	}
}
