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
// attempt's lease end, as for a worker that died).
//
// An inbox that does not read clock (InboxConfig.Now left to the real
// time, or another Clock's) ends the call with an error that says so:
// once a call of WorkDue makes attempts whose newest (Inbox.Stats'
// LastAttempt) started at another time than clock's during the call (a
// millisecond either way), or, where that time came too close to tell,
// once an event or a task is due on clock, held back by nothing
// (Inbox.HeldBy), and two calls of WorkDue in a row leave it unattempted.
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
	st, err := inbox.Stats(ctx)
	if err != nil {
		return 0, err
	}
	last := st.LastAttempt
	// work calls inbox.WorkDue and checks that the newest attempt it made
	// started at clock's time: an inbox on another clock dates its
	// attempts by that one.
	work := func() (int, error) {
		before := clock.Now()
		n, err := inbox.WorkDue(ctx)
		if err != nil || n == 0 {
			return n, err
		}
		st, err := inbox.Stats(ctx)
		if err != nil {
			return n, err
		}
		at := st.LastAttempt
		if !at.Equal(last) && (at.Before(before.Add(-clockSlack)) || at.After(clock.Now().Add(clockSlack))) {
			return n, fmt.Errorf("idempotencytest: Drain: inbox.WorkDue made an attempt that started at %s, with clock at %s: the inbox does not read clock (set InboxConfig.Now to clock.Now)",
				at.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano))
		}
		last = at
		return n, nil
	}
	for still := 0; ; {
		n, err := work()
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
		next, stuck, err := scan(ctx, inbox, clock.Now())
		if err != nil {
			return attempts, err
		}
		if stuck.EventID != "" {
			// One stored or released since that call is due now: a call
			// of WorkDue on the inbox's clock attempts it.
			n, err := work()
			attempts += n
			if err != nil {
				return attempts, err
			}
			if n > 0 {
				continue
			}
			again, ok, err := inbox.Lookup(ctx, stuck.EventID)
			if err != nil {
				return attempts, err
			}
			if ok && again.State == stuck.State && again.Attempt == stuck.Attempt && !again.NextAttemptAt.After(clock.Now()) {
				return attempts, fmt.Errorf("idempotencytest: Drain: %s %s is due at %s on clock and held back by nothing, and inbox.WorkDue did not attempt it: the inbox does not read clock (set InboxConfig.Now to clock.Now)",
					stuck.Kind, stuck.EventID, again.NextAttemptAt.Format(time.RFC3339Nano))
			}
		}
		if next.IsZero() || next.After(until) {
			return attempts, nil
		}
		clock.Set(next)
		still = 0
	}
}

// clockSlack is how far from clock's time during a call of WorkDue the
// newest attempt it made may have started: PostgreSQL keeps microseconds.
const clockSlack = time.Millisecond

// drainStillCalls is how many calls of WorkDue in a row that made attempts
// Drain makes without moving the clock before it gives up.
const drainStillCalls = 100

// scan reads what inbox still has to apply, at now. next is the earliest
// time after now at which one comes due (a pending or failed one's next
// attempt, a processing one's lease end), zero when none does. stuck is
// one due at now (pending or failed, its NextAttemptAt not after now) and
// held back by nothing, which a call of WorkDue on the inbox's clock would
// have attempted; the zero record when there is none. Of an object's
// events only the first still to be applied, in the order they are
// applied (Created, then EventID), can be held by nothing, and only while
// no event of the object is processing: HeldBy is asked of that one alone.
func scan(ctx context.Context, inbox *idempotency.Inbox, now time.Time) (next time.Time, stuck idempotency.InboxRecord, err error) {
	type object struct{ id, account string }
	first := map[object]idempotency.InboxRecord{}
	busy := map[object]bool{}
	f := idempotency.InboxFilter{
		States: []idempotency.InboxState{idempotency.InboxPending, idempotency.InboxFailed, idempotency.InboxProcessing},
		Limit:  idempotency.MaxListLimit,
	}
	for {
		page, err := inbox.List(ctx, f)
		if err != nil {
			return time.Time{}, idempotency.InboxRecord{}, err
		}
		for _, r := range page {
			due := r.NextAttemptAt
			if r.State == idempotency.InboxProcessing {
				due = r.LeaseUntil
			}
			if due.After(now) && (next.IsZero() || due.Before(next)) {
				next = due
			}
			if r.Kind == idempotency.KindTask || r.ObjectID == "" {
				if stuck.EventID == "" && r.State != idempotency.InboxProcessing && !due.After(now) {
					stuck = r
				}
				continue
			}
			o := object{r.ObjectID, r.Account}
			if r.State == idempotency.InboxProcessing {
				busy[o] = true
			}
			if cur, ok := first[o]; !ok || r.Created.Before(cur.Created) || r.Created.Equal(cur.Created) && r.EventID < cur.EventID {
				first[o] = r
			}
		}
		if len(page) < f.Limit {
			break
		}
		f.After = page[len(page)-1].Position()
	}
	if stuck.EventID != "" {
		return next, stuck, nil
	}
	for o, r := range first {
		if busy[o] || r.State == idempotency.InboxProcessing || r.NextAttemptAt.After(now) {
			continue
		}
		holders, err := inbox.HeldBy(ctx, r.EventID)
		if err != nil {
			return time.Time{}, idempotency.InboxRecord{}, err
		}
		if len(holders) == 0 {
			return next, r, nil
		}
	}
	return next, idempotency.InboxRecord{}, nil
}
