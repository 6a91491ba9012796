package idempotencytest

import (
	"sync"
	"time"
)

// Clock is a fake clock for idempotency.InboxConfig.Now (and, for a
// synchronous Handler whose tasks the inbox runs, Config.Now): it stands
// still until the test advances it, so that a test reaches an inbox retry
// or a lease expiry without sleeping. It is safe for concurrent use.
//
// The inbox's default backoff varies by ±10%: set the clock to an event's
// InboxRecord.NextAttemptAt (Clock.Set), or advance it past the longest
// wait, not by the backoff's nominal figure, which reaches the retry in
// about half the runs.
//
// The zero Clock (var c Clock, &Clock{}) starts at the real time of its
// first use, a Now or an Advance, and stands still from there, as
// NewClock(time.Now()) would: what a Handler or an inbox on it stores is
// dated near the events' created times and the real time the signature
// is checked against and Prune's default clock reads, not in the year 1.
// Give NewClock a fixed start for times a test compares exactly.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	started bool // now is set: by NewClock, Set or the first use
}

// NewClock returns a Clock that reads start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, started: true}
}

// start sets a zero Clock to the real time; c.mu is held.
func (c *Clock) start() {
	if !c.started {
		c.now, c.started = time.Now(), true
	}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start()
	return c.now
}

// Advance moves the clock by d: forward, or back when d is negative (as
// the conformance suite does to make rows due in a chosen order).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.start()
	c.now = c.now.Add(d)
}

// Set moves the clock to t, forward or back: to an event's
// InboxRecord.NextAttemptAt, for the inbox's next WorkDue to reach its
// retry.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.started = t, true
}
