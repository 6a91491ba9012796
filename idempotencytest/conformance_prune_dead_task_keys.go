package idempotencytest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneKeepsDeadTaskKeys: a dead-lettered task is the record that its
// key was enqueued, as a finished one is: it is kept as long as a
// different event about the key can still come and be redriven, the event
// ids' and the dead letters' windows together, not only DeadLetters. An
// event that was dead-lettered a day after the task (a handler bug) and
// redriven 90 days and a half after the task found the key free once the
// task's dead letter was pruned: the task ran a second time, although its
// first run had reached the provider.
func testPruneKeepsDeadTaskKeys(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	tb := newTaskBench(t, b, idempotency.InboxConfig{MaxAttempts: 1})
	day := 24 * time.Hour
	// The provider applies the first call and its answer is lost: the
	// task is dead-lettered at its only attempt, its effect done.
	tb.provider.setAnswer(func(providerCall) error { return errAnswerLost })
	tb.deliver(t, viaInbox, "evt_dk_a", "invoice.paid", "in_dk", http.StatusOK, idempotency.OutcomeQueued)
	tb.work(t, 2) // the event, then its task
	require.Equal(t, idempotency.InboxDeadLetter, tb.task(t, "in_dk").State)
	require.Len(t, tb.provider.snapshot(), 1)

	// A day later another event about the invoice fails at its only
	// attempt.
	tb.clock.Advance(day)
	tb.setFail(func(id string, _ int) error {
		if id == "evt_dk_b" {
			return errors.New("a bug in the handler")
		}
		return nil
	})
	tb.deliver(t, viaInbox, "evt_dk_b", "invoice.payment_succeeded", "in_dk", http.StatusOK, idempotency.OutcomeQueued)
	tb.work(t, 1)
	dead, ok, err := tb.inbox.Lookup(ctxT(t), "evt_dk_b")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxDeadLetter, dead.State)

	// 90 days and a half after the task was dead-lettered, the event's
	// dead letter is still there to redrive, and so is the task's key.
	tb.clock.Advance(89*day + 12*time.Hour)
	rep := prune(t, rs, idempotency.Retention{}, tb.clock.Now())
	require.Zero(t, rep.DeadLetters, "%+v", rep)
	require.Equal(t, idempotency.InboxDeadLetter, tb.task(t, "in_dk").State)

	// The fix is deployed and the event redriven: its handler finds the
	// receipt enqueued before, and the task does not run again.
	tb.setFail(nil)
	tb.provider.setAnswer(nil)
	n, err := tb.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_dk_b"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for range 2 {
		_, err = tb.inbox.WorkDue(ctxT(t))
		require.NoError(t, err)
	}
	redriven, ok, err := tb.inbox.Lookup(ctxT(t), "evt_dk_b")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxProcessed, redriven.State)
	require.False(t, tb.enqueuedSnapshot()["evt_dk_b"], "the receipt's key is taken")
	require.Len(t, tb.provider.snapshot(), 1, "the task ran once")

	// Past the event ids' and the dead letters' windows together since it
	// was dead-lettered, the task's dead letter goes.
	tb.clock.Advance(45 * day)
	rep = prune(t, rs, idempotency.Retention{}, tb.clock.Now())
	require.Equal(t, 1, rep.DeadLetters, "%+v", rep)
	tb.requireNoTask(t, "in_dk")
}
