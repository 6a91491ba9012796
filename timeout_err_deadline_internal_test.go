package idempotency

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// deadlinePassed is a context whose deadline has passed but whose timer
// has not fired yet: Err is still nil. A PgxStore's inbox insert runs on
// a context of its own with the delivery's deadline; when its timer fires
// first, the insert fails with context.DeadlineExceeded while the
// delivery's context still reads as alive.
type deadlinePassed struct{ context.Context }

func (deadlinePassed) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (deadlinePassed) Err() error                  { return nil }

// TestTimeoutErrOnceTheDeadlinePassed: an error met once ctx's deadline
// passed is a timeout, wrapped in ErrTimeout, even before ctx's own timer
// fired. timeoutErr asked only ctx.Err, and so TestInboxHandlerTimeoutIsErrTimeout
// failed about once in 15 runs with "idempotency: inbox enqueue: timeout:
// context deadline exceeded", no ErrTimeout. A cancelled context is still
// no timeout.
func TestTimeoutErrOnceTheDeadlinePassed(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("inbox enqueue: %w", context.DeadlineExceeded)
	err := timeoutErr(deadlinePassed{context.Background()}, time.Second, "storing the event in the inbox", "Config.Timeout", cause)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeoutErr = %v; want it to wrap ErrTimeout and the cause", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	cancel()
	if err := timeoutErr(ctx, time.Hour, "the handler's transaction", "Config.Timeout", context.Canceled); errors.Is(err, ErrTimeout) {
		t.Fatalf("a cancelled context: timeoutErr = %v; want no ErrTimeout", err)
	}
	if err := timeoutErr(context.Background(), time.Hour, "the handler's transaction", "Config.Timeout", nil); err != nil {
		t.Fatalf("no error: timeoutErr = %v", err)
	}
}
