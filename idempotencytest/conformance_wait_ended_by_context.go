package idempotencytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testWaitEndedByContext: a run whose context ends while its transaction
// waits for another's (a copy for the event's claim, a Guard for a key
// held elsewhere, the loser of a deadlock before it runs again) fails
// with the context's error, which errors.Is finds, on every store: a
// caller tells a run it cut from one the store failed by that alone. A
// deadlock's loser whose context ended no longer reads as a conflict to
// run again. (No test failed when PgxStore returned PostgreSQL's deadlock
// error, and no context error, for a context that ended in the pause
// before the rerun, where MemoryStore returned the context's.)
func testWaitEndedByContext(t *testing.T, b StoreBackend) {
	ends := map[string]func(ctx context.Context) (context.Context, context.CancelFunc){
		"cancelled": context.WithCancel,
		"deadline": func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 300*time.Millisecond)
		},
	}
	for name, end := range ends {
		t.Run("claim "+name, func(t *testing.T) {
			id := "evt_wait_ended_" + name
			release, done := holdClaim(t, b, id, nil)
			ctx, cancel := end(ctxT(t))
			defer cancel()
			errc := make(chan ranResult, 1)
			go func() {
				out, err := b.Store.Run(ctx, claim(id), func(context.Context, idempotency.Tx) error {
					return errors.New("the copy ran while the holder held the claim")
				})
				errc <- ranResult{out, err}
			}()
			if name == "cancelled" {
				waitingReaches(t, b, 1, 10*time.Second)
				cancel()
			}
			got := receive(t, errc, "the copy whose context ended")
			requireContextsError(t, ctx, got)
			release()
			require.Equal(t, idempotency.OutcomeProcessed, receive(t, done, "the holder's Run"))
		})
		t.Run("guard "+name, func(t *testing.T) {
			key := "wait_ended_" + name
			releaseHolder, holder := holdGuard(t, b, "evt_guard_holder_"+name, "k", key, nil)
			ctx, cancel := end(ctxT(t))
			defer cancel()
			waiter := make(chan ranResult, 1)
			go func() {
				out, err := b.Store.Run(ctx, claim("evt_guard_waiter_"+name), func(ctx context.Context, tx idempotency.Tx) error {
					if _, err := tx.Guard(ctx, "k", key); err != nil {
						return errors.Join(errors.New("guarding"), err)
					}
					return errors.New("the guard was taken while the holder held it")
				})
				waiter <- ranResult{out, err}
			}()
			if name == "cancelled" {
				waitingReaches(t, b, 1, 10*time.Second)
				cancel()
			}
			requireContextsError(t, ctx, receive(t, waiter, "the waiter whose context ended"))
			releaseHolder()
			got := receive(t, holder, "the holder's Run")
			require.NoError(t, got.err)
			require.Equal(t, idempotency.OutcomeProcessed, got.out)
		})
	}
	t.Run("deadlock's loser cancelled", func(t *testing.T) {
		testDeadlockLoserCancelled(t, b)
	})
}

// testDeadlockLoserCancelled crosses two transactions' guards; the one
// the store fails for the deadlock ends its own context as its handler
// returns the failure, before the store would run it again.
func testDeadlockLoserCancelled(t *testing.T, b StoreBackend) {
	type run struct {
		ctx    context.Context
		cancel context.CancelFunc
		lost   bool // its second Guard failed, and its handler ended ctx
		result chan ranResult
	}
	runs := [2]*run{}
	for i := range runs {
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		runs[i] = &run{ctx: ctx, cancel: cancel, result: make(chan ranResult, 1)}
	}
	var held [2]chan struct{}
	for i := range held {
		held[i] = make(chan struct{})
	}
	keys := [2]string{"loser_a", "loser_b"}
	for i, r := range runs {
		go func() {
			attempt := 0
			out, err := b.Store.Run(r.ctx, claim("evt_loser_"+keys[i]), func(ctx context.Context, tx idempotency.Tx) error {
				attempt++
				if _, err := tx.Guard(ctx, "k", keys[i]); err != nil {
					return err
				}
				if attempt == 1 {
					close(held[i])
					select { // each holds its key before either asks for the other's
					case <-held[1-i]:
					case <-time.After(waitLimit):
						return errors.New("the other transaction never held its key")
					}
				}
				if _, err := tx.Guard(ctx, "k", keys[1-i]); err != nil {
					if attempt == 1 {
						r.lost = true
						r.cancel()
					}
					return err
				}
				return b.Add(ctx, tx, "deadlock", 1)
			})
			r.result <- ranResult{out, err}
		}()
	}
	var got [2]ranResult
	for i, r := range runs {
		got[i] = receive(t, r.result, "a run of the deadlock (is the deadlock detected?)")
	}
	losers := 0
	for i, r := range runs {
		if !r.lost {
			require.NoError(t, got[i].err, "the deadlock's winner")
			require.Equal(t, idempotency.OutcomeProcessed, got[i].out, "the deadlock's winner")
			continue
		}
		losers++
		requireContextsError(t, r.ctx, got[i])
		require.NotErrorIs(t, got[i].err, idempotency.ErrDeadlock, "a run whose context ended is no conflict to run again")
	}
	require.Equal(t, 1, losers, "the runs the store failed for the deadlock")
	require.Equal(t, 1, b.Get(t, "deadlock"), "the winner's write alone is kept")
}

// requireContextsError requires that got is the failure of a run whose
// ctx ended: its error is ctx's, which errors.Is finds.
func requireContextsError(t *testing.T, ctx context.Context, got ranResult) {
	t.Helper()
	require.Error(t, ctx.Err(), "the context has ended")
	require.ErrorIs(t, got.err, ctx.Err(), "the run's error is its context's")
	require.Equal(t, idempotency.OutcomeFailed, got.out)
}
