package idempotencytest

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// newTypeRelease is an Inbox on ib's store and clock, as a release that
// adds a handler for typ: it adds 1 to the counter typ in the event's
// transaction, and runs counts its runs.
func newTypeRelease(t *testing.T, ib *inboxBench, typ string) (in *idempotency.Inbox, runs func() int) {
	t.Helper()
	var mu sync.Mutex
	n := 0
	hs := idempotency.NewHandlers()
	idempotency.On(hs, typ, func(ctx context.Context, tx idempotency.Tx, _ idempotency.Event[inboxObject]) error {
		mu.Lock()
		n++
		mu.Unlock()
		return ib.b.Add(ctx, tx, typ, 1)
	})
	in = newInbox(t, ib.b, hs, idempotency.InboxConfig{Now: ib.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	return in, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// testInboxRedriveIgnoredApplied: events a release without their type's
// handler recorded ignored (RecordIgnored) are redriven with
// States ignored once a release with the handler runs: pending, due now,
// with a fresh budget, no longer finished; that release applies each
// once, also after a later event of its object was applied; redriven
// again, a processed one moves nothing. A dry run counts them, the
// default (dead_letter) does not take them, and a state Redrive does not
// take, or ignored with Kind task, is refused naming the field, nothing
// moved.
func testInboxRedriveIgnoredApplied(t *testing.T, b StoreBackend) {
	const typ = "invoice.finalized" // no handler in the bench's release
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	deployStart := ib.clock.Now()
	ib.deliver(t, "evt_ri_new", typ, "in_ri", 1756742400, idempotency.OutcomeIgnored)
	ib.clock.Advance(time.Minute)
	ib.deliver(t, "evt_ri_later", "invoice.paid", "in_ri", 1756742401, idempotency.OutcomeQueued)
	ib.work(t, 1) // the ignored event holds its object back no more than a processed one
	require.Equal(t, []string{"evt_ri_later"}, ib.appliedOrder())
	r := normalize(ib.record(t, "evt_ri_new"))
	require.Equal(t, idempotency.InboxIgnored, r.State)
	require.Equal(t, deployStart, r.FinishedAt)

	ctx := ctxT(t)
	for _, st := range []idempotency.InboxState{idempotency.InboxProcessed, idempotency.InboxSkipped,
		idempotency.InboxPending, idempotency.InboxProcessing, "done"} {
		_, err := ib.inbox.Redrive(ctx, idempotency.RedriveFilter{States: []idempotency.InboxState{st}})
		require.ErrorContains(t, err, "RedriveFilter.States", "state %q", st)
	}
	_, err := ib.inbox.Redrive(ctx, idempotency.RedriveFilter{Kind: idempotency.KindTask,
		States: []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxIgnored}})
	require.ErrorContains(t, err, "RedriveFilter.States", "a task is never ignored")
	want := map[idempotency.InboxState]int{idempotency.InboxProcessed: 1, idempotency.InboxIgnored: 1}
	require.Equal(t, want, ib.counts(t), "a refused redrive moves nothing")

	ignored := []idempotency.InboxState{idempotency.InboxIgnored}
	events, tasks, err := ib.inbox.RedriveByKind(ctx, idempotency.RedriveFilter{States: ignored, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 0}, [2]int{events, tasks}, "a dry run counts the ignored event")
	n, err := ib.inbox.Redrive(ctx, idempotency.RedriveFilter{DryRun: true})
	require.NoError(t, err)
	require.Zero(t, n, "dead_letter by default: an ignored event is not taken")
	require.Equal(t, want, ib.counts(t), "a dry run moves nothing")

	ib.clock.Advance(time.Hour)
	n, err = ib.inbox.Redrive(ctx, idempotency.RedriveFilter{States: ignored, EventType: typ, Since: deployStart})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r = normalize(ib.record(t, "evt_ri_new"))
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt)
	require.Equal(t, ib.clock.Now(), r.NextAttemptAt, "due now")
	require.True(t, r.FinishedAt.IsZero(), "no longer finished: %s", r.FinishedAt)

	next, runs := newTypeRelease(t, ib, typ)
	n, err = next.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "attempts of the release with the handler")
	r = ib.record(t, "evt_ri_new")
	require.Equal(t, idempotency.InboxProcessed, r.State, r.LastError)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, 1, runs())
	require.Equal(t, 1, b.Get(t, typ), "its business write, once")
	requireEvent(t, b, "evt_ri_new", idempotency.OutcomeProcessed)

	n, err = next.Redrive(ctx, idempotency.RedriveFilter{EventIDs: []string{"evt_ri_new"},
		States: []idempotency.InboxState{idempotency.InboxIgnored, idempotency.InboxDeadLetter, idempotency.InboxFailed}})
	require.NoError(t, err)
	require.Zero(t, n, "processed now: not redriven")
	n, err = next.WorkDue(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, 1, runs())
	require.Equal(t, 1, b.Get(t, typ), "not applied again")
}

// testInboxRedriveIgnoredUnappliable: what a worker makes of a redriven
// ignored event it cannot apply. With no handler for its type, one
// received longer than RetryUnhandledFor ago is recorded ignored again at
// its first attempt, and the later event of its object it held back while
// pending is applied after it; one received since fails with
// ErrNoHandler, retried as in a rolling deploy. One whose id the ledger
// has (a synchronous Handler with RecordIgnored claimed it ignored, and
// its retry reached the inbox) is found claimed by a release with the
// handler and not applied: its inbox row reads processed, the ledger's
// outcome stays ignored.
func testInboxRedriveIgnoredUnappliable(t *testing.T, b StoreBackend) {
	const typ = "invoice.finalized" // no handler in the bench's release
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	ctx := ctxT(t)
	ib.deliver(t, "evt_ru_old", typ, "in_ru", 1756742400, idempotency.OutcomeIgnored)

	syncH, err := idempotency.NewHandler(b.Store, idempotency.NewHandlers(), idempotency.Config{Secrets: []string{inboxSecret},
		RecordIgnored: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	a := Deliver(syncH, inboxEvent("evt_ru_claimed", typ, "in_ru_claimed", 1756742400), inboxSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, idempotency.OutcomeIgnored, a.Outcome)
	requireEvent(t, b, "evt_ru_claimed", idempotency.OutcomeIgnored)
	ib.deliver(t, "evt_ru_claimed", typ, "in_ru_claimed", 1756742400, idempotency.OutcomeIgnored)

	ib.clock.Advance(2 * time.Hour) // past RetryUnhandledFor (an hour)
	ignored := []idempotency.InboxState{idempotency.InboxIgnored}

	n, err := ib.inbox.Redrive(ctx, idempotency.RedriveFilter{States: ignored, EventIDs: []string{"evt_ru_claimed"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	next, runs := newTypeRelease(t, ib, typ)
	n, err = next.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r := ib.record(t, "evt_ru_claimed")
	require.Equal(t, idempotency.InboxProcessed, r.State, "found claimed: processed, nothing applied")
	require.Equal(t, 1, r.Attempt)
	require.Empty(t, r.LastError)
	require.Zero(t, runs(), "the handler did not run")
	require.Zero(t, b.Get(t, typ))
	requireEvent(t, b, "evt_ru_claimed", idempotency.OutcomeIgnored)

	ib.deliver(t, "evt_ru_later", "invoice.paid", "in_ru", 1756742401, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_ru_recent", typ, "in_ru_recent", 1756742400, idempotency.OutcomeIgnored)
	n, err = ib.inbox.Redrive(ctx, idempotency.RedriveFilter{States: ignored, EventIDs: []string{"evt_ru_old", "evt_ru_recent"}})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	ids, _ := ib.heldBy(t, "evt_ru_later")
	require.Equal(t, []string{"evt_ru_old"}, ids, "the redriven event sorts first in its object")
	ib.work(t, 3) // the bench's release: no handler for typ
	r = normalize(ib.record(t, "evt_ru_old"))
	require.Equal(t, idempotency.InboxIgnored, r.State, r.LastError)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, ib.clock.Now(), r.FinishedAt, "ignored again at its first attempt")
	require.Equal(t, []string{"evt_ru_later"}, ib.appliedOrder(), "no longer held back")
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_ru_later").State)
	r = ib.record(t, "evt_ru_recent")
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Contains(t, r.LastError, idempotency.ErrNoHandler.Error())
	_, ok, err := b.Store.LookupEvent(ctx, "evt_ru_old")
	require.NoError(t, err)
	require.False(t, ok, "no claim: ignored in the inbox only")
}
