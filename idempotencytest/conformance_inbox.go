package idempotencytest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// inboxTests are the inbox's guarantees, run by RunStoreTests on every store
// that supports the inbox, with a fake clock and WorkDue: deterministic,
// no sleeping.
var inboxTests = []struct {
	name string
	fn   func(t *testing.T, b StoreBackend)
}{
	{"InboxIngestQueuesOnce", testInboxIngest},
	{"InboxAppliesOnceWithClaimAndGuards", testInboxApplies},
	{"InboxRetriesWithBackoff", testInboxRetries},
	{"InboxDeadLetterThenRedrive", testInboxDeadLetter},
	{"InboxPerObjectOrder", testInboxObjectOrder},
	{"InboxObjectOneAtATime", testInboxObjectOneAtATime},
	{"InboxFailedEventHoldsItsObject", testInboxFailedHoldsObject},
	{"InboxDeadWorkerCountsAsAttempt", testInboxDeadWorker},
	{"InboxAttemptPastItsLeaseIsNotTakenOver", testInboxPastLease},
	{"InboxSkipAndIgnored", testInboxSkipAndIgnored},
	{"InboxClaimedBeforeIsNotRerun", testInboxClaimedBefore},
	{"InboxListStatsAndBadFilters", testInboxListStats},
	{"InboxStatsLastAttempt", testInboxStatsLastAttempt},
	{"InboxFilterTimesOutOfRange", testInboxFilterTimesOutOfRange},
	{"InboxListByAccount", testInboxListByAccount},
	{"InboxRedriveByAccount", testInboxRedriveByAccount},
	{"InboxObserverLinkRoundTrips", testInboxObserverLink},
	{"InboxStaleAttemptCannotApplyARedrivenOne", testInboxStaleAttemptCannotApplyARedrivenOne},
	{"InboxLeaseExpiredAtLastAttemptReported", testInboxLeaseExpiredReported},
	{"InboxUnexpiredLeaseHoldsObject", testInboxUnexpiredLeaseHoldsObject},
	{"InboxNextEventAfterItsWrites", testInboxNextEventAfterItsWrites},
	{"InboxHeldByFollowsTheLeaseRule", testInboxHeldBy},
	{"InboxHeldByOpenTransactionPastItsLease", testInboxHeldByOpenTransaction},
	{"InboxHeldByBounded", testInboxHeldByBounded},
	{"InboxRedriveFilters", testInboxRedriveFilters},
	{"InboxRedriveHistory", testInboxRedriveHistory},
	{"InboxRedriveHistoryOfExpiredLease", testInboxRedriveHistoryOfExpiredLease},
	{"InboxRedriveIgnoredApplied", testInboxRedriveIgnoredApplied},
	{"InboxRedriveIgnoredUnappliable", testInboxRedriveIgnoredUnappliable},
	{"InboxLeasesLongestDueFirst", testInboxLeasesLongestDueFirst},
	{"InboxGivenBackKeepsItsLastAttempt", testInboxGivenBackKeepsItsLastAttempt},
	{"InboxDeadLetterCopyIsDuplicate", testInboxDeadLetterCopyIsDuplicate},
	{"InboxCrashLoopSparesOthers", testInboxCrashLoopSparesOthers},
	{"FilterBoundsBelowMicrosecond", testFilterBoundsBelowMicrosecond},
	{"TimesKeptToTheMicrosecond", testTimesKeptToTheMicrosecond},
}

const inboxSecret = "whsec_conformance_inbox"

// inboxBench is an Inbox on the backend's store, its ingest handler, a fake
// clock, and the order in which events committed.
type inboxBench struct {
	b     StoreBackend
	clock *Clock
	inbox *idempotency.Inbox
	h     http.Handler

	mu       sync.Mutex
	applied  []appliedEvent // in the order their AfterCommit funcs ran
	ended    int            // handler runs that returned nil so far
	attempts map[string]int // handler runs per event id
}

// appliedEvent is an event whose attempt committed, and the place of that
// attempt's handler among those that returned nil.
type appliedEvent struct {
	id    string
	ended int
}

type inboxObject struct {
	ID string `json:"id"`
}

var errDownstream = errors.New("downstream unavailable")

// newInboxBench builds the bench. failures, when not nil, says whether the
// handler fails the given attempt of an event (after writing, so the
// rollback is tested too). It skips the test when the store has no inbox.
func newInboxBench(t *testing.T, b StoreBackend, cfg idempotency.InboxConfig, failures func(eventID string, attempt int) error) *inboxBench {
	t.Helper()
	ib := &inboxBench{b: b, clock: NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), attempts: map[string]int{}}
	hs := idempotency.NewHandlers()
	apply := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[inboxObject]) error {
		ib.mu.Lock()
		ib.attempts[ev.ID]++
		n := ib.attempts[ev.ID]
		ib.mu.Unlock()
		// An event about no object credits as its own object.
		first, err := tx.Guard(ctx, "object-credit", cmp.Or(ev.Object.ID, ev.ID))
		if err != nil {
			return err
		}
		if first {
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
		}
		if failures != nil {
			if err := failures(ev.ID, n); err != nil {
				return err
			}
		}
		ib.mu.Lock()
		ib.ended++
		ended := ib.ended
		ib.mu.Unlock()
		tx.AfterCommit(func(context.Context) {
			ib.mu.Lock()
			defer ib.mu.Unlock()
			ib.applied = append(ib.applied, appliedEvent{ev.ID, ended})
		})
		return nil
	}
	idempotency.On(hs, "invoice.paid", apply)
	idempotency.On(hs, "invoice.payment_succeeded", apply)
	idempotency.On(hs, "checkout.session.completed", func(context.Context, idempotency.Tx, idempotency.Event[inboxObject]) error {
		return idempotency.Skip("no account in metadata")
	})
	cfg.Now = ib.clock.Now
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	in := newInbox(t, b, hs, cfg)
	h, err := in.Handler(idempotency.Config{Secrets: []string{inboxSecret}, Logger: cfg.Logger, RecordIgnored: true})
	require.NoError(t, err)
	ib.inbox, ib.h = in, h
	return ib
}

// inboxEvent is a minimal event about objectID, created at the given
// second.
func inboxEvent(id, typ, objectID string, created int64) []byte {
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": created, "api_version": stripe.APIVersion, "livemode": false,
		"data": map[string]any{"object": map[string]any{"id": objectID, "object": "invoice"}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func (ib *inboxBench) deliver(t *testing.T, id, typ, objectID string, created int64, want idempotency.Outcome) {
	t.Helper()
	a := Deliver(ib.h, inboxEvent(id, typ, objectID, created), inboxSecret)
	require.Equal(t, http.StatusOK, a.Status, a.Body)
	require.Equal(t, want, a.Outcome, "ingest of %s", id)
}

func (ib *inboxBench) work(t *testing.T, want int) {
	t.Helper()
	n, err := ib.inbox.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, want, n, "attempts made by WorkDue")
}

// workDying runs WorkDue on a goroutine whose handler ends it with
// runtime.Goexit, as a worker that dies mid-attempt: the event it leased
// stays processing until its lease expires.
func (ib *inboxBench) workDying(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ib.inbox.WorkDue(ctxT(t))
	}()
	receive(t, done, "the dying worker")
}

func (ib *inboxBench) record(t *testing.T, id string) idempotency.InboxRecord {
	t.Helper()
	r, ok, err := ib.inbox.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok, "event %s is not in the inbox", id)
	return r
}

func (ib *inboxBench) counts(t *testing.T) map[idempotency.InboxState]int {
	t.Helper()
	st, err := ib.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	return nonZero(st.Counts)
}

// nonZero is counts (InboxStats.Counts or TaskCounts) without the zeros.
func nonZero(counts map[idempotency.InboxState]int) map[idempotency.InboxState]int {
	out := map[idempotency.InboxState]int{}
	for s, n := range counts {
		if n != 0 {
			out[s] = n
		}
	}
	return out
}

// listIDs returns the ids of the records in.List selects, in its order.
func listIDs(t *testing.T, in *idempotency.Inbox, f idempotency.InboxFilter) []string {
	t.Helper()
	recs, err := in.List(ctxT(t), f)
	require.NoError(t, err)
	var out []string
	for _, r := range recs {
		out = append(out, r.EventID)
	}
	return out
}

// appliedOrder is the ids of the events applied so far, in the order
// their handlers returned: their commit order for the events of one
// object, whose next event is leased only once the earlier one committed.
// The order their AfterCommit funcs ran in is not that on PostgreSQL,
// which releases the object at the commit: the worker that leases the
// next event may commit it before the first worker's funcs run.
func (ib *inboxBench) appliedOrder() []string {
	ib.mu.Lock()
	applied := slices.Clone(ib.applied)
	ib.mu.Unlock()
	slices.SortFunc(applied, func(a, b appliedEvent) int { return cmp.Compare(a.ended, b.ended) })
	ids := make([]string, len(applied))
	for i, a := range applied {
		ids[i] = a.id
	}
	return ids
}

// testInboxIngest: a new event is stored and answered queued, nothing is
// applied before a worker runs, and every copy, concurrent or later, is a
// duplicate.
func testInboxIngest(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	ib.deliver(t, "evt_in_1", "invoice.paid", "in_1", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_in_1", "invoice.paid", "in_1", 1756742400, idempotency.OutcomeDuplicate)
	answers := Replay(ib.h, inboxEvent("evt_in_2", "invoice.paid", "in_2", 1756742401), inboxSecret, 50)
	require.Equal(t, 1, answers.Count(idempotency.OutcomeQueued))
	require.Equal(t, 49, answers.Count(idempotency.OutcomeDuplicate))

	require.Equal(t, 0, b.Get(t, "c"), "nothing applied at ingest")
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxPending: 2}, ib.counts(t))
	r := ib.record(t, "evt_in_1")
	require.Equal(t, idempotency.InboxRecord{
		Kind: idempotency.KindEvent, EventID: "evt_in_1", EventType: "invoice.paid", ObjectID: "in_1", APIVersion: stripe.APIVersion,
		Created: time.Unix(1756742400, 0).UTC(), State: idempotency.InboxPending,
		ReceivedAt: ib.clock.Now(), NextAttemptAt: ib.clock.Now(),
	}, normalize(r))
	st, err := ib.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	require.True(t, st.OldestPending.Equal(ib.clock.Now()))
	require.Len(t, st.Counts, 7, "every state is counted, zero included")

	ib.work(t, 2)
	require.Equal(t, 2, b.Get(t, "c"))
	ib.deliver(t, "evt_in_1", "invoice.paid", "in_1", 1756742400, idempotency.OutcomeDuplicate)
	ib.work(t, 0)
	require.Equal(t, 2, b.Get(t, "c"))
}

// normalize puts a record's times in UTC, for comparison.
func normalize(r idempotency.InboxRecord) idempotency.InboxRecord {
	for _, t := range []*time.Time{&r.Created, &r.ReceivedAt, &r.AttemptedAt, &r.NextAttemptAt, &r.FinishedAt, &r.LeaseUntil, &r.RedrivenAt} {
		if t.IsZero() {
			*t = time.Time{}
		} else {
			*t = t.UTC()
		}
	}
	return r
}

// testInboxApplies: a worker applies an event exactly as the synchronous
// handler would: the claim is in the ledger, guards hold across twin
// events, and the row is processed with its times.
func testInboxApplies(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	ib.deliver(t, "evt_ap_1", "invoice.paid", "in_ap", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_ap_2", "invoice.payment_succeeded", "in_ap", 1756742400, idempotency.OutcomeQueued) // a twin
	ib.clock.Advance(time.Second)
	ib.work(t, 2)
	require.Equal(t, 1, b.Get(t, "c"), "twin events credit once")
	requireEvent(t, b, "evt_ap_1", idempotency.OutcomeProcessed)
	requireEvent(t, b, "evt_ap_2", idempotency.OutcomeProcessed)
	r := normalize(ib.record(t, "evt_ap_1"))
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, ib.clock.Now(), r.AttemptedAt)
	require.Equal(t, ib.clock.Now(), r.FinishedAt)
	require.True(t, r.NextAttemptAt.IsZero())
	require.Empty(t, r.LastError)
}

// testInboxRetries: a failing attempt rolls back its writes and is retried
// after the backoff, not before; the event is applied once.
func testInboxRetries(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{Backoff: func(n int) time.Duration { return time.Duration(n) * time.Minute }},
		func(_ string, attempt int) error {
			if attempt <= 2 {
				return fmt.Errorf("attempt %d: %w", attempt, errDownstream)
			}
			return nil
		})
	ib.deliver(t, "evt_retry", "invoice.paid", "in_retry", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	r := normalize(ib.record(t, "evt_retry"))
	require.Equal(t, idempotency.InboxFailed, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Contains(t, r.LastError, "attempt 1: downstream unavailable")
	require.Equal(t, ib.clock.Now().Add(time.Minute), r.NextAttemptAt)
	require.Equal(t, 0, b.Get(t, "c"), "the failed attempt's write rolled back")

	ib.clock.Advance(59 * time.Second)
	ib.work(t, 0) // not due yet
	ib.clock.Advance(time.Second)
	ib.work(t, 1)
	r = normalize(ib.record(t, "evt_retry"))
	require.Equal(t, 2, r.Attempt)
	require.Equal(t, ib.clock.Now().Add(2*time.Minute), r.NextAttemptAt, "attempt n waits Backoff(n)")

	ib.clock.Advance(2 * time.Minute)
	ib.work(t, 1)
	r = normalize(ib.record(t, "evt_retry"))
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 3, r.Attempt)
	require.Empty(t, r.LastError, "cleared on success, as a task's is")
	require.Equal(t, ib.clock.Now(), r.FinishedAt)
	require.True(t, r.NextAttemptAt.IsZero())
	require.Equal(t, 1, b.Get(t, "c"))
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxProcessed: 1}, ib.counts(t))
}

// testInboxDeadLetter: an event that fails every attempt is dead-lettered
// with its last error; a dry run counts it, a redrive after the fix applies
// it once, with a fresh budget.
func testInboxDeadLetter(t *testing.T, b StoreBackend) {
	fixed := false
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Minute }},
		func(_ string, attempt int) error {
			if !fixed {
				return fmt.Errorf("poison on attempt %d", attempt)
			}
			return nil
		})
	ib.deliver(t, "evt_poison", "invoice.paid", "in_poison", 1756742400, idempotency.OutcomeQueued)
	for range 3 {
		ib.work(t, 1)
		ib.clock.Advance(time.Minute)
	}
	ib.work(t, 0)
	r := normalize(ib.record(t, "evt_poison"))
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 3, r.Attempt)
	require.Contains(t, r.LastError, "poison on attempt 3")
	require.True(t, r.NextAttemptAt.IsZero())
	require.False(t, r.FinishedAt.IsZero())
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxDeadLetter: 1}, ib.counts(t))
	st, err := ib.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	require.True(t, st.OldestPending.IsZero(), "a dead letter is not still to apply: OldestPending %s", st.OldestPending)

	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_poison").State, "a dry run moves nothing")
	n, err = ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventType: "invoice.payment_succeeded"})
	require.NoError(t, err)
	require.Zero(t, n, "the filter selects by type")

	fixed = true
	n, err = ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_poison"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	r = normalize(ib.record(t, "evt_poison"))
	require.Equal(t, idempotency.InboxPending, r.State)
	require.Zero(t, r.Attempt, "a fresh attempt budget")
	require.Equal(t, ib.clock.Now(), r.NextAttemptAt)
	require.True(t, r.FinishedAt.IsZero(), "no longer finished: %s", r.FinishedAt)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_poison").State)
	require.Equal(t, 1, b.Get(t, "c"))

	n, err = ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to redrive")
}

// testInboxObjectOrder: events of one object are applied in (created, id)
// order whatever order they arrived in; other objects are not held back.
func testInboxObjectOrder(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{Workers: 4}, nil)
	ib.deliver(t, "evt_o_0", "invoice.paid", "in_o", 1756742403, idempotency.OutcomeQueued) // first by id, last by created
	ib.deliver(t, "evt_o_1", "invoice.paid", "in_o", 1756742401, idempotency.OutcomeQueued)
	// Same second: by id. Five of them, so that a store that leaves such
	// ties to chance (a map's order) cannot pass but by a 1 in 120 fluke.
	for _, id := range []string{"evt_o_2d", "evt_o_2b", "evt_o_2e", "evt_o_2a", "evt_o_2c"} {
		ib.deliver(t, id, "invoice.paid", "in_o", 1756742402, idempotency.OutcomeQueued)
	}
	ib.deliver(t, "evt_other", "invoice.paid", "in_other", 1756742409, idempotency.OutcomeQueued)
	ib.work(t, 8)
	var ofObject []string
	for _, id := range ib.appliedOrder() {
		if id != "evt_other" {
			ofObject = append(ofObject, id)
		}
	}
	require.Equal(t, []string{"evt_o_1", "evt_o_2a", "evt_o_2b", "evt_o_2c", "evt_o_2d", "evt_o_2e", "evt_o_0"}, ofObject, "by created, then by id")
	require.Contains(t, ib.appliedOrder()[:2], "evt_other", "another object's event does not wait for in_o's")
}

// testInboxObjectOneAtATime: while a worker applies an event of an object,
// no other event of that object is taken, not even one created before it,
// while a free worker applies another object's event; the held-back event
// is applied once the first is done.
func testInboxObjectOneAtATime(t *testing.T, b StoreBackend) {
	holding, release := make(chan struct{}), make(chan struct{})
	var held, released sync.Once
	// Both workers apply while deliveries come: the bench's clock stands
	// still, so IngestWorkers would otherwise hold one back throughout.
	ib := newInboxBench(t, b, idempotency.InboxConfig{Workers: 2, IngestWorkers: 2}, func(id string, attempt int) error {
		if id == "evt_busy_2" {
			held.Do(func() { close(holding) })
			<-release
		}
		return nil
	})
	// in_free's credit is given first, so that evt_free's handler does not
	// wait on the counter row evt_busy_2's open transaction has written.
	ib.deliver(t, "evt_free_0", "invoice.paid", "in_free", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	ib.deliver(t, "evt_busy_2", "invoice.paid", "in_busy", 1756742402, idempotency.OutcomeQueued)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ib.inbox.Run(ctx) }()
	defer func() {
		released.Do(func() { close(release) })
		cancel()
		require.NoError(t, receive(t, done, "Run"))
	}()
	receive(t, holding, "evt_busy_2's handler")

	ib.deliver(t, "evt_busy_1", "invoice.paid", "in_busy", 1756742401, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_free", "invoice.paid", "in_free", 1756742403, idempotency.OutcomeQueued)
	require.Eventually(t, func() bool { return slices.Contains(ib.appliedOrder(), "evt_free") }, waitLimit, time.Millisecond,
		"the free worker applies another object's event")
	r := ib.record(t, "evt_busy_1")
	require.Equal(t, idempotency.InboxPending, r.State, "not taken while its object is being applied")
	require.Zero(t, r.Attempt)

	released.Do(func() { close(release) })
	require.Eventually(t, func() bool { return len(ib.appliedOrder()) == 4 }, waitLimit, time.Millisecond)
	require.Equal(t, []string{"evt_free_0", "evt_free", "evt_busy_2", "evt_busy_1"}, ib.appliedOrder())
}

// testInboxFailedHoldsObject: a failed event holds the later events of its
// object back until it succeeds; a dead-lettered one holds nothing back.
func testInboxFailedHoldsObject(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Minute }},
		func(id string, attempt int) error {
			switch {
			case id == "evt_h_1" && attempt == 1, id == "evt_h_3":
				return errDownstream
			}
			return nil
		})
	ib.deliver(t, "evt_h_2", "invoice.paid", "in_h", 1756742402, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_h_1", "invoice.paid", "in_h", 1756742401, idempotency.OutcomeQueued)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxFailed, ib.record(t, "evt_h_1").State)
	require.Equal(t, idempotency.InboxPending, ib.record(t, "evt_h_2").State, "held back by the failed earlier event")
	ib.clock.Advance(time.Minute)
	ib.work(t, 2) // evt_h_1 succeeds, and evt_h_2 comes due behind it
	require.Equal(t, []string{"evt_h_1", "evt_h_2"}, ib.appliedOrder())

	ib.deliver(t, "evt_h_4", "invoice.paid", "in_h", 1756742404, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_h_3", "invoice.paid", "in_h", 1756742403, idempotency.OutcomeQueued)
	ib.work(t, 1)
	ib.clock.Advance(time.Minute)
	ib.work(t, 2) // evt_h_3's last attempt dead-letters it; evt_h_4 follows
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_h_3").State)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_h_4").State)
	require.Equal(t, []string{"evt_h_1", "evt_h_2", "evt_h_4"}, ib.appliedOrder())
}

// testInboxDeadWorker: a worker that dies mid-handler (its goroutine ends
// without recording anything: runtime.Goexit stands in for kill -9) leaves
// the event processing, its record (Lookup and List alike) showing when
// its lease ends; once the lease expires another worker retries it under
// a lease of its own, and that death counted as an attempt, so an event
// that kills every worker still reaches dead letter. A record holds no
// lease once it is final.
func testInboxDeadWorker(t *testing.T, b StoreBackend) {
	die := true
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 2, Lease: time.Minute, Timeout: 10 * time.Second},
		func(id string, _ int) error {
			if die || id == "evt_dies_always" {
				runtime.Goexit()
			}
			return nil
		})
	ib.deliver(t, "evt_dies_once", "invoice.paid", "in_dies_once", 1756742400, idempotency.OutcomeQueued)
	require.True(t, ib.record(t, "evt_dies_once").LeaseUntil.IsZero(), "pending: no lease")
	ib.workDying(t)
	r := ib.record(t, "evt_dies_once")
	require.Equal(t, idempotency.InboxProcessing, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, ib.clock.Now().Add(time.Minute), normalize(r).LeaseUntil, "the dead worker's lease, to its end")
	require.Equal(t, []idempotency.InboxRecord{normalize(r)}, listed(t, ib.inbox, "evt_dies_once"), "List has the lease as Lookup has it")
	require.Equal(t, 0, b.Get(t, "c"), "the dead worker's writes rolled back")

	die = false
	ib.clock.Advance(59 * time.Second)
	ib.work(t, 0) // the lease holds
	ib.clock.Advance(time.Second)
	require.Equal(t, ib.clock.Now(), normalize(ib.record(t, "evt_dies_once")).LeaseUntil, "expired, still shown until a lease takes it over")
	ib.work(t, 1)
	r = ib.record(t, "evt_dies_once")
	require.Equal(t, idempotency.InboxProcessed, r.State)
	require.Equal(t, 2, r.Attempt, "the death counted as an attempt")
	require.True(t, r.LeaseUntil.IsZero(), "final: no lease")
	require.Equal(t, 1, b.Get(t, "c"))

	ib.deliver(t, "evt_dies_always", "invoice.paid", "in_dies_always", 1756742400, idempotency.OutcomeQueued)
	for range 2 {
		ib.workDying(t)
		require.Equal(t, ib.clock.Now().Add(time.Minute), normalize(ib.record(t, "evt_dies_always")).LeaseUntil, "each attempt's own lease")
		ib.clock.Advance(time.Minute)
	}
	ib.work(t, 0)
	r = ib.record(t, "evt_dies_always")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 2, r.Attempt)
	require.Contains(t, r.LastError, "lease expired")
	r = normalize(r)
	require.Equal(t, ib.clock.Now(), r.FinishedAt, "finished when its lease was found expired")
	require.True(t, r.NextAttemptAt.IsZero())
	require.True(t, r.LeaseUntil.IsZero(), "dead-lettered: no lease")
	require.Equal(t, []idempotency.InboxRecord{r}, listed(t, ib.inbox, "evt_dies_always"))
}

// listed returns, normalized, the records in.List has of ids.
func listed(t *testing.T, in *idempotency.Inbox, ids ...string) []idempotency.InboxRecord {
	t.Helper()
	recs, err := in.List(ctxT(t), idempotency.InboxFilter{EventIDs: ids})
	require.NoError(t, err)
	for i := range recs {
		recs[i] = normalize(recs[i])
	}
	return recs
}

// testInboxPastLease: a worker whose handler runs past the lease (the
// fake clock moves on while it is blocked) keeps the event: another
// process finds neither it nor an earlier or later event of its object
// due, and the attempt's commit is recorded as the only one. The object's
// other events then follow, in created order. An event about no object is
// kept the same way.
func testInboxPastLease(t *testing.T, b StoreBackend) {
	for _, object := range []string{"in_long", ""} {
		t.Run(cmp.Or(object, "no object"), func(t *testing.T) {
			// Both cases share the backend's store.
			id := func(n int) string { return fmt.Sprintf("evt_%s_%d", cmp.Or(object, "lone"), n) }
			holding, release := make(chan struct{}), make(chan struct{})
			var held, released sync.Once
			cfg := idempotency.InboxConfig{Lease: time.Minute, Timeout: 30 * time.Second}
			ib := newInboxBench(t, b, cfg, func(eventID string, attempt int) error {
				if eventID == id(1) {
					held.Do(func() { close(holding) })
					<-release
				}
				return nil
			})
			defer released.Do(func() { close(release) })
			credits := b.Get(t, "c")
			ib.deliver(t, id(1), "invoice.paid", object, 1756742401, idempotency.OutcomeQueued)
			want := []string{id(1)}
			// The worker reports here, not to t: on a store that fails
			// the test before it ends, it would call t after the test.
			type worked struct {
				n   int
				err error
			}
			done := make(chan worked, 1)
			go func() {
				n, err := ib.inbox.WorkDue(context.Background())
				done <- worked{n, err}
			}()
			receive(t, holding, "the blocked handler")
			if object != "" {
				ib.deliver(t, id(2), "invoice.paid", object, 1756742402, idempotency.OutcomeQueued)
				ib.deliver(t, id(0), "invoice.paid", object, 1756742400, idempotency.OutcomeQueued)
				want = append(want, id(0), id(2))
			}

			// Another process, its clock past the lease as well.
			other := newInboxBench(t, b, cfg, nil)
			ib.clock.Advance(2 * time.Minute)
			other.clock.Advance(2 * time.Minute)
			other.work(t, 0)
			for _, eventID := range want {
				want := idempotency.InboxPending
				if eventID == id(1) {
					want = idempotency.InboxProcessing
				}
				require.Equal(t, want, ib.record(t, eventID).State, "state of %s", eventID)
			}
			require.Equal(t, credits, b.Get(t, "c"))

			released.Do(func() { close(release) })
			w := receive(t, done, "the blocked worker")
			require.NoError(t, w.err)
			// WorkDue goes on to the object's events that came due meanwhile.
			require.Equal(t, len(want), w.n, "the blocked worker's attempts")
			r := ib.record(t, id(1))
			require.Equal(t, idempotency.InboxProcessed, r.State)
			require.Equal(t, 1, r.Attempt)
			require.Empty(t, r.LastError)
			require.Equal(t, want, ib.appliedOrder())
			for _, eventID := range want {
				require.Equal(t, idempotency.InboxProcessed, ib.record(t, eventID).State, "state of %s", eventID)
				require.Equal(t, 1, ib.attempts[eventID], "attempts of %s", eventID)
			}
			require.Empty(t, other.attempts)
			require.Equal(t, 1, b.Get(t, "c")-credits, "the credit, given once")
		})
	}
}

// testInboxSkipAndIgnored: a skip is final and recorded in the ledger; an
// event type without a handler is recorded ignored at ingest (with
// RecordIgnored) and never attempted, with no last error, as Lookup and
// List read it (idemctl and the dashboard word why from that).
func testInboxSkipAndIgnored(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	ib.deliver(t, "evt_skip", "checkout.session.completed", "cs_1", 1756742400, idempotency.OutcomeQueued)
	ib.deliver(t, "evt_ign", "customer.created", "cus_1", 1756742400, idempotency.OutcomeIgnored)
	ib.deliver(t, "evt_ign", "customer.created", "cus_1", 1756742400, idempotency.OutcomeDuplicate)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxSkipped, ib.record(t, "evt_skip").State)
	require.Equal(t, "no account in metadata", requireEvent(t, b, "evt_skip", idempotency.OutcomeSkipped).SkipReason)
	ign := ib.record(t, "evt_ign")
	require.Equal(t, idempotency.InboxIgnored, ign.State)
	require.Zero(t, ign.Attempt)
	require.Empty(t, ign.LastError)
	listed, err := ib.inbox.List(ctxT(t), idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxIgnored}})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, "evt_ign", listed[0].EventID)
	require.Empty(t, listed[0].LastError)
	require.Equal(t, map[idempotency.InboxState]int{idempotency.InboxSkipped: 1, idempotency.InboxIgnored: 1}, ib.counts(t))
}

// testInboxClaimedBefore: an event the ledger already has (processed by the
// synchronous handler before the service moved to the inbox) is not run
// again; its inbox row is processed.
func testInboxClaimedBefore(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, nil)
	_, err := b.Store.Run(ctxT(t), idempotency.Claim{EventID: "evt_before", EventType: "invoice.paid"}, addOne(b, "c"))
	require.NoError(t, err)
	ib.deliver(t, "evt_before", "invoice.paid", "in_before", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_before").State)
	require.Equal(t, 1, b.Get(t, "c"))
	require.Empty(t, ib.attempts, "the handler did not run")
}

// testInboxListStats: List filters by state, type, object and time, newest
// first; bad filters are errors naming the field.
func testInboxListStats(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{}, func(id string, _ int) error {
		if id == "evt_ls_fail" {
			return errDownstream
		}
		return nil
	})
	start := ib.clock.Now()
	ib.deliver(t, "evt_ls_1", "invoice.paid", "in_ls_1", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Second)
	ib.deliver(t, "evt_ls_fail", "invoice.payment_succeeded", "in_ls_2", 1756742400, idempotency.OutcomeQueued)
	ib.clock.Advance(time.Second)
	ib.deliver(t, "evt_ls_3", "invoice.paid", "in_ls_3", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 3)

	ids := func(f idempotency.InboxFilter) []string { t.Helper(); return listIDs(t, ib.inbox, f) }
	require.Equal(t, []string{"evt_ls_3", "evt_ls_fail", "evt_ls_1"}, ids(idempotency.InboxFilter{}))
	require.Equal(t, []string{"evt_ls_fail"}, ids(idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxFailed}}))
	require.Equal(t, []string{"evt_ls_3", "evt_ls_1"}, ids(idempotency.InboxFilter{EventType: "invoice.paid"}))
	require.Equal(t, []string{"evt_ls_3"}, ids(idempotency.InboxFilter{ObjectID: "in_ls_3"}))
	require.Equal(t, []string{"evt_ls_fail", "evt_ls_1"}, ids(idempotency.InboxFilter{Since: start, Until: start.Add(2 * time.Second)}))
	require.Equal(t, []string{"evt_ls_3"}, ids(idempotency.InboxFilter{Limit: 1}))

	st, err := ib.inbox.Stats(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 2, st.Counts[idempotency.InboxProcessed])
	require.Equal(t, 1, st.Counts[idempotency.InboxFailed])
	require.True(t, st.OldestPending.Equal(start.Add(time.Second)), "the failed event is the oldest still to apply")

	for field, f := range map[string]idempotency.InboxFilter{
		"InboxFilter.Limit":    {Limit: -1},
		"InboxFilter.States":   {States: []idempotency.InboxState{"done"}},
		"InboxFilter.Since":    {Since: start, Until: start},
		"InboxFilter.ObjectID": {ObjectID: "in_\x00"},
	} {
		_, err := ib.inbox.List(ctxT(t), f)
		require.ErrorContains(t, err, field)
	}
	for field, f := range map[string]idempotency.RedriveFilter{
		"RedriveFilter.States":   {States: []idempotency.InboxState{idempotency.InboxProcessed}},
		"RedriveFilter.EventIDs": {EventIDs: []string{""}},
	} {
		_, err := ib.inbox.Redrive(ctxT(t), f)
		require.ErrorContains(t, err, field)
	}
}

// testInboxFilterTimesOutOfRange: a filter time outside the years 1 to
// 9999 (what PostgreSQL's timestamptz cannot hold, or what pgx encodes
// wrapped around: time.Unix(math.MaxInt64, 0) as "no end" becomes 1969) is
// refused, naming the field, by every store, and a refused redrive moves
// nothing.
func testInboxFilterTimesOutOfRange(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1}, func(string, int) error { return errDownstream })
	ib.deliver(t, "evt_range_dead", "invoice.paid", "in_range", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_range_dead").State)

	// Its microseconds since 1970 are 2^64 µs past 2000-01-01 (less
	// 0.55 s): encoded as PostgreSQL's int64, the year 2000.
	wrapsTo2000 := time.Unix(946684800+18446744073709, 0)
	noEnd := time.Unix(math.MaxInt64, 0)
	far := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	early := time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		field string
		f     idempotency.RedriveFilter
	}{
		{"RedriveFilter.Since", idempotency.RedriveFilter{Since: wrapsTo2000}},
		{"RedriveFilter.Until", idempotency.RedriveFilter{Until: far}},
		{"RedriveFilter.Since", idempotency.RedriveFilter{Since: early, DryRun: true}},
	} {
		n, err := ib.inbox.Redrive(ctxT(t), c.f)
		require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_range_dead").State, "%s %v: a refused redrive moves nothing", c.field, c.f)
		require.ErrorContains(t, err, c.field)
		require.Zero(t, n)
	}
	for field, f := range map[string]idempotency.InboxFilter{
		"InboxFilter.Until":  {Until: noEnd},
		"InboxFilter.Since":  {Since: far},
		"InboxFilter.Since ": {Since: early},
	} {
		_, err := ib.inbox.List(ctxT(t), f)
		require.ErrorContains(t, err, strings.TrimSpace(field))
	}
	for field, f := range map[string]idempotency.EventFilter{
		"EventFilter.Until": {Until: noEnd},
		"EventFilter.Since": {Since: far},
	} {
		_, err := b.Store.ListEvents(ctxT(t), f)
		require.ErrorContains(t, err, field)
	}
}

// linkKey is the context key under which the test's Observer.Delivery
// leaves the link that Observer.Link then returns.
type linkKey struct{}

// testInboxObserverLink: what Observer.Link returns in the delivery's
// context is stored with the event and given to Observer.Attempt, on every
// insert path (one delivery, concurrent deliveries stored together); a
// duplicate does not replace it; a link too long or not storable as text
// is dropped, and an event stored without Link has none. Attempt's done
// gets the attempt's Result.
func testInboxObserverLink(t *testing.T, b StoreBackend) {
	var mu sync.Mutex
	links := map[string]string{}               // event id → link given to Attempt
	results := map[string]idempotency.Result{} // event id → Result given to done
	observer := &idempotency.Observer{
		Attempt: func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
			mu.Lock()
			links[rec.EventID] = link
			mu.Unlock()
			return ctx, func(res idempotency.Result) {
				mu.Lock()
				defer mu.Unlock()
				results[res.EventID] = res
			}
		},
	}
	ib := newInboxBench(t, b, idempotency.InboxConfig{Observer: observer}, nil)
	linked, err := ib.inbox.Handler(idempotency.Config{
		Secrets: []string{inboxSecret}, Logger: slog.New(slog.DiscardHandler),
		Observer: &idempotency.Observer{
			Delivery: func(ctx context.Context, r *http.Request) (context.Context, func(idempotency.Result)) {
				return context.WithValue(ctx, linkKey{}, r.Header.Get("Test-Link")), nil
			},
			Link: func(ctx context.Context) string {
				s, _ := ctx.Value(linkKey{}).(string)
				return s
			},
		},
	})
	require.NoError(t, err)
	deliver := func(id, link string, want idempotency.Outcome) {
		t.Helper()
		req := NewSignedRequest("/", inboxEvent(id, "invoice.paid", "in_"+id, 1756742400), inboxSecret)
		req.Header.Set("Test-Link", link)
		rec := httptest.NewRecorder()
		linked.ServeHTTP(rec, req)
		a := answerOf(rec, id)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, want, a.Outcome, "ingest of %s", id)
	}
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	want := map[string]string{
		"evt_ln_1":    traceparent,
		"evt_ln_long": "",
		"evt_ln_nul":  "",
		"evt_ln_none": "", // stored through a Handler without Link
		"evt_ln_max":  strings.Repeat("x", 256),
	}
	deliver("evt_ln_1", traceparent, idempotency.OutcomeQueued)
	deliver("evt_ln_1", "00-other", idempotency.OutcomeDuplicate)
	deliver("evt_ln_long", strings.Repeat("x", 257), idempotency.OutcomeQueued)
	deliver("evt_ln_nul", "00-\x00", idempotency.OutcomeQueued)
	deliver("evt_ln_max", strings.Repeat("x", 256), idempotency.OutcomeQueued)
	ib.deliver(t, "evt_ln_none", "invoice.paid", "in_none", 1756742400, idempotency.OutcomeQueued)

	// Concurrent deliveries, which a store may insert together.
	var wg sync.WaitGroup
	for i := range 20 {
		id := fmt.Sprintf("evt_ln_c%02d", i)
		link := fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e47%02d-00f067aa0ba902b7-01", i)
		want[id] = link
		req := NewSignedRequest("/", inboxEvent(id, "invoice.paid", "in_"+id, 1756742400), inboxSecret)
		req.Header.Set("Test-Link", link)
		wg.Go(func() {
			rec := httptest.NewRecorder()
			linked.ServeHTTP(rec, req)
			if a := answerOf(rec, id); a.Outcome != idempotency.OutcomeQueued {
				t.Errorf("ingest of %s: %d %s", id, a.Status, a.Body)
			}
		})
	}
	wg.Wait()

	ib.work(t, len(want))
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, want, links)
	require.Len(t, results, len(want))
	for id, res := range results {
		require.Equal(t, idempotency.OutcomeProcessed, res.Outcome, id)
		require.Equal(t, idempotency.InboxProcessed, res.State, id)
		require.Equal(t, 1, res.Attempt, id)
	}
}

// testInboxStaleAttemptCannotApplyARedrivenOne: a fenced Run claims the
// event only under exactly its lease, attempt number and AttemptedAt.
// Attempt 1 stalls before its transaction (in Observer.Attempt) past its
// lease, is dead-lettered (MaxAttempts 1) and redriven; the redriven
// attempt, numbered 1 too, is leased and stalls alike. The stale attempt
// then runs: it loses its lease, its handler's writes roll back, and the
// event stays processing under the newer lease (its LeaseUntil that
// lease's end), which applies it.
func testInboxStaleAttemptCannotApplyARedrivenOne(t *testing.T, b StoreBackend) {
	var mu sync.Mutex
	stalls := map[int]chan struct{}{} // by Observer.Attempt call, from 1
	calls := 0
	entered := make(chan int, 4)
	obs := &idempotency.Observer{Attempt: func(ctx context.Context, rec idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
		if rec.State == idempotency.InboxDeadLetter {
			// The lease that dead-letters attempt 1 reports its end: no
			// attempt starts.
			return ctx, func(idempotency.Result) {}
		}
		mu.Lock()
		calls++
		n := calls
		release := make(chan struct{})
		stalls[n] = release
		mu.Unlock()
		entered <- n
		select { // an attempt the test did not expect fails it, not hangs it
		case <-release:
		case <-ctx.Done():
		}
		return ctx, func(idempotency.Result) {}
	}}
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1, Observer: obs}, nil)
	// release lets Observer.Attempt call n return; every call is let go
	// when the test ends, failed or not.
	release := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if c, ok := stalls[n]; ok {
			close(c)
			delete(stalls, n)
		}
	}
	t.Cleanup(func() {
		for n := 1; n <= 4; n++ {
			release(n)
		}
	})
	workDue := func() chan int {
		done := make(chan int, 1)
		go func() {
			n, _ := ib.inbox.WorkDue(context.Background())
			done <- n
		}()
		return done
	}
	ib.deliver(t, "evt_stale_apply", "invoice.paid", "in_stale_apply", 1756742400, idempotency.OutcomeQueued)
	staleDone := workDue()
	require.Equal(t, 1, receive(t, entered, "the Observer of attempt 1"))

	ib.clock.Advance(idempotency.DefaultLease + time.Second)
	ib.work(t, 0)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_stale_apply").State, "its lease expired at the last attempt")
	n, err := ib.inbox.Redrive(ctxT(t), idempotency.RedriveFilter{EventIDs: []string{"evt_stale_apply"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.True(t, ib.record(t, "evt_stale_apply").LeaseUntil.IsZero(), "redriven: pending, no lease")
	newerDone := workDue()
	require.Equal(t, 2, receive(t, entered, "the Observer of the redriven attempt"))
	newer := normalize(ib.record(t, "evt_stale_apply"))
	require.Equal(t, idempotency.InboxProcessing, newer.State)
	require.Equal(t, 1, newer.Attempt, "numbered 1 again")
	require.Equal(t, ib.clock.Now(), newer.AttemptedAt)

	release(1)
	require.Equal(t, 1, receive(t, staleDone, "the WorkDue of the stale attempt"))
	r := normalize(ib.record(t, "evt_stale_apply"))
	require.Equal(t, idempotency.InboxProcessing, r.State, "the stale attempt applied the event under another's lease")
	require.Equal(t, newer.AttemptedAt, r.AttemptedAt)
	require.Equal(t, newer.LeaseUntil, r.LeaseUntil, "the newer lease's end, not cleared by the stale attempt's end")
	require.Equal(t, 0, b.Get(t, "c"), "the stale attempt's writes rolled back")

	release(2)
	require.Equal(t, 1, receive(t, newerDone, "the WorkDue of the redriven attempt"))
	require.Equal(t, idempotency.InboxProcessed, ib.record(t, "evt_stale_apply").State)
	require.Equal(t, 1, b.Get(t, "c"))
	require.Equal(t, []string{"evt_stale_apply"}, ib.appliedOrder())
}
