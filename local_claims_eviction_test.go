package idempotency

import (
	"fmt"
	"testing"
	"time"
)

// Past its capacity, recentIDs forgets the oldest id, round after round:
// what it remembers is always the newest capacity ids. (No test failed
// when the ring's next slot never moved: the third id replaced the first,
// and every later one replaced the newest instead of the oldest.)
func TestRecentIDsForgetTheOldestRoundAfterRound(t *testing.T) {
	t.Parallel()
	const capacity = 3
	r := newRecentIDs(capacity, time.Hour)
	for n := 0; n < 4*capacity; n++ {
		r.add(fmt.Sprint("evt_", n))
		for i := 0; i <= n; i++ {
			if want, got := i > n-capacity, r.has(fmt.Sprint("evt_", i)); got != want {
				t.Fatalf("after adding evt_0 to evt_%d: evt_%d remembered %v, want %v", n, i, got, want)
			}
		}
	}
	if len(r.set) != capacity {
		t.Fatalf("%d ids held, want %d", len(r.set), capacity)
	}
}
