package idempotencytest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxDeadLetterCopyIsDuplicate: a copy of a dead-lettered event
// (Stripe retrying it, or a replay) is a duplicate: the inbox keeps the
// dead letter, its attempts and its error; only Redrive moves it back.
func testInboxDeadLetterCopyIsDuplicate(t *testing.T, b StoreBackend) {
	ib := newInboxBench(t, b, idempotency.InboxConfig{MaxAttempts: 1}, func(string, int) error { return errDownstream })
	ib.deliver(t, "evt_dl_copy", "invoice.paid", "in_dl_copy", 1756742400, idempotency.OutcomeQueued)
	ib.work(t, 1)
	require.Equal(t, idempotency.InboxDeadLetter, ib.record(t, "evt_dl_copy").State)
	ib.deliver(t, "evt_dl_copy", "invoice.paid", "in_dl_copy", 1756742400, idempotency.OutcomeDuplicate)
	r := ib.record(t, "evt_dl_copy")
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 1, r.Attempt)
	require.Contains(t, r.LastError, errDownstream.Error())
	ib.work(t, 0)
}
