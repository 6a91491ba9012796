package idempotency_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestOnResultPanicLogNamesTheTask: the log line of an OnResult that
// panicked at a task's attempt names the task as the attempt's own line
// does (task_id, task); it put the task's id under event_id.
func TestOnResultPanicLogNamesTheTask(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, "hello")
		return err
	})
	var log bytes.Buffer
	in, err := idempotency.NewInbox(&idempotency.MemoryStore{}, hs, idempotency.InboxConfig{
		Logger:   slog.New(slog.NewTextHandler(&log, nil)),
		OnResult: func(r idempotency.Result) { panic("a metrics bug") },
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_receipt", "in_receipt", "acct_1"), testSecret).Outcome)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)

	var panicked []string
	for _, l := range bytes.Split(log.Bytes(), []byte("\n")) {
		if bytes.Contains(l, []byte(`msg="idempotency: OnResult panicked"`)) {
			panicked = append(panicked, string(l))
		}
	}
	require.Len(t, panicked, 2, "the event's attempt and the task's")
	require.Contains(t, panicked[0], "event_id=evt_receipt")
	require.Contains(t, panicked[1], "task_id="+receipt.ID("in_receipt"))
	require.Contains(t, panicked[1], "task=send-receipt")
	require.NotContains(t, panicked[1], "event_id=")
}
