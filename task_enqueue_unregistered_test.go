package idempotency_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEnqueueRefusesATaskTheEventsHandlersDoNotRegister: a task made on
// one Handlers and enqueued by an event that a Handler or an Inbox built
// on another runs, one that registers no task of its name, is refused
// with ErrTaskNotRegistered and rolls the event back: stored, no worker
// of that Handlers would run it, and it failed at every attempt until it
// was dead-lettered. A Handlers that registers a task of that name takes
// it. On both stores, in both modes.
func TestEnqueueRefusesATaskTheEventsHandlersDoNotRegister(t *testing.T) {
	t.Parallel()
	const secret = "whsec_unregistered_task"
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			elsewhere := idempotency.NewHandlers()
			task := idempotency.NewTask(elsewhere, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
			enqueuing := func(hs *idempotency.Handlers, errs chan<- error) {
				idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[struct{ ID string }]) error {
					_, err := task.Enqueue(ctx, tx, ev.ID, misuseArgs{Amount: 500})
					errs <- err
					return err
				})
			}
			lookup := store.(interface {
				LookupEvent(context.Context, string) (idempotency.EventRecord, bool, error)
			})
			tasks, err := idempotency.NewInbox(store, elsewhere, idempotency.InboxConfig{Logger: discardLogger()})
			require.NoError(t, err)
			requireNoTask := func(key string) {
				t.Helper()
				_, ok, err := tasks.Lookup(t.Context(), task.ID(key))
				require.NoError(t, err)
				require.False(t, ok, "the task was stored")
			}
			deliverSync := func(hs *idempotency.Handlers, eventID, invoiceID string) idempotencytest.Answer {
				t.Helper()
				h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{secret}, Logger: discardLogger()})
				require.NoError(t, err)
				return idempotencytest.Deliver(h, invoicePayload(t, eventID, invoiceID, "acct_1"), secret)
			}
			const want = `idempotency: task send-receipt: no task registered as "send-receipt" in the Handlers this event runs with: register it there with NewTask, before NewInbox`

			t.Run("sync", func(t *testing.T) {
				hs := idempotency.NewHandlers()
				errs := make(chan error, 1)
				enqueuing(hs, errs)
				a := deliverSync(hs, "evt_unregistered_sync", "in_1")
				require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
				err := <-errs
				require.ErrorIs(t, err, idempotency.ErrTaskNotRegistered)
				require.EqualError(t, err, want)
				_, ok, err := lookup.LookupEvent(t.Context(), "evt_unregistered_sync")
				require.NoError(t, err)
				require.False(t, ok, "the event rolled back")
				requireNoTask("evt_unregistered_sync")
			})
			t.Run("inbox", func(t *testing.T) {
				hs := idempotency.NewHandlers()
				errs := make(chan error, 1)
				enqueuing(hs, errs)
				// Its retry an hour away: with the default backoff, a
				// second, a WorkDue slow to record the failure found it
				// due and attempted it again, its handler then blocked
				// on errs.
				in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger(), Backoff: func(int) time.Duration { return time.Hour }})
				require.NoError(t, err)
				h, err := in.Handler(idempotency.Config{Secrets: []string{secret}})
				require.NoError(t, err)
				a := idempotencytest.Deliver(h, invoicePayload(t, "evt_unregistered_inbox", "in_2", "acct_1"), secret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
				n, err := in.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, n)
				err = <-errs
				require.ErrorIs(t, err, idempotency.ErrTaskNotRegistered)
				require.EqualError(t, err, want)
				rec, ok, err := in.Lookup(t.Context(), "evt_unregistered_inbox")
				require.NoError(t, err)
				require.True(t, ok)
				require.Equal(t, idempotency.InboxFailed, rec.State, "the event's attempt failed, to be retried once the task is registered")
				requireNoTask("evt_unregistered_inbox")
			})
			t.Run("registered by name", func(t *testing.T) {
				hs := idempotency.NewHandlers()
				idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
				errs := make(chan error, 1)
				enqueuing(hs, errs)
				a := deliverSync(hs, "evt_registered_by_name", "in_3")
				require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, a.Body)
				require.NoError(t, <-errs)
				_, ok, err := tasks.Lookup(t.Context(), task.ID("evt_registered_by_name"))
				require.NoError(t, err)
				require.True(t, ok, "the task was stored")
			})
		})
	}
}
