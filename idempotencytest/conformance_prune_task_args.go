package idempotencytest

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneClearsTaskArgs: the arguments of a task that finished
// (processed or skipped) longer than Retention.Payloads ago are cleared,
// as a finished event's payload goes then, and its row stays: its state,
// times, attempts and last error are as they were, Inbox.Payload reports
// the arguments not stored, enqueueing its key again does nothing, and it
// cannot be redriven. A task that finished less than Payloads ago keeps
// its arguments, and so does a dead-lettered one, which a redrive runs
// with them.
func testPruneClearsTaskArgs(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	clock := NewClock(taskStart)
	hs := idempotency.NewHandlers()
	var mu sync.Mutex
	var runs []string // key=args, one per attempt
	refuse := true
	probe := idempotency.NewTask(hs, "args-probe", func(_ context.Context, run idempotency.TaskRun[string]) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, run.Key+"="+run.Args)
		switch {
		case run.Key == "skip":
			return idempotency.Skip("nothing to send")
		case run.Key == "dead" && refuse:
			return idempotency.Permanent(errors.New("refused for good"))
		}
		return nil
	})
	snapshot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), runs...)
	}
	in := newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	events := 0
	enqueue := func(key string) bool {
		t.Helper()
		events++
		c := claim("evt_pta_" + strconv.Itoa(events))
		c.ReceivedAt = clock.Now()
		var enqueued bool
		_, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
			var err error
			enqueued, err = probe.Enqueue(ctx, tx, key, key+"@example.com")
			return err
		})
		require.NoError(t, err)
		return enqueued
	}
	work := func(want int) {
		t.Helper()
		n, err := in.WorkDue(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, want, n)
	}
	record := func(key string) idempotency.InboxRecord {
		t.Helper()
		r, ok, err := in.Lookup(ctxT(t), probe.ID(key))
		require.NoError(t, err)
		require.True(t, ok, "task %s is in the inbox", key)
		return r
	}
	args := func(key string) (string, bool) {
		t.Helper()
		p, ok, err := in.Payload(ctxT(t), probe.ID(key))
		require.NoError(t, err)
		return string(p), ok
	}

	for _, key := range []string{"old", "skip", "dead"} {
		require.True(t, enqueue(key))
	}
	work(3)
	start := clock.Now()
	clock.Advance(2 * 24 * time.Hour)
	require.True(t, enqueue("young"))
	work(1)
	keys := []string{"old", "skip", "dead", "young"}
	before := make(map[string]idempotency.InboxRecord)
	for key, want := range map[string]idempotency.InboxState{"old": idempotency.InboxProcessed, "skip": idempotency.InboxSkipped,
		"dead": idempotency.InboxDeadLetter, "young": idempotency.InboxProcessed} {
		before[key] = record(key)
		require.Equal(t, want, before[key].State, key)
	}
	require.Equal(t, "nothing to send", before["skip"].LastError)

	// At the very end of the window nothing is older than it.
	week := idempotency.DefaultPayloadRetention
	rep := prune(t, rs, idempotency.Retention{}, start.Add(week))
	require.Equal(t, idempotency.PruneReport{}, rep, "finished exactly Payloads ago is not older than Payloads")

	// Eight days after the first three finished, six after the young one.
	rep = prune(t, rs, idempotency.Retention{}, start.Add(8*24*time.Hour))
	require.Equal(t, idempotency.PruneReport{TaskArgsCleared: 2}, rep, "the processed and the skipped task's arguments; no row deleted")
	for _, key := range []string{"old", "skip"} {
		_, ok := args(key)
		require.False(t, ok, "%s's arguments are cleared", key)
	}
	for _, key := range []string{"dead", "young"} {
		got, ok := args(key)
		require.True(t, ok, "%s keeps its arguments", key)
		require.JSONEq(t, strconv.Quote(key+"@example.com"), got, key)
	}
	for _, key := range keys {
		require.Equal(t, before[key], record(key), "%s's row is as it was", key)
	}
	rep = prune(t, rs, idempotency.Retention{}, start.Add(8*24*time.Hour))
	require.Equal(t, idempotency.PruneReport{}, rep, "arguments cleared are not counted again")

	// The row is still the key's record.
	require.False(t, enqueue("old"), "the key of a task whose arguments were cleared is taken")
	require.False(t, enqueue("skip"))
	work(0)

	// A task whose arguments were cleared is final: there is nothing to
	// redrive.
	n, err := in.Redrive(ctxT(t), idempotency.RedriveFilter{
		EventIDs: []string{probe.ID("old"), probe.ID("skip")},
		States:   []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxFailed},
	})
	require.NoError(t, err)
	require.Zero(t, n)
	for _, key := range keys {
		require.Equal(t, before[key], record(key), "%s's row is as it was", key)
	}

	// The dead letter is redriven with its arguments.
	mu.Lock()
	refuse = false
	mu.Unlock()
	n, err = in.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{probe.ID("dead")}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	work(1)
	require.Equal(t, idempotency.InboxProcessed, record("dead").State)
	require.ElementsMatch(t, []string{"old=old@example.com", "skip=skip@example.com", "dead=dead@example.com",
		"young=young@example.com", "dead=dead@example.com"}, snapshot(), "each task ran with its arguments, the redriven one twice")
}
