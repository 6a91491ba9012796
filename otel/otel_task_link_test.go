package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestTaskSpanLinksToItsEnqueuer: a task's attempt span, a messaging
// "process" span of the task's name, links to the span of what enqueued
// it: the attempt of the event whose handler enqueued it in inbox mode,
// the delivery in synchronous mode. Both stores.
func TestTaskSpanLinksToItsEnqueuer(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := open(t)
			tel := newTelemetry(t, nil)
			hs := idempotency.NewHandlers()
			receipt := idempotency.NewTask(hs, "receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, e idempotency.Event[json.RawMessage]) error {
				_, err := receipt.Enqueue(ctx, tx, e.ID, e.ID)
				return err
			})
			logger := slog.New(slog.DiscardHandler)
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: logger, Observer: tel.Observer()})
			require.NoError(t, err)
			queued, err := in.Handler(idempotency.Config{Secrets: []string{secret}})
			require.NoError(t, err)
			sync, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{secret}, Logger: logger, Observer: tel.Observer()})
			require.NoError(t, err)

			a := idempotencytest.Deliver(queued, event(t, "evt_queued", "invoice.paid", "in_1"), secret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			a = idempotencytest.Deliver(sync, event(t, "evt_sync", "invoice.paid", "in_2"), secret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
			_, err = in.WorkDue(t.Context())
			require.NoError(t, err)

			spans := tel.spans.GetSpans()
			tasks := byEvent(spans, isAttempt(idempotency.KindTask))
			require.Len(t, tasks, 2)
			for enqueuer, want := range map[string]tracetest.SpanStub{
				"evt_queued": byEvent(spans, isAttempt(idempotency.KindEvent))["evt_queued"],
				"evt_sync":   byEvent(spans, isDelivery)["evt_sync"],
			} {
				task := tasks[receipt.ID(enqueuer)]
				require.Equal(t, "process receipt", task.Name, "messaging: {operation name} {destination}, the task's name")
				requireAttr(t, task, "messaging.system", "idempotency")
				requireAttr(t, task, "messaging.operation.type", "process")
				requireAttr(t, task, "messaging.operation.name", "process")
				requireAttr(t, task, "messaging.destination.name", "receipt")
				requireAttr(t, task, "messaging.message.id", receipt.ID(enqueuer))
				requireNoAttr(t, task, "stripe.event.type", "stripe.event.id")
				require.Len(t, task.Links, 1, "the task enqueued by %s links to its span", enqueuer)
				require.Equal(t, want.SpanContext.TraceID(), task.Links[0].SpanContext.TraceID(), enqueuer)
				require.Equal(t, want.SpanContext.SpanID(), task.Links[0].SpanContext.SpanID(), enqueuer)
				require.NotEqual(t, want.SpanContext.TraceID(), task.SpanContext.TraceID(), "a task's attempt is a trace of its own")
			}
		})
	}
}
