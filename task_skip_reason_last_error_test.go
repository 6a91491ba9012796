package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestTaskSkipReasonIsItsLastError: a task that returns Skip ends skipped
// with the reason as its LastError, as TaskFunc and the README promise,
// on both stores; a NUL byte or invalid UTF-8 in it is replaced.
func TestTaskSkipReasonIsItsLastError(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec, _ := skippedTask(t, store, idempotency.Skip("customer deleted \x00 before \xff the email"))
			require.Equal(t, "customer deleted \uFFFD before \uFFFD the email", rec.LastError)
		})
	}
}

// skippedTask enqueues on store a task whose func returns skip, and runs
// it with an inbox: its record, skipped, and the attempt's Results.
func skippedTask(t *testing.T, store idempotency.Store, skip error) (idempotency.InboxRecord, []idempotency.Result) {
	t.Helper()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "welcome", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		return skip
	})
	out, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_skip_last_error", EventType: "invoice.paid", ReceivedAt: clock.Now()},
		func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, "cus_1", misuseArgs{})
			return err
		})
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, out)
	var results []idempotency.Result
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(),
		OnResult: func(r idempotency.Result) { results = append(results, r) }})
	require.NoError(t, err)
	misuseWork(t, in, 1)
	rec := mustLookup(t, in, task.ID("cus_1"))
	require.Equal(t, idempotency.InboxSkipped, rec.State)
	return rec, results
}
