package idempotency_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxTakeOverReportsTheAttemptItReplaced: a worker stalls before
// its transaction at attempt 1 of 3 of an event or a task, past its
// lease; the next lease takes it over as attempt 2. That attempt reports,
// as it starts, the one it replaced: attempt 1, failed, State failed,
// ErrLeaseExpired, from its start to the take-over; then its own end.
// Nobody reported attempt 1 before: OnResult, the Observer and the log
// never saw an attempt whose worker died, hung or could not record its
// end before the last. The report's Kind is the task's, and its span is
// started with attempt 1's record (its number, start and lease) and
// linked as attempt 1's was. (No test failed when the report of a task's
// attempt had no Kind, its record the take-over's lease, or no link.) When the stalled worker comes back, its end is
// logged and ends its span, and OnResult is not called again. Both
// stores, on a fake clock.
func TestInboxTakeOverReportsTheAttemptItReplaced(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"event", "task"} {
		for name, store := range bothStores(t) {
			t.Run(kind+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				hs := idempotency.NewHandlers()
				task := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
				idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
					if kind == "task" {
						_, err := task.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
						return err
					}
					return nil
				})
				entered, release := make(chan struct{}), make(chan struct{})
				var once sync.Once
				letGo := func() { once.Do(func() { close(release) }) }
				t.Cleanup(letGo)
				var calls atomic.Int32
				var rs, observed misuseResults
				var recsMu sync.Mutex
				var recs []idempotency.InboxRecord // what each attempt's span was started with
				var links []string                 // and linked to
				obs := &idempotency.Observer{Link: func(context.Context) string { return "ingest-span" }, Attempt: func(ctx context.Context, rec idempotency.InboxRecord, link string) (context.Context, func(idempotency.Result)) {
					recsMu.Lock()
					recs, links = append(recs, rec), append(links, link)
					recsMu.Unlock()
					if calls.Add(1) == 1 { // the first attempt stalls before its transaction
						close(entered)
						<-release
					}
					return ctx, observed.add
				}}
				log, buf := testLogger()
				inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
					Now: clock.Now, MaxAttempts: 3, Lease: time.Minute, Timeout: 10 * time.Second, Logger: log,
					OnResult: rs.add, Observer: obs,
				})
				require.NoError(t, err)
				id := "evt_stalled"
				if kind == "task" {
					h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
					require.NoError(t, err)
					require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, invoicePayload(t, id, "in_stalled", "acct_1"), testSecret).Outcome)
					id = task.ID("in_stalled")
				} else {
					h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
					require.NoError(t, err)
					require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, id, "in_stalled", "acct_1"), testSecret).Outcome)
				}

				stalled := make(chan error, 1)
				go func() {
					_, err := inbox.WorkDue(context.Background())
					stalled <- err
				}()
				recv(t, entered, "the first attempt")
				clock.Advance(time.Minute + time.Second)
				n, err := inbox.WorkDue(t.Context()) // takes attempt 1 over: attempt 2
				require.NoError(t, err)
				require.Equal(t, 1, n)

				rs.mu.Lock()
				got := append([]idempotency.Result(nil), rs.all...)
				rs.mu.Unlock()
				require.Len(t, got, 2, "attempt 1, reported by the take-over, then attempt 2: %v", got)
				first := got[0]
				require.Equal(t, id, first.EventID)
				require.Equal(t, 1, first.Attempt)
				require.Equal(t, idempotency.OutcomeFailed, first.Outcome)
				require.Equal(t, idempotency.InboxFailed, first.State, "the event is being retried")
				require.ErrorIs(t, first.Err, idempotency.ErrLeaseExpired)
				require.ErrorContains(t, first.Err, "after attempt 1")
				require.Equal(t, time.Minute+time.Second, first.Duration, "from attempt 1's start to the take-over")
				wantKind := idempotency.InboxKind("") // empty for an event
				if kind == "task" {
					wantKind = idempotency.KindTask
				}
				require.Equal(t, wantKind, first.Kind)
				recsMu.Lock()
				require.Len(t, recs, 3, "attempt 1, the take-over's report of it, attempt 2")
				replaced := recs[1]
				require.Equal(t, links[0], links[1], "linked to the span that stored it, as attempt 1 was")
				recsMu.Unlock()
				require.Equal(t, 1, replaced.Attempt)
				require.Equal(t, recs[0].AttemptedAt, replaced.AttemptedAt)
				require.Equal(t, recs[0].LeaseUntil, replaced.LeaseUntil, "attempt 1's lease, not attempt 2's")
				require.Equal(t, 2, got[1].Attempt)
				require.Equal(t, idempotency.OutcomeProcessed, got[1].Outcome)
				require.Equal(t, idempotency.InboxProcessed, got[1].State)

				letGo()
				require.NoError(t, recv(t, stalled, "the stalled worker"))
				rs.mu.Lock()
				reported := len(rs.all)
				rs.mu.Unlock()
				require.Equal(t, 2, reported, "the stalled worker's end reached OnResult too")
				lines := attemptLogLines(t, buf.String(), 1)
				require.Len(t, lines, 2, "attempt 1's lines: the take-over's report and the stalled worker's end")
				require.Equal(t, "failed", lines[0]["state"])
				require.NotContains(t, lines[1], "state", "the stalled worker's end was not recorded")
				require.Contains(t, lines[1]["error"], "lease lost to a newer attempt")

				observed.mu.Lock()
				defer observed.mu.Unlock()
				require.Len(t, observed.all, 3, "the take-over's report, attempt 2, the stalled worker's end")
				back := observed.all[2]
				require.Equal(t, 1, back.Attempt)
				require.Empty(t, back.State)
				require.ErrorIs(t, back.Err, idempotency.ErrLeaseExpired, "counted by the take-over's report")
			})
		}
	}
}

// TestInboxGivenBackExpiredLeaseReportedOnce: an event whose worker died
// is leased again and given back before its attempt starts (WorkDue's
// context done as it leased, or Run stopped while it held the event
// back), under the lease it lost, then leased again and attempted. The
// attempt the worker died in is reported once, by the attempt that
// finally started, not by each lease. On a fake clock; WorkDue on both
// stores, Run on the memory store.
func TestInboxGivenBackExpiredLeaseReportedOnce(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"WorkDue", "Run"} {
		stores := bothStores(t)
		if by == "Run" {
			stores = map[string]idempotency.Store{"memory": idempotency.NewMemoryStore()}
		}
		for name, store := range stores {
			t.Run(by+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				var cancelAtLease atomic.Pointer[context.CancelFunc]
				now := func() time.Time {
					if f := cancelAtLease.Swap(nil); f != nil {
						(*f)() // WorkDue's context is done as it leases
					}
					return clock.Now()
				}
				var dead atomic.Bool
				slowStarted, releaseSlow := make(chan struct{}), make(chan struct{})
				var releaseOnce sync.Once
				letSlowGo := func() { releaseOnce.Do(func() { close(releaseSlow) }) }
				t.Cleanup(letSlowGo)
				hs := idempotency.NewHandlers()
				idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
					switch ev.ID {
					case "evt_suspect":
						if dead.CompareAndSwap(false, true) {
							runtime.Goexit() // its process died
						}
					case "evt_slow":
						close(slowStarted)
						<-releaseSlow
					}
					return nil
				})
				var rs misuseResults
				in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
					Now: now, Workers: 2, IngestWorkers: 2, MaxAttempts: 3, Lease: time.Minute, Timeout: 10 * time.Second,
					PollInterval: time.Hour, Logger: discardLogger(), OnResult: rs.add,
				})
				require.NoError(t, err)
				deliver := invoiceDeliverer(t, in)
				deliver("evt_suspect")
				workDueDying(t, in) // attempt 1; its lease runs until 12:01
				rs.mu.Lock()
				rs.all = nil // what the dying goroutine's deferred calls reported: a process killed runs none
				rs.mu.Unlock()

				if by == "WorkDue" {
					clock.Advance(time.Minute + time.Second)
					ctx, cancel := context.WithCancel(t.Context())
					cancelAtLease.Store(&cancel)
					n, err := in.WorkDue(ctx)
					require.ErrorIs(t, err, context.Canceled)
					require.Zero(t, n, "leased and given back, not attempted")
				} else {
					clock.Advance(50 * time.Second)
					deliver("evt_slow")
					ctx, cancel := context.WithCancel(t.Context())
					ran := make(chan error, 1)
					go func() { ran <- in.Run(ctx) }()
					recv(t, slowStarted, "evt_slow's attempt")
					clock.Advance(11 * time.Second) // the suspect's lease expired
					deliver("evt_other")            // wakes Run, which leases the suspect alone and holds it back
					require.Eventually(t, func() bool {
						rec, _, err := in.Lookup(t.Context(), "evt_suspect")
						return err == nil && rec.Attempt == 2 && idempotency.InboxIdle(in)
					}, 10*time.Second, time.Millisecond, "Run holds the suspect back")
					cancel()
					letSlowGo()
					require.NoError(t, recv(t, ran, "Run's end"))
				}
				rec, _, err := in.Lookup(t.Context(), "evt_suspect")
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxProcessing, rec.State, "given back under the lease it lost")
				require.Equal(t, 1, rec.Attempt)
				rs.mu.Lock()
				for _, r := range rs.all {
					require.NotEqual(t, "evt_suspect", r.EventID, "reported before an attempt started: %v", r)
				}
				rs.mu.Unlock()

				_, err = in.WorkDue(t.Context())
				require.NoError(t, err)
				rs.mu.Lock()
				var got []idempotency.Result
				for _, r := range rs.all {
					if r.EventID == "evt_suspect" {
						got = append(got, idempotency.Result{Attempt: r.Attempt, Outcome: r.Outcome, State: r.State})
					}
				}
				rs.mu.Unlock()
				require.Equal(t, []idempotency.Result{
					{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed}, // the dead worker's, reported once
					{Attempt: 2, Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed},
				}, got)
			})
		}
	}
}

// TestInboxTakeOverDurationEndsAtTheLease: the attempt that takes an
// expired attempt over reports it with a Duration from that attempt's
// start to the lease that found it expired, not to the take-over's own
// start, which Run may hold back, leased, for a while after the lease.
// Both stores, on a fake clock.
func TestInboxTakeOverDurationEndsAtTheLease(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
			var rs misuseResults
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, MaxAttempts: 3, Lease: time.Minute, Timeout: 10 * time.Second,
				Logger: discardLogger(), OnResult: rs.add,
			})
			require.NoError(t, err)
			h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_held_back", "in_held_back", "acct_1"), testSecret).Outcome)

			hung, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // attempt 1, never ended
			require.NoError(t, err)
			require.Len(t, hung, 1)
			clock.Advance(time.Minute + time.Second)
			over, err := idempotency.LeaseInbox(t.Context(), inbox, 1) // finds it expired
			require.NoError(t, err)
			require.Len(t, over, 1)
			require.Equal(t, 2, over[0].Attempt())
			clock.Advance(20 * time.Second) // held back before it starts
			idempotency.ApplyLeased(t.Context(), inbox, over[0])

			rs.mu.Lock()
			defer rs.mu.Unlock()
			require.Len(t, rs.all, 2, "attempt 1, reported by the take-over, then attempt 2")
			first := rs.all[0]
			require.Equal(t, 1, first.Attempt)
			require.ErrorIs(t, first.Err, idempotency.ErrLeaseExpired)
			require.Equal(t, time.Minute+time.Second, first.Duration, "from attempt 1's start to the lease that found it expired")
		})
	}
}
