package idempotency

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAfterCommitOnceTheHandlerReturnedIsDroppedOnAMemoryStore: a func
// registered with a MemoryStore Tx's AfterCommit after the handler
// returned and before the transaction ends (a goroutine the handler left
// behind, woken by its cancelled context) never runs at the commit, as on
// a PgxStore (TestAfterCommitAfterTheHandlerReturnedIsDropped holds its
// COMMIT in that window). A MemoryStore's commit leaves no window a test
// of its Run can hold open, so its Tx is driven here step by step.
func TestAfterCommitOnceTheHandlerReturnedIsDroppedOnAMemoryStore(t *testing.T) {
	t.Parallel()
	tx := &memoryTx{txState: txState{claim: Claim{EventID: "evt_late_after_commit"}}, s: NewMemoryStore(), ended: make(chan struct{})}
	var before, late bool
	require.NoError(t, tx.runHandler(t.Context(), func(_ context.Context, tx Tx) error {
		tx.AfterCommit(func(context.Context) { before = true })
		return nil
	}, tx))
	tx.AfterCommit(func(context.Context) { late = true })
	tx.end(t.Context(), true)
	require.True(t, before, "registered while the handler ran")
	require.False(t, late, "registered after the handler returned")
}
