package idempotency_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestTaskPanicNamesTheTask: a TaskFunc's panic is reported as the task's,
// not a handler's: the task's LastError, the Result's Err given to
// OnResult and the attempt's log line say "task <name> panicked", where
// an operator read "handler panicked" and looked for an event handler.
// An event handler's panic keeps its text (panic_text_test.go).
func TestTaskPanicNamesTheTask(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		panic("mailer exploded")
	})
	r.enqueue(t, "evt_task_panic_text", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	log, buf := testLogger()
	in, err := idempotency.NewInbox(r.store, hs, idempotency.InboxConfig{
		Now: r.clock.Now, Logger: log, OnResult: rs.add, Backoff: func(int) time.Duration { return time.Minute },
	})
	require.NoError(t, err)
	misuseWork(t, in, 1)

	const want = "idempotency: task send-receipt panicked: mailer exploded"
	require.Equal(t, want, misuseLookup(t, in, task.ID("in_1")).LastError)
	res := rs.last(t)
	require.EqualError(t, res.Err, want)
	var p *idempotency.PanicError
	require.ErrorAs(t, res.Err, &p, "still a PanicError, with its value and stack")
	require.Equal(t, "mailer exploded", p.Value)
	require.Contains(t, buf.String(), `"error":"`+want+`"`)
	require.False(t, strings.Contains(buf.String(), "handler panicked"), "a task is not a handler: %s", buf.String())
}

// TestTaskReturnedPanicErrorKeptAsIs: a TaskFunc that returns a
// *PanicError (its own recover of something else, shared between calls)
// has it recorded as returned: only the task's own panic is renamed, and
// the value the func returned is not written to (a data race if shared).
func TestTaskReturnedPanicErrorKeptAsIs(t *testing.T) {
	t.Parallel()
	r := newMisuseRig()
	hs := idempotency.NewHandlers()
	returned := &idempotency.PanicError{Value: "the mailer's client panicked"}
	const text = "idempotency: handler panicked: the mailer's client panicked"
	require.EqualError(t, returned, text)
	task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
		return returned
	})
	r.enqueue(t, "evt_task_returned_panic", func(ctx context.Context, tx idempotency.Tx) error {
		_, err := task.Enqueue(ctx, tx, "in_1", misuseArgs{})
		return err
	})
	var rs misuseResults
	in, err := idempotency.NewInbox(r.store, hs, idempotency.InboxConfig{
		Now: r.clock.Now, Logger: discardLogger(), OnResult: rs.add, Backoff: func(int) time.Duration { return time.Minute },
	})
	require.NoError(t, err)
	misuseWork(t, in, 1)

	require.EqualError(t, returned, text, "the returned value is not changed")
	require.Equal(t, text, misuseLookup(t, in, task.ID("in_1")).LastError)
	require.EqualError(t, rs.last(t).Err, text)
}
