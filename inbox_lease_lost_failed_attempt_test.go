package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxLeaseLostAfterFailedAttempt: a worker's handler fails (returns
// an error, panics, or runs out of its Timeout) past the worker's lease,
// and between its rollback and the recording of its failure another
// process takes the expired lease over as attempt 2, and is applying the
// event or has applied it. The stale worker's failure (failed with a
// backoff, or dead_letter when attempt 1 was the last its process
// allows) must not overwrite the newer attempt's row, and its end is
// reported, to the Observer's done and in its log line, as an attempt
// whose lease was lost: failed, no state, Err wrapping ErrLeaseLost and
// the handler's error, and ErrLeaseExpired: attempt 2 reports attempt 1
// to OnResult as it starts, once, and the stale worker's end does not
// reach OnResult again. The other process counts 3 attempts (a deploy),
// so that attempt 1 can be the stale worker's last. Both stores, on a
// fake clock, one OnResult for both processes.
func TestInboxLeaseLostAfterFailedAttempt(t *testing.T) {
	t.Parallel()
	for _, fail := range []string{"error", "panic", "timeout"} {
		for _, c := range []struct {
			name        string
			maxAttempts int  // the stale worker's process's
			applied     bool // the newer attempt has applied the event by then
		}{
			{"retry/applying", 3, false},
			{"retry/applied", 3, true},
			{"last/applying", 1, false},
			{"last/applied", 1, true},
		} {
			for name, store := range bothStores(t) {
				t.Run(fail+"/"+c.name+"/"+name, func(t *testing.T) {
					t.Parallel()
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					// The take-over, once armed, runs at the next reading of
					// the stale worker's clock: after its rollback, before
					// it records its failure.
					clock := newArmedClock()
					var calls, applied atomic.Int32
					var newer *idempotency.Inbox
					var taken []idempotency.InboxLeased
					var expire func() // ends the stale worker's attempt, as its Timeout would
					hs := idempotency.NewHandlers()
					idempotency.On(hs, "invoice.paid", func(attemptCtx context.Context, _ idempotency.Tx, _ idempotency.Event[*stripe.Invoice]) error {
						if calls.Add(1) > 1 {
							applied.Add(1) // the newer attempt
							return nil
						}
						clock.Advance(time.Minute) // the stale worker's lease expires
						f := func() {
							var err error
							taken, err = idempotency.LeaseInbox(ctx, newer, 1)
							require.NoError(t, err)
							require.Len(t, taken, 1, "attempt 2 takes the expired lease over")
							require.Equal(t, 2, taken[0].Attempt())
							if c.applied {
								idempotency.ApplyLeased(ctx, newer, taken[0])
							}
						}
						clock.arm(f)
						switch fail {
						case "panic":
							panic("the downstream refused")
						case "timeout":
							expire()
							<-attemptCtx.Done()
							return attemptCtx.Err()
						}
						return errors.New("the downstream refused")
					})
					log, buf := testLogger()
					var rs, observed misuseResults
					// The stale worker's claim and decode must beat its
					// Timeout for the handler to reach its failure, and
					// its settle and look-up run under it (5 s at most):
					// 10 s, room for them on a busy machine (2 s could
					// run out before the handler was reached). The timeout
					// case ends its attempt once the handler is reached,
					// as the Timeout would, rather than wait it out.
					stale, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
						Now: clock.Now, MaxAttempts: c.maxAttempts, Lease: time.Minute, Timeout: 10 * time.Second,
						Logger: log, OnResult: rs.add,
						Observer: &idempotency.Observer{Attempt: func(ctx context.Context, _ idempotency.InboxRecord, _ string) (context.Context, func(idempotency.Result)) {
							return ctx, observed.add
						}},
					})
					require.NoError(t, err)
					expire = idempotency.ExpireInboxAttempts(stale)
					newer, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{
						Now: clock.Now, MaxAttempts: 3, Lease: time.Minute, Timeout: 10 * time.Second, Logger: discardLogger(), OnResult: rs.add,
					})
					require.NoError(t, err)
					h, err := stale.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
					require.NoError(t, err)
					require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoicePayload(t, "evt_stale", "in_stale", "acct_1"), testSecret).Outcome)

					// Leased through newer: the leased row is the same
					// whichever inbox of the store took it; stale applies
					// it.
					leased, err := idempotency.LeaseInbox(ctx, newer, 1)
					require.NoError(t, err)
					require.Len(t, leased, 1)
					idempotency.ApplyLeased(ctx, stale, leased[0])
					require.False(t, clock.armed(), "the stale worker recorded nothing before the take-over")
					require.Len(t, taken, 1)

					rec, _, err := stale.Lookup(ctx, "evt_stale")
					require.NoError(t, err)
					want := idempotency.InboxProcessing
					if c.applied {
						want = idempotency.InboxProcessed
					}
					require.Equal(t, want, rec.State, "the stale worker's failure overwrote attempt 2's row")
					require.Equal(t, 2, rec.Attempt)
					if c.applied {
						require.Empty(t, rec.LastError)
					} else { // why attempt 2 runs, not the stale worker's error
						require.Equal(t, "lease expired after attempt 1: its worker died, hung or lost its connection, or the clocks of the replicas disagree", rec.LastError)
					}
					require.True(t, rec.NextAttemptAt.IsZero(), "no backoff recorded: %s", rec.NextAttemptAt)

					reported := func() []idempotency.Result {
						rs.mu.Lock()
						defer rs.mu.Unlock()
						got := make([]idempotency.Result, len(rs.all))
						for i, r := range rs.all {
							got[i] = idempotency.Result{Attempt: r.Attempt, Outcome: r.Outcome, State: r.State}
						}
						return got
					}
					byTakeOver := []idempotency.Result{
						{Attempt: 1, Outcome: idempotency.OutcomeFailed, State: idempotency.InboxFailed},
						{Attempt: 2, Outcome: idempotency.OutcomeProcessed, State: idempotency.InboxProcessed},
					}
					if c.applied {
						require.Equal(t, byTakeOver, reported(), "attempt 2 reported attempt 1 as it started; the stale worker's end not again")
					} else {
						require.Empty(t, reported(), "attempt 2, leased, has not started: it reports attempt 1 then")
					}
					observed.mu.Lock()
					require.Len(t, observed.all, 1, "the stale attempt's end")
					res := observed.all[0]
					observed.mu.Unlock()
					require.Equal(t, 1, res.Attempt)
					require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
					require.Empty(t, res.State, "its end was not recorded")
					require.ErrorIs(t, res.Err, idempotency.ErrLeaseLost)
					require.ErrorIs(t, res.Err, idempotency.ErrLeaseExpired, "attempt 2 reports it")
					switch fail {
					case "panic":
						var p *idempotency.PanicError
						require.ErrorAs(t, res.Err, &p)
					case "timeout":
						require.ErrorIs(t, res.Err, idempotency.ErrTimeout)
					default:
						require.ErrorContains(t, res.Err, "the downstream refused")
					}
					line := attemptLogLine(t, buf.String(), 1)
					require.Contains(t, line["error"], "lease lost to a newer attempt")
					require.NotContains(t, line, "state", "the log line says no state was recorded")

					if !c.applied {
						idempotency.ApplyLeased(ctx, newer, taken[0])
					}
					require.Equal(t, byTakeOver, reported(), "each attempt reported once")
					rec, _, err = stale.Lookup(ctx, "evt_stale")
					require.NoError(t, err)
					require.Equal(t, idempotency.InboxProcessed, rec.State)
					require.Equal(t, 2, rec.Attempt)
					require.Equal(t, int32(1), applied.Load(), "applied once, by attempt 2")
				})
			}
		}
	}
}

// attemptLogLine returns the log record of the inbox attempt numbered
// attempt in logs, JSON lines; it fails unless there is exactly one.
func attemptLogLine(t *testing.T, logs string, attempt int) map[string]any {
	t.Helper()
	found := attemptLogLines(t, logs, attempt)
	require.Len(t, found, 1, "attempt %d's log lines in:\n%s", attempt, logs)
	return found[0]
}

// attemptLogLines returns the log records of the inbox attempts (at an
// event or a task) numbered attempt in logs, JSON lines, in order.
func attemptLogLines(t *testing.T, logs string, attempt int) []map[string]any {
	t.Helper()
	var found []map[string]any
	for l := range strings.SplitSeq(logs, "\n") {
		var rec map[string]any
		if l == "" || json.Unmarshal([]byte(l), &rec) != nil {
			continue
		}
		if (rec["msg"] == "stripe webhook: inbox attempt" || rec["msg"] == "idempotency task: attempt") && rec["attempt"] == float64(attempt) {
			found = append(found, rec)
		}
	}
	return found
}

// armedClock is an idempotencytest.Clock whose Now, at its next reading
// once a func is armed, runs that func before it answers, once: a test
// steps in where an attempt reads the clock (after its rollback, before
// it records its failure).
type armedClock struct {
	*idempotencytest.Clock
	next atomic.Pointer[func()]
}

func newArmedClock() *armedClock {
	return &armedClock{Clock: idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
}

func (c *armedClock) Now() time.Time {
	if f := c.next.Swap(nil); f != nil {
		(*f)()
	}
	return c.Clock.Now()
}

// arm has f run at the next reading of the clock.
func (c *armedClock) arm(f func()) { c.next.Store(&f) }

// armed reports that the func armed has not run yet.
func (c *armedClock) armed() bool { return c.next.Load() != nil }
