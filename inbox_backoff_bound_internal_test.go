package idempotency

import (
	"math"
	"testing"
	"time"
)

// nanoseconds of 2⁶³, the float64 that math.MaxInt64 rounds to and the
// first past the longest Duration, is the longest Duration: converted as
// it is, it would wrap to the most negative one, a backoff that retries at
// once. (No test failed when the bound was made exclusive: DefaultBackoff
// hits it only by chance.)
func TestNanosecondsAtTheBoundIsTheLongestDuration(t *testing.T) {
	if got := nanoseconds(float64(math.MaxInt64)); got != math.MaxInt64 {
		t.Fatalf("nanoseconds(2⁶³) = %d, want %d", got, time.Duration(math.MaxInt64))
	}
}
