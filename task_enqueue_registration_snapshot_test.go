package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEnqueueRegistrationCheckReadsTheHandlersSnapshot: Enqueue's check
// that the event's Handlers registers the task reads what NewHandler took
// of it, not the Handlers itself: a NewTask on that Handlers after
// NewHandler, which the Handler does not see and is no concurrent use of
// it, runs while deliveries enqueue, with no data race (it was a read of
// the Handlers' task map under the registration's write, which -race
// reports and the runtime may end the process on).
func TestEnqueueRegistrationCheckReadsTheHandlersSnapshot(t *testing.T) {
	t.Parallel()
	elsewhere := idempotency.NewHandlers()
	task := idempotency.NewTask(elsewhere, "snapshot-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[struct{ ID string }]) error {
		_, err := task.Enqueue(ctx, tx, ev.ID, misuseArgs{Amount: 500})
		return err
	})
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)

	// A task of the name, registered after NewHandler: the Handler's
	// check does not see it, as its dispatch does not see a handler
	// registered afterwards.
	idempotency.NewTask(hs, "snapshot-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_snapshot_after", "in_snapshot_after", "acct_1"), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status, "registered after NewHandler: not in the Handler's snapshot: %s", a.Body)

	// Registrations while deliveries enqueue: no data race.
	registered := make(chan struct{})
	go func() {
		defer close(registered)
		for i := range 50 {
			idempotency.NewTask(hs, fmt.Sprintf("later-%d", i), func(context.Context, idempotency.TaskRun[struct{}]) error { return nil })
		}
	}()
	for i := range 20 {
		a := idempotencytest.Deliver(h, invoicePayload(t, fmt.Sprintf("evt_snapshot_%d", i), fmt.Sprintf("in_snapshot_%d", i), "acct_1"), testSecret)
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	}
	<-registered
}
