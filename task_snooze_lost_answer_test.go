package idempotency_test

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestTaskSnoozeLostReportedAsRecorded: the UPDATE that records a task's
// snooze went through while its connection dropped before the answer;
// the store records it again on another connection, which finds it done.
// The attempt is reported as the store recorded it, snoozed (queued,
// pending, no error), once: not as a lease lost to a newer attempt.
func TestTaskSnoozeLostReportedAsRecorded(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	settle := []byte("SET state = $3, last_error = $4") // the settle's text, sent to prepare it
	store := answerLostStore(t, &armed, func(b []byte) bool { return bytes.Contains(b, settle) }, "UPDATE 1\x00")
	in, h, results := taskInbox(t, store, func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		armed.Store(true)
		return idempotency.Snooze(time.Hour)
	})
	a := idempotencytest.Deliver(h, invoicePayload(t, "evt_snooze_lost", "in_snooze_lost", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	n, err := in.WorkDue(t.Context()) // the event, which enqueues the task, and the task, which snoozes
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.False(t, armed.Load(), "the snooze's settle was sent and its answer lost")

	recs, err := in.List(t.Context(), idempotency.InboxFilter{Kind: idempotency.KindTask})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, idempotency.InboxPending, recs[0].State, "the snooze went through")
	require.Equal(t, 0, recs[0].Attempt, "a snooze is not counted")

	got := results.all()
	require.Len(t, got, 2)
	for name, got := range got {
		require.Len(t, got, 1, name)
		r := got[0]
		require.NoError(t, r.Err, name)
		require.Equal(t, idempotency.OutcomeQueued, r.Outcome, name)
		require.Equal(t, idempotency.InboxPending, r.State, name)
		require.Equal(t, 1, r.Attempt, name)
	}
}

// taskInbox is an inbox on store, with 3 attempts, whose invoice.paid
// handler enqueues the task run, by the invoice's id; its Handler, and the
// task's Results given to OnResult and to the Observer.
func taskInbox(t *testing.T, store idempotency.Store, run func(context.Context, idempotency.TaskRun[misuseArgs]) error) (*idempotency.Inbox, http.Handler, *hookResults) {
	t.Helper()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "poll-provider", run)
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		_, err := task.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
		return err
	})
	results := &hookResults{}
	ofTask := func(r idempotency.Result) bool { return r.Kind == idempotency.KindTask }
	icfg := idempotency.InboxConfig{MaxAttempts: 3, Logger: discardLogger(), OnResult: results.add("OnResult", ofTask)}
	observeResults(&icfg, results.add("Observer", ofTask))
	in, err := idempotency.NewInbox(store, hs, icfg)
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	return in, h, results
}
