package idempotency

import (
	"context"
	"sync"
	"time"
)

// ExpireInboxAttempts has the handler transactions in's workers begin
// from now on run out when the test calls expire, as when
// InboxConfig.Timeout passes: their context's Err is
// context.DeadlineExceeded, and the attempt fails with ErrTimeout. Each
// is still bounded by the Timeout. Call it before the attempts start
// (before Run, ApplyLeased or WorkDue): a test reaches an attempt's
// timeout when it chooses, not after waiting it out.
func ExpireInboxAttempts(in *Inbox) (expire func()) { return expirable(&in.d) }

// expirable sets d's withTimeout to give expiringCtx contexts, and
// returns the func that ends those not ended yet.
func expirable(d *dispatcher) (expire func()) {
	var mu sync.Mutex
	live := map[*expiringCtx]bool{}
	d.withTimeout = func(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
		c := &expiringCtx{Context: parent, deadline: time.Now().Add(timeout), done: make(chan struct{})}
		if deadline, ok := parent.Deadline(); ok && deadline.Before(c.deadline) {
			c.deadline = deadline
		}
		if err := parent.Err(); err != nil { // ended at once, as context.WithTimeout's
			c.end(err)
		}
		stopParent := context.AfterFunc(parent, func() { c.end(parent.Err()) })
		timer := time.AfterFunc(timeout, func() { c.end(context.DeadlineExceeded) })
		mu.Lock()
		live[c] = true
		mu.Unlock()
		return c, func() {
			stopParent()
			timer.Stop()
			c.end(context.Canceled)
			mu.Lock()
			delete(live, c)
			mu.Unlock()
		}
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		for c := range live {
			c.end(context.DeadlineExceeded)
		}
	}
}

// expiringCtx is a context with a deadline that ends, with
// context.DeadlineExceeded, at the deadline or when the test says, or
// with its parent or its cancel.
type expiringCtx struct {
	context.Context // the parent, for Value
	deadline        time.Time
	done            chan struct{}

	mu  sync.Mutex
	err error
}

func (c *expiringCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }

func (c *expiringCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end ends c with err, unless it has ended.
func (c *expiringCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.done)
	}
}
