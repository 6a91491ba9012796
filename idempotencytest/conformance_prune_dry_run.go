package idempotencytest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testPruneDryRun: a dry run (Retention.DryRun) reports what a prune at
// the same moment deletes and clears, and changes nothing. Rows of every
// kind lie on both sides of every window: claims (one of an event
// awaiting in the inbox, kept however old), finished, skipped and ignored
// events, dead letters, dead-lettered tasks, finished tasks with and
// without their arguments, guards, CheckOrder keys, OnCurrent's objects,
// and dead letters and a pending event whose keys are kept past the keys'
// window. At each of four moments, with the defaults and with Guards and
// Tasks set, a dry run changes nothing a look-up shows, a second one
// reports the same, and the prune that follows reports what they did:
// also the finished tasks the tasks step deletes before the arguments'
// step would clear them, which a prune does not count as cleared.
//
// The ledger's rows (claims, guards, objects) are dated by the store's
// clock, before or after mid; the inbox's rows by the inbox's fake clock,
// set around mid; CheckOrder's keys by the created time of their events.
func testPruneDryRun(t *testing.T, b StoreBackend) {
	rs := retentionStore(t, b)
	skipWithoutStoreTx(t, b)
	day := 24 * time.Hour
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[inboxObject]) error {
		if strings.HasPrefix(ev.ID, "evt_dry_dead") {
			return errDownstream
		}
		_, err := idempotency.CheckOrder(ctx, tx, "dry-order", ev.Object.ID, ev.Created)
		return err
	})
	idempotency.On(hs, "checkout.session.completed", func(context.Context, idempotency.Tx, idempotency.Event[inboxObject]) error {
		return idempotency.Skip("no account in metadata")
	})
	task := idempotency.NewTask(hs, "dry-task", func(_ context.Context, run idempotency.TaskRun[string]) error {
		switch {
		case strings.HasPrefix(run.Key, "skip"):
			return idempotency.Skip("nothing to send")
		case strings.HasPrefix(run.Key, "dead"):
			return idempotency.Permanent(errors.New("refused for good"))
		}
		return nil
	})
	clock := NewClock(time.Now())
	logger := slog.New(slog.DiscardHandler)
	in := newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, MaxAttempts: 1, Logger: logger})
	h, err := in.Handler(idempotency.Config{Secrets: []string{inboxSecret}, Logger: logger, RecordIgnored: true})
	require.NoError(t, err)
	cb := newCurrentBench(t, b)

	deliver := func(id, typ, objectID string, created time.Time, want idempotency.Outcome) {
		t.Helper()
		a := Deliver(h, inboxEvent(id, typ, objectID, created.Unix()), inboxSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, want, a.Outcome, "ingest of %s", id)
	}
	enqueue := func(key string) {
		t.Helper()
		c := claim("evt_dry_task_" + key)
		c.ReceivedAt = clock.Now()
		_, err := b.Store.Run(ctxT(t), c, func(ctx context.Context, tx idempotency.Tx) error {
			_, err := task.Enqueue(ctx, tx, key, key+"@example.com")
			return err
		})
		require.NoError(t, err)
	}
	work := func(want int) {
		t.Helper()
		n, err := in.WorkDue(ctxT(t))
		require.NoError(t, err)
		require.Equal(t, want, n, "attempts made by WorkDue")
	}
	syncRun := func(id, guard string, order time.Time) {
		t.Helper()
		_, err := b.Store.Run(ctxT(t), claim(id), func(ctx context.Context, tx idempotency.Tx) error {
			if guard == "" {
				return nil
			}
			if _, err := tx.Guard(ctx, "dry", guard); err != nil {
				return err
			}
			if order.IsZero() {
				return nil
			}
			_, err := idempotency.CheckOrder(ctx, tx, "dry-order", "in_dry_sync", order)
			return err
		})
		require.NoError(t, err)
	}
	subscription := func(id, sub string) {
		t.Helper()
		cb.api.set(sub, "active", 1)
		cb.deliverSync(t, subscriptionEvent(id, subUpdated, sub, "", currentCreated, "active"), http.StatusOK, idempotency.OutcomeProcessed)
	}

	// The ledger's rows, before and after mid: in the order their windows
	// are measured from mid, they fall on both sides of it. CheckOrder's
	// keys are dated days from start, a moment before mid, to the second
	// (an event's created time).
	start := time.Now()
	orderAt := func(days int) time.Time { return time.Unix(start.Add(time.Duration(days)*day).Unix(), 0) }
	syncRun("evt_dry_sync_old", "g_old", orderAt(-10))
	subscription("evt_dry_sub_old", "sub_dry_old")
	syncRun("evt_dry_again", "", time.Time{}) // stored again below, pending
	mid := time.Now()
	syncRun("evt_dry_sync_new", "g_new", time.Time{})
	subscription("evt_dry_sub_new", "sub_dry_new")

	// The inbox's rows, at days from mid. Each also claims its event, and
	// the processed events write CheckOrder keys dated by their created
	// times.
	at := func(days int) { clock.Set(mid.Add(time.Duration(days) * day)) }
	at(-110)
	deliver("evt_dry_done_0", "invoice.paid", "in_dry_0", orderAt(-300), idempotency.OutcomeQueued)
	enqueue("done_0")
	work(2)
	at(-100)
	enqueue("done_1")
	enqueue("skip_1")
	enqueue("dead_1")
	work(3)
	at(-92)
	enqueue("done_2")
	enqueue("dead_2")
	work(2)
	at(-50)
	deliver("evt_dry_dead_1", "invoice.paid", "in_dry_d1", orderAt(-50), idempotency.OutcomeQueued)
	work(1)
	at(-40)
	deliver("evt_dry_dead_2", "invoice.paid", "in_dry_d2", orderAt(-40), idempotency.OutcomeQueued)
	work(1)
	at(20)
	enqueue("done_3")
	work(1)
	at(30)
	deliver("evt_dry_done_1", "invoice.paid", "in_dry_1", orderAt(-200), idempotency.OutcomeQueued)
	deliver("evt_dry_skip", "checkout.session.completed", "cs_dry", orderAt(30), idempotency.OutcomeQueued)
	deliver("evt_dry_ignored", "customer.created", "cus_dry", orderAt(30), idempotency.OutcomeIgnored)
	work(2)
	at(40)
	deliver("evt_dry_done_4", "invoice.paid", "in_dry_4", orderAt(-93), idempotency.OutcomeQueued)
	enqueue("done_4")
	work(2)
	at(44)
	deliver("evt_dry_again", "invoice.paid", "in_dry_again", orderAt(44), idempotency.OutcomeQueued)

	orderKeys := map[string]time.Time{
		"in_dry_0": orderAt(-300), "in_dry_1": orderAt(-200), "in_dry_4": orderAt(-93), "in_dry_sync": orderAt(-10),
	}
	state := func() pruneState {
		t.Helper()
		return readPruneState(t, b, in, []string{"g_old", "g_new"}, orderKeys)
	}
	check := func(r idempotency.Retention, days int, want idempotency.PruneReport, msg string) {
		t.Helper()
		got := dryRunThenPrune(t, rs, state, r, mid.Add(time.Duration(days)*day))
		require.Equal(t, want, got, msg)
	}
	keys := idempotency.Retention{Guards: keysWindow, Tasks: keysWindow}

	// Defaults, 94 days before mid: the event and the task arguments that
	// finished 110 days before it.
	check(idempotency.Retention{}, -94, idempotency.PruneReport{Events: 1, TaskArgsCleared: 1}, "defaults, mid - 94 days")

	// Guards and Tasks set, 45 days after mid: the claims before mid but
	// the awaiting event's; the finished events and dead letters past
	// their windows; guards and tasks written before mid - 90 days, moved
	// back to mid - 95 days by the dead letter received at mid - 50 days.
	// The tasks that finished at mid - 100 days are deleted, their
	// arguments not counted as cleared.
	check(keys, 45, idempotency.PruneReport{EventIDs: 2, Events: 3, DeadLetters: 2, Guards: 2, Tasks: 3, Objects: 1, TaskArgsCleared: 2},
		"keys' windows, mid + 45 days")

	// 135 days after mid: every claim but the awaiting event's, the keys
	// before mid - 85 days (the dead letter received at mid - 40 days);
	// the guards of mid are kept.
	check(keys, 135, idempotency.PruneReport{EventIDs: 14, Events: 1, DeadLetters: 2, Guards: 1, Tasks: 1, Objects: 1, TaskArgsCleared: 1},
		"keys' windows, mid + 135 days")

	// Once the pending copy is applied (a duplicate), nothing awaits: its
	// claim goes, and the keys before mid.
	at(50)
	work(1)
	check(keys, 135, idempotency.PruneReport{EventIDs: 1, Events: 1, Guards: 2}, "keys' windows, nothing awaiting")
	requireGuard(t, b, "dry", "g_old", false)
	requireGuard(t, b, "dry", "g_new", true)
}

// pruneState is what a prune may change, as look-ups show it.
type pruneState struct {
	Inbox    []idempotency.InboxRecord
	Payloads map[string]bool // by inbox id: has its payload or arguments
	Stats    idempotency.InboxStats
	Ledger   []idempotency.EventRecord
	Guards   map[string]bool              // scope "dry", by key
	Order    map[string]idempotency.Order // scope "dry-order", by key: OrderTie while the key is kept
}

var errOrderProbe = errors.New("probe of CheckOrder's keys, rolled back")

// readPruneState reads the state of b's store: every inbox row with its
// payload's presence, the inbox's counts, the ledger, the guards of
// scope "dry" and the answer of CheckOrder for each key of scope
// "dry-order" at its created time, in a transaction rolled back.
func readPruneState(t *testing.T, b StoreBackend, in *idempotency.Inbox, guards []string, order map[string]time.Time) pruneState {
	t.Helper()
	var st pruneState
	var err error
	st.Inbox, err = in.List(ctxT(t), idempotency.InboxFilter{Limit: idempotency.MaxListLimit})
	require.NoError(t, err)
	st.Payloads = map[string]bool{}
	for _, r := range st.Inbox {
		_, ok, err := in.Payload(ctxT(t), r.EventID)
		require.NoError(t, err)
		st.Payloads[r.EventID] = ok
	}
	st.Stats, err = in.Stats(ctxT(t))
	require.NoError(t, err)
	st.Ledger, err = b.Store.ListEvents(ctxT(t), idempotency.EventFilter{})
	require.NoError(t, err)
	st.Guards = map[string]bool{}
	for _, key := range guards {
		_, ok, err := b.Store.LookupGuard(ctxT(t), "dry", key)
		require.NoError(t, err)
		st.Guards[key] = ok
	}
	st.Order = map[string]idempotency.Order{}
	_, err = b.Store.Run(ctxT(t), claim("evt_dry_order_probe"), func(ctx context.Context, tx idempotency.Tx) error {
		for key, created := range order {
			o, err := idempotency.CheckOrder(ctx, tx, "dry-order", key, created)
			if err != nil {
				return err
			}
			st.Order[key] = o
		}
		return errOrderProbe
	})
	require.ErrorIs(t, err, errOrderProbe)
	return st
}

// dryRunThenPrune runs a dry run of r measured at now, requires that it
// changed nothing state shows and that a second one reports the same,
// then prunes with r at now and requires the same report, which it
// returns.
func dryRunThenPrune(t *testing.T, rs RetentionStore, state func() pruneState, r idempotency.Retention, now time.Time) idempotency.PruneReport {
	t.Helper()
	before := state()
	dry := r
	dry.DryRun = true
	var batches int
	dry.OnBatch = func(idempotency.PruneReport) { batches++ }
	counted := prune(t, rs, dry, now)
	require.Zero(t, batches, "a dry run commits no batch")
	require.Equal(t, before, state(), "a dry run changes nothing")
	require.Equal(t, counted, prune(t, rs, dry, now), "a second dry run counts the same")
	pruned := prune(t, rs, r, now)
	require.Equal(t, counted, pruned, "the dry run counted what the prune deleted and cleared")
	return pruned
}
