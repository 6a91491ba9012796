package idempotency

// MemoryWaiting returns how many transactions wait for a key held by
// another transaction, for the conformance suite.
func MemoryWaiting(s *MemoryStore) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

// PgxLocalWaiting returns how many runs wait in the process for another run
// of the same event.
func PgxLocalWaiting(s *PgxStore) int {
	if s.local == nil {
		return 0
	}
	return s.local.waiters()
}
