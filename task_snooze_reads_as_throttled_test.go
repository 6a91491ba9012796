package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestSnoozedTasksReadAsTheRunbookSays: tasks whose provider answers 429
// with a Retry-After, snoozing by it for half an hour, read as the
// runbook's "Events wait" says, on both stores: pending, none failed or
// processing, the last attempt recent, the oldest pending age the first
// task's since it was enqueued (past the alert's 5 minutes), each
// record's attempts unchanged, its last error empty and its next attempt
// the snooze's end; none dead-lettered, and each served once after.
func TestSnoozedTasksReadAsTheRunbookSays(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testSnoozedTasksReadAsTheRunbookSays(t, store)
		})
	}
}

func testSnoozedTasksReadAsTheRunbookSays(t *testing.T, store idempotency.Store) {
	ctx := t.Context()
	start := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	clock := idempotencytest.NewClock(start)
	throttledUntil := start.Add(30 * time.Minute)
	const retryAfter = time.Minute
	hs := idempotency.NewHandlers()
	served := map[string]int{} // WorkDue runs on the test's goroutine
	fulfil := idempotency.NewTask(hs, "fulfil", func(_ context.Context, run idempotency.TaskRun[misuseArgs]) error {
		if clock.Now().Before(throttledUntil) {
			return idempotency.Snooze(retryAfter) // the 429's Retry-After
		}
		served[run.Key]++
		return nil
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[pgInboxObject]) error {
		_, err := fulfil.Enqueue(ctx, tx, ev.ID, misuseArgs{})
		return err
	})
	in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	ids := []string{"evt_snoozed_1", "evt_snoozed_2", "evt_snoozed_3"}
	for i, id := range ids {
		a := idempotencytest.Deliver(h, pgInboxPayload(t, id, "in_snoozed_"+id, int64(i)), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	_, err = in.WorkDue(ctx) // the events, then their tasks' first attempts, snoozed
	require.NoError(t, err)
	enqueued := clock.Now()

	for clock.Now().Before(start.Add(20 * time.Minute)) {
		clock.Advance(retryAfter)
		_, err := in.WorkDue(ctx)
		require.NoError(t, err)
	}
	st, err := in.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, len(ids), st.TaskCounts[idempotency.InboxPending])
	require.Zero(t, st.Counts[idempotency.InboxFailed])
	require.Zero(t, st.Counts[idempotency.InboxProcessing])
	require.Zero(t, st.Counts[idempotency.InboxDeadLetter])
	require.Equal(t, clock.Now(), st.LastAttempt.UTC(), "the snoozed attempts are the last")
	require.Equal(t, enqueued, st.OldestPending.UTC(), "since the first task was enqueued")
	require.Greater(t, clock.Now().Sub(st.OldestPending), 5*time.Minute, "the alert that events wait fires")
	rec, ok, err := in.Lookup(ctx, fulfil.ID(ids[0]))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxPending, rec.State)
	require.Zero(t, rec.Attempt, "snoozes are not counted")
	require.Empty(t, rec.LastError, "a snooze records no error")
	require.Equal(t, clock.Now(), rec.AttemptedAt.UTC())
	require.Equal(t, clock.Now().Add(retryAfter), rec.NextAttemptAt.UTC(), "due when the snooze ends")
	holders, err := in.HeldBy(ctx, rec.EventID)
	require.NoError(t, err)
	require.Empty(t, holders)

	_, err = idempotencytest.Drain(ctx, in, clock, time.Hour)
	require.NoError(t, err)
	st, err = in.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Counts[idempotency.InboxDeadLetter])
	require.True(t, st.OldestPending.IsZero())
	for _, id := range ids {
		require.Equal(t, 1, served[id], id)
		rec, _, err := in.Lookup(ctx, fulfil.ID(id))
		require.NoError(t, err)
		require.Equal(t, idempotency.InboxProcessed, rec.State)
		require.Equal(t, 1, rec.Attempt, "the run that went through is the only one counted")
		require.False(t, rec.FinishedAt.Before(throttledUntil))
	}
}
