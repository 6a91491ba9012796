package idempotencytest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed-a84bb619/idempotency"
)

// Drain works inbox until nothing in it is left to apply, without
// sleeping: it calls inbox.WorkDue, then sets clock to the earliest time
// an event or a task still to be applied comes due (a failed attempt's
// backoff, a snooze's end, a lease left by a worker that died), and calls
// WorkDue again, until every event and task is final (processed, skipped,
// dead-lettered, ignored) or the next of them would come due after
// clock's time at the call plus within. It returns the attempts made.
//
// clock must be the inbox's clock (InboxConfig.Now set to clock.Now). With
// the default MaxAttempts and Backoff an event that fails every attempt
// is dead-lettered within 7.2 days of its first: a within of 8 days
// (8 * 24 * time.Hour) takes every such event there in one call, and a
// shorter one stops where it stands, for the test to check the states
// between (Inbox.Lookup, Inbox.Stats). It also returns when the events
// left wait for nothing the clock can reach: an event held back behind
// an attempt in flight on another Inbox (clock set first to that
// attempt's lease end, as for a worker that died), or an inbox whose
// clock is not this one.
//
// A task that snoozes for no time (Snooze(0)) is run once per WorkDue
// call, so Drain calls WorkDue again while it makes attempts, up to 100
// calls in a row without moving the clock; one that does so at every run
// ends the call with an error. A nil inbox or clock, or a within that is
// not positive, is refused with an error and no attempt; WorkDue's own
// error ends the call with it (as when Run runs on the inbox).
func Drain(ctx context.Context, inbox *idempotency.Inbox, clock *Clock, within time.Duration) (attempts int, err error) {
	switch {
	case inbox == nil:
		return 0, errors.New("idempotencytest: Drain: nil inbox")
	case clock == nil:
		return 0, errors.New("idempotencytest: Drain: nil clock")
	case within <= 0:
		return 0, errors.New("idempotencytest: Drain: within must be positive: it bounds how far the clock moves")
	}
	until := clock.Now().Add(within)
	for still := 0; ; {
		n, err := inbox.WorkDue(ctx)
		attempts += n
		if err != nil {
			return attempts, err
		}
		if n > 0 {
			// WorkDue runs a task that snoozes for no time once per
			// call: it may be due again at once.
			if still++; still > drainStillCalls {
				return attempts, fmt.Errorf("idempotencytest: Drain: still attempting after %d calls of WorkDue without the clock moving: a task that snoozes for no time (Snooze(0)) at every run?", drainStillCalls)
			}
			continue
		}
		next, err := nextDue(ctx, inbox, clock.Now())
		if err != nil || next.IsZero() || next.After(until) {
			return attempts, err
		}
		clock.Set(next)
		still = 0
	}
}

// drainStillCalls is how many calls of WorkDue in a row that made attempts
// Drain makes without moving the clock before it gives up.
const drainStillCalls = 100

// nextDue returns the earliest time after now at which an event or a task
// of inbox still to be applied comes due: a pending or failed one's next
// attempt, a processing one's lease end; zero when none does.
func nextDue(ctx context.Context, inbox *idempotency.Inbox, now time.Time) (time.Time, error) {
	f := idempotency.InboxFilter{
		States: []idempotency.InboxState{idempotency.InboxPending, idempotency.InboxFailed, idempotency.InboxProcessing},
		Limit:  idempotency.MaxListLimit,
	}
	var next time.Time
	for {
		page, err := inbox.List(ctx, f)
		if err != nil {
			return time.Time{}, err
		}
		for _, r := range page {
			due := r.NextAttemptAt
			if r.State == idempotency.InboxProcessing {
				due = r.LeaseUntil
			}
			if due.After(now) && (next.IsZero() || due.Before(next)) {
				next = due
			}
		}
		if len(page) < f.Limit {
			return next, nil
		}
		f.After = page[len(page)-1].Position()
	}
}
