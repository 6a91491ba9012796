package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The README's "A release that changes a task": what a release finds of
// the tasks an earlier release stored, pending, failed or dead-lettered,
// on both stores. Each release is a Handlers of its own and an Inbox on
// the same store, on one fake clock, as processes of two releases on one
// database are.

// releaseReceipt is the first release's arguments.
type releaseReceipt struct {
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// enqueueAsRelease stores task name for key with args, in an event's
// transaction of its own, received at clock's time.
func enqueueAsRelease[T any](t *testing.T, store idempotency.Store, clock *idempotencytest.Clock, task *idempotency.Task[T], key string, args T) {
	t.Helper()
	_, err := store.Run(t.Context(), idempotency.Claim{EventID: "evt_" + task.Name() + "_" + key, EventType: "invoice.paid", ReceivedAt: clock.Now()},
		func(ctx context.Context, tx idempotency.Tx) error {
			ok, err := task.Enqueue(ctx, tx, key, args)
			if err == nil && !ok {
				err = errors.New("not enqueued")
			}
			return err
		})
	require.NoError(t, err)
}

// releaseInbox is a release's inbox on store, with the fake clock.
func releaseInbox(t *testing.T, store idempotency.Store, hs *idempotency.Handlers, clock *idempotencytest.Clock, maxAttempts int) *idempotency.Inbox {
	t.Helper()
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(), MaxAttempts: maxAttempts})
	require.NoError(t, err)
	return inbox
}

func releaseRecord(t *testing.T, inbox *idempotency.Inbox, id string) idempotency.InboxRecord {
	t.Helper()
	r, found, err := inbox.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, found, id)
	return r
}

// TestTaskReleaseRenamesAnArgumentsField: a field whose JSON name a
// release changes decodes as its zero value, the stored one ignored: the
// task runs with it and ends processed, nothing dead-lettered. Only a
// value of another JSON type fails the decoding.
func TestTaskReleaseRenamesAnArgumentsField(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			first := idempotency.NewHandlers()
			task := idempotency.NewTask(first, "send-receipt", func(context.Context, idempotency.TaskRun[releaseReceipt]) error { return nil })
			releaseInbox(t, store, first, clock, 0)
			enqueueAsRelease(t, store, clock, task, "in_1", releaseReceipt{Account: "acct_1", Amount: 2000})

			type renamed struct {
				Account    string `json:"account"`
				AmountPaid int64  `json:"amount_paid"` // was "amount"
			}
			next := idempotency.NewHandlers()
			var got []renamed
			idempotency.NewTask(next, "send-receipt", func(_ context.Context, run idempotency.TaskRun[renamed]) error {
				got = append(got, run.Args)
				return nil
			})
			inbox := releaseInbox(t, store, next, clock, 0)
			_, err := idempotencytest.Drain(t.Context(), inbox, clock, time.Hour)
			require.NoError(t, err)
			require.Equal(t, []renamed{{Account: "acct_1"}}, got, "the renamed field is zero")
			require.Equal(t, idempotency.InboxProcessed, releaseRecord(t, inbox, task.ID("in_1")).State)
		})
	}
}

// TestTaskReleaseDropsATask: a release that no longer registers a task
// fails each attempt at its stored tasks with ErrTaskNotRegistered, with
// the backoff, until MaxAttempts dead-letters them; a release that
// registers it again runs them once redriven.
func TestTaskReleaseDropsATask(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			first := idempotency.NewHandlers()
			task := idempotency.NewTask(first, "send-receipt", func(context.Context, idempotency.TaskRun[releaseReceipt]) error { return nil })
			releaseInbox(t, store, first, clock, 3)
			enqueueAsRelease(t, store, clock, task, "in_1", releaseReceipt{Amount: 2000})

			without := releaseInbox(t, store, idempotency.NewHandlers(), clock, 3)
			_, err := without.WorkDue(t.Context())
			require.NoError(t, err)
			r := releaseRecord(t, without, task.ID("in_1"))
			require.Equal(t, idempotency.InboxFailed, r.State)
			require.True(t, r.NextAttemptAt.After(r.AttemptedAt), "retried with the backoff")
			require.Equal(t, `idempotency: no task registered as "send-receipt"`, r.LastError)
			_, err = idempotencytest.Drain(t.Context(), without, clock, 8*24*time.Hour)
			require.NoError(t, err)
			r = releaseRecord(t, without, task.ID("in_1"))
			require.Equal(t, idempotency.InboxDeadLetter, r.State)
			require.Equal(t, 3, r.Attempt)

			again := idempotency.NewHandlers()
			runs := 0
			idempotency.NewTask(again, "send-receipt", func(_ context.Context, run idempotency.TaskRun[releaseReceipt]) error {
				runs++
				require.Equal(t, int64(2000), run.Args.Amount)
				return nil
			})
			inbox := releaseInbox(t, store, again, clock, 3)
			n, err := inbox.Redrive(t.Context(), idempotency.RedriveFilter{Kind: idempotency.KindTask})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			_, err = idempotencytest.Drain(t.Context(), inbox, clock, time.Hour)
			require.NoError(t, err)
			require.Equal(t, 1, runs)
			require.Equal(t, idempotency.InboxProcessed, releaseRecord(t, inbox, task.ID("in_1")).State)
		})
	}
}

// TestTaskReleaseRenamesATask: a task's name is in its id and its
// idempotency key. A release that renames a task makes another task: a
// key the old name ran for is enqueued again under the new one, and runs
// again, with another idempotency key, so that the provider cannot tell
// the second request from a new one.
func TestTaskReleaseRenamesATask(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			var keys []string
			send := func(_ context.Context, run idempotency.TaskRun[releaseReceipt]) error {
				keys = append(keys, run.IdempotencyKey)
				return nil
			}
			first := idempotency.NewHandlers()
			old := idempotency.NewTask(first, "send-receipt", send)
			inbox := releaseInbox(t, store, first, clock, 0)
			enqueueAsRelease(t, store, clock, old, "in_1", releaseReceipt{})
			_, err := idempotencytest.Drain(t.Context(), inbox, clock, time.Hour)
			require.NoError(t, err)

			next := idempotency.NewHandlers()
			renamed := idempotency.NewTask(next, "email-receipt", send)
			inbox = releaseInbox(t, store, next, clock, 0)
			enqueueAsRelease(t, store, clock, renamed, "in_1", releaseReceipt{}) // fails the test if not enqueued
			_, err = idempotencytest.Drain(t.Context(), inbox, clock, time.Hour)
			require.NoError(t, err)
			require.Len(t, keys, 2, "the receipt of in_1 is sent twice")
			require.NotEqual(t, keys[0], keys[1])
			require.True(t, strings.HasPrefix(keys[1], "email-receipt-"), keys[1])
		})
	}
}

// TestTaskReleaseChangesAFieldsTypeInARollingDeploy: a task the new
// release enqueued with a field of another JSON type, taken by a worker
// of the old release still running, does not decode there: it is
// dead-lettered at once, its func not called, with a LastError that
// names the field and the types and no value. Redriven once the old
// release's workers are gone, the new release runs it.
func TestTaskReleaseChangesAFieldsTypeInARollingDeploy(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			first := idempotency.NewHandlers()
			oldRuns := 0
			idempotency.NewTask(first, "send-receipt", func(context.Context, idempotency.TaskRun[releaseReceipt]) error {
				oldRuns++
				return nil
			})
			old := releaseInbox(t, store, first, clock, 0)

			type priced struct {
				Account string `json:"account"`
				Amount  string `json:"amount"` // "20.00 EUR", was cents
			}
			next := idempotency.NewHandlers()
			var got []priced
			task := idempotency.NewTask(next, "send-receipt", func(_ context.Context, run idempotency.TaskRun[priced]) error {
				got = append(got, run.Args)
				return nil
			})
			inbox := releaseInbox(t, store, next, clock, 0)
			enqueueAsRelease(t, store, clock, task, "in_1", priced{Account: "acct_1", Amount: "20.00 EUR"})

			_, err := old.WorkDue(t.Context())
			require.NoError(t, err)
			r := releaseRecord(t, old, task.ID("in_1"))
			require.Equal(t, idempotency.InboxDeadLetter, r.State)
			require.Equal(t, `idempotency: permanent failure: decoding the arguments of task send-receipt: field "amount": cannot decode a JSON string into int64`, r.LastError)
			require.Zero(t, oldRuns)

			_, err = inbox.Redrive(t.Context(), idempotency.RedriveFilter{Kind: idempotency.KindTask})
			require.NoError(t, err)
			_, err = idempotencytest.Drain(t.Context(), inbox, clock, time.Hour)
			require.NoError(t, err)
			require.Equal(t, []priced{{Account: "acct_1", Amount: "20.00 EUR"}}, got)
		})
	}
}

// TestTaskReleaseLowersMaxAttempts: a task whose attempts already reach
// the MaxAttempts of a release that lowered it gets one attempt more,
// dead-lettered when that one fails; a release that raises it leaves a
// dead-lettered task dead-lettered, for a redrive.
func TestTaskReleaseLowersMaxAttempts(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			failing := func(context.Context, idempotency.TaskRun[releaseReceipt]) error { return errors.New("mail API: 503") }
			first := idempotency.NewHandlers()
			task := idempotency.NewTask(first, "send-receipt", failing)
			inbox := releaseInbox(t, store, first, clock, 10)
			enqueueAsRelease(t, store, clock, task, "in_1", releaseReceipt{})
			for range 5 {
				_, err := inbox.WorkDue(t.Context())
				require.NoError(t, err)
				clock.Set(releaseRecord(t, inbox, task.ID("in_1")).NextAttemptAt)
			}
			require.Equal(t, 5, releaseRecord(t, inbox, task.ID("in_1")).Attempt)

			lowered := idempotency.NewHandlers()
			idempotency.NewTask(lowered, "send-receipt", failing)
			inbox = releaseInbox(t, store, lowered, clock, 3)
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			r := releaseRecord(t, inbox, task.ID("in_1"))
			require.Equal(t, idempotency.InboxDeadLetter, r.State)
			require.Equal(t, 6, r.Attempt)

			raised := idempotency.NewHandlers()
			idempotency.NewTask(raised, "send-receipt", failing)
			inbox = releaseInbox(t, store, raised, clock, 20)
			clock.Advance(24 * time.Hour)
			n, err = inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Zero(t, n)
			require.Equal(t, idempotency.InboxDeadLetter, releaseRecord(t, inbox, task.ID("in_1")).State)
		})
	}
}

// TestTaskReleaseChangesTheBackoff: a failed task is retried first at
// the time the release that failed it set, whatever the Backoff of the
// release that takes it, and then with that release's.
func TestTaskReleaseChangesTheBackoff(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			runs := 0
			failing := func(context.Context, idempotency.TaskRun[releaseReceipt]) error {
				runs++
				return errors.New("mail API: 503")
			}
			release := func(backoff time.Duration) (*idempotency.Inbox, *idempotency.Task[releaseReceipt]) {
				hs := idempotency.NewHandlers()
				task := idempotency.NewTask(hs, "send-receipt", failing)
				inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
					Now: clock.Now, Logger: discardLogger(), Backoff: func(int) time.Duration { return backoff },
				})
				require.NoError(t, err)
				return inbox, task
			}
			inbox, task := release(time.Hour)
			enqueueAsRelease(t, store, clock, task, "in_1", releaseReceipt{})
			_, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			due := releaseRecord(t, inbox, task.ID("in_1")).NextAttemptAt
			require.True(t, clock.Now().Add(time.Hour).Equal(due), "due %s", due)

			inbox, _ = release(time.Second)
			clock.Advance(time.Minute)
			n, err := inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Zero(t, n, "due at the hour the first release set")
			clock.Set(due)
			n, err = inbox.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, 2, runs)
			next := releaseRecord(t, inbox, task.ID("in_1")).NextAttemptAt
			require.True(t, clock.Now().Add(time.Second).Equal(next), "then with its own: due %s", next)
		})
	}
}
