package idempotencytest

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testAfterCommitHookPanics: a Claim.OnAfterCommitPanic that panics in
// turn, given an AfterCommit func's panic, sends its panic up to Run's
// caller, after the commit, which stands; the keys the transaction held
// are released all the same: a copy of the event and another event's
// Guard of its key, which waited for the transaction, end (duplicate, and
// the key claimed) rather than wait for good.
func testAfterCommitHookPanics(t *testing.T, b StoreBackend) {
	ctx := ctxT(t)
	const scope, key = "invoice", "in_hook_panics"
	held := make(chan struct{})
	releaseHolder, release := releaser(t)
	holder := make(chan any, 1)
	go func() {
		c := claim("evt_hook_panics")
		c.OnAfterCommitPanic = func(*idempotency.PanicError) { panic("hook down") }
		defer func() { holder <- recover() }()
		_, _ = b.Store.Run(ctx, c, func(ctx context.Context, tx idempotency.Tx) error {
			if _, err := tx.Guard(ctx, scope, key); err != nil {
				return err
			}
			// Last: a store without a database applies Add in an
			// AfterCommit func, which the hook's panic would stop.
			if err := b.Add(ctx, tx, "c", 1); err != nil {
				return err
			}
			tx.AfterCommit(func(context.Context) { panic("mailer down") })
			close(held)
			<-release
			return nil
		})
	}()
	receive(t, held, "the holder's Guard")

	var ran atomic.Int32
	copies := startWaiters(t, b, "evt_hook_panics", 1, &ran)
	guard := make(chan ranResult, 1)
	go func() {
		out, err := b.Store.Run(ctx, claim("evt_hook_panics_guard"), func(ctx context.Context, tx idempotency.Tx) error {
			first, err := tx.Guard(ctx, scope, key)
			if err == nil && first {
				err = errors.New("the guard claimed again")
			}
			return err
		})
		guard <- ranResult{out, err}
	}()
	waitingReaches(t, b, 2, 10*time.Second, "the copy and the Guard should wait for the holder")

	releaseHolder()
	require.Equal(t, "hook down", receive(t, holder, "the holder's Run"), "the hook's panic goes up to Run's caller")
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeDuplicate: 1}, tally(t, copies, 1), "the copy, waiting for the holder's claim")
	require.Zero(t, ran.Load())
	g := receive(t, guard, "the Guard waiting for the holder, which has ended,")
	require.NoError(t, g.err)
	require.Equal(t, idempotency.OutcomeProcessed, g.out)

	require.Equal(t, 1, b.Get(t, "c"), "the commit stands")
	requireEvent(t, b, "evt_hook_panics", idempotency.OutcomeProcessed)
	requireGuard(t, b, scope, key, true)
}
