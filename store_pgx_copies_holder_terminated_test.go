package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPgxCopiesOfATerminatedHolder: while the run that claimed an event is
// inside its transaction, four copies of the event wait for it, in the
// process (the memory of claims) or on its claim row in PostgreSQL
// (RecentClaims -1); then the holder's session ends
// (pg_terminate_backend). The holder fails, nothing of it is kept, and
// exactly one copy runs the event: the others answer duplicate. Waiting in
// PostgreSQL, the copy does not wait for the holder's goroutine to return:
// the claim row is free once the session is gone.
func TestPgxCopiesOfATerminatedHolder(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]idempotency.PgxConfig{"in-process": {}, "database-only": {RecentClaims: -1}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newPgBackend(t, cfg)
			c := idempotency.Claim{EventID: "evt_copies_terminated", EventType: "invoice.paid"}
			pids, release := make(chan int32, 1), make(chan struct{})
			holder := make(chan error, 1)
			go func() {
				_, err := b.store.Run(t.Context(), c, func(ctx context.Context, tx idempotency.Tx) error {
					if err := b.add(ctx, tx, "holder", 1); err != nil {
						return err
					}
					return holdSession(ctx, tx, pids, release)
				})
				holder <- err
			}()
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			pid := recv(t, pids, "the holder inside its transaction")

			const copies = 4
			type ran struct {
				out idempotency.Outcome
				err error
			}
			outs := make(chan ran, copies)
			for range copies {
				go func() {
					out, err := b.store.Run(t.Context(), c, func(ctx context.Context, tx idempotency.Tx) error { return b.add(ctx, tx, "c", 1) })
					outs <- ran{out, err}
				}()
			}
			faultAwait(t, time.Minute, "the copies waiting for the holder", func() bool { return b.waiting(t) == copies })

			var terminated bool
			require.NoError(t, pgtest.AdminPool(t).QueryRow(t.Context(), `SELECT pg_terminate_backend($1)`, pid).Scan(&terminated))
			require.True(t, terminated)
			got := map[idempotency.Outcome]int{}
			collect := func(what string) {
				r := recv(t, outs, what)
				require.NoError(t, r.err)
				got[r.out]++
			}
			if cfg.RecentClaims < 0 {
				for got[idempotency.OutcomeProcessed] == 0 {
					collect("a copy run while the terminated holder's goroutine still hangs")
				}
			}
			close(release)
			require.Error(t, recv(t, holder, "the holder"), "the holder's session ended")
			for got[idempotency.OutcomeProcessed]+got[idempotency.OutcomeDuplicate] < copies {
				collect("a copy")
			}
			require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeProcessed: 1, idempotency.OutcomeDuplicate: copies - 1}, got)
			require.Equal(t, 1, b.get(t, "c"), "one copy's writes")
			require.Zero(t, b.get(t, "holder"), "nothing of the holder")
			rec, ok, err := b.store.LookupEvent(t.Context(), c.EventID)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.OutcomeProcessed, rec.Outcome)
		})
	}
}
