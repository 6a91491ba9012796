package idempotency_test

import "testing"

// A user's pgx tracer that panics as the lease's batch starts, inside the
// pool's SendBatch, before the batch goes out: the panic is the lease's
// error, it does not go up Run's loop (or WorkDue), and the connection
// the batch was to go out on goes back to the pool, where the pool's
// SendBatch, which acquired it, lost it for good. The event is applied
// once by a later lease.
func TestPgxInboxTracerPanicAtTheLeaseBatchStartGivesTheConnBack(t *testing.T) {
	t.Parallel()
	requireLeasePanicIsItsError(t, true, "evt_lease_batch_panic", "in_lease_batch_panic")
}

// A user's pgx tracer that panics as an attempt's claim batch starts,
// before the batch goes out, fails the attempt with it: recorded failed
// and retried after the backoff, and the connection goes back to the
// pool, where the pool's SendBatch lost it.
func TestPgxInboxTracerPanicAtTheClaimBatchStartGivesTheConnBack(t *testing.T) {
	t.Parallel()
	requireClaimPanicFailsTheAttempt(t, true, "evt_claim_batch_panic", "in_claim_batch_panic")
}
