package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestAfterCommitAfterTheHandlerReturnedIsDropped: a func registered with
// tx.AfterCommit once the handler has returned (by a goroutine it left
// behind) never runs, whenever it comes: a Tx is valid only until the
// handler returns, and its other methods fail with ErrTxDone from then
// on. It ran when it came before the transaction ended, here while a
// deferred trigger holds the COMMIT, and was dropped when it came after:
// a race no test of the handler's could pin down.
func TestAfterCommitAfterTheHandlerReturnedIsDropped(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	gate := newTriggerGate(t, b.db, "INSERT", "counters", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")
	left := make(chan idempotency.Tx, 1)
	type answer struct {
		outcome idempotency.Outcome
		err     error
	}
	done := make(chan answer, 1)
	go func() {
		outcome, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_late_after_commit", EventType: "invoice.paid"},
			func(ctx context.Context, tx idempotency.Tx) error {
				left <- tx // kept past its return, as by a goroutine it starts
				return b.add(ctx, tx, "late_after_commit", 1)
			})
		done <- answer{outcome, err}
	}()
	tx := recv(t, left, "the handler's Tx")
	require.Eventually(t, func() bool { return b.waiting(t) == 1 }, 10*time.Second, time.Millisecond, "the COMMIT waits at the gate")

	ran := false
	tx.AfterCommit(func(context.Context) { ran = true })
	gate.open(t)
	a := recv(t, done, "Run")
	require.NoError(t, a.err)
	require.Equal(t, idempotency.OutcomeProcessed, a.outcome)
	require.Equal(t, 1, b.get(t, "late_after_commit"))
	require.False(t, ran, "registered after the handler returned")
}
