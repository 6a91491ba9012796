package idempotency

// MemoryWaiting returns how many transactions wait for a key held by
// another transaction, for the conformance suite.
func MemoryWaiting(s *MemoryStore) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}
