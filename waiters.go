package idempotency

import "github.com/seed-a84bb619/idempotency/internal/waiters"

func init() { waiters.Of = storeWaiters }

// storeWaiters is [waiters.Of]: the test kit's view of the runs that wait
// in a MemoryStore or a PgxStore.
func storeWaiters(store any) (int, any, bool) {
	switch s := store.(type) {
	case *MemoryStore:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.waiting, nil, true
	case *PgxStore:
		n := 0
		if s.local != nil {
			n = s.local.waiters()
		}
		return n, s.db, true
	}
	return 0, nil, false
}
