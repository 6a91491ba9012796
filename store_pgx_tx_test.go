package idempotency

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Once the handler has returned (its transaction sealed, before the
// commit, which may begin the next event's transaction on the same
// connection), every statement a Tx method would send is refused with
// ErrTxDone: a goroutine the handler left running cannot write into the
// next event's transaction. The transaction and the store are nil here:
// a method that did not refuse would fail on them.
func TestPgxTxRefusesStatementsOnceSealed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ptx := &pgxTx{txState: txState{claim: Claim{EventID: "evt_sealed", EventType: "invoice.paid"}}}
	// The handler returns: from then on its transaction is sealed.
	require.NoError(t, ptx.runHandler(ctx, func(context.Context, Tx) error { return nil }, ptx))
	_, err := ptx.Guard(ctx, "invoice", "in_1")
	require.ErrorIs(t, err, ErrTxDone, "Guard")
	_, err = ptx.enqueueTask(ctx, &inboxRow{InboxRecord: InboxRecord{EventID: "task:late:k1", EventType: "late"}})
	require.ErrorIs(t, err, ErrTxDone, "a task's Enqueue")
	_, _, err = ptx.lockObject(ctx, "subscription", "sub_1")
	require.ErrorIs(t, err, ErrTxDone, "OnCurrent's lock")
	require.ErrorIs(t, ptx.markFetched(ctx, "subscription", "sub_1", 1), ErrTxDone, "OnCurrent's fetch mark")
	_, err = ptx.order(ctx, "subscription", "sub_1", time.Now())
	require.ErrorIs(t, err, ErrTxDone, "CheckOrder")
}
