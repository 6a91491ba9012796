package idempotency_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestMemoryInboxUnfinishedIndex runs seeded sequences of every operation
// that stores an inbox row or changes its state (deliveries, WorkDue on a
// fake clock with handlers and tasks that fail, snooze, panic and skip,
// leases taken and applied late, given back or left to expire, Redrive,
// Forget, Prune) on a MemoryStore, and checks after each that the rows its
// lease looks at are exactly the unfinished ones a scan of every row finds.
func TestMemoryInboxUnfinishedIndex(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			rng := rand.New(rand.NewPCG(seed, seed*7919))
			clock := idempotencytest.NewClock(time.Now().Add(time.Hour).Truncate(time.Second))
			mem := idempotency.NewMemoryStore()
			c := &counters{m: map[string]int{}}
			icfg := idempotency.InboxConfig{Workers: 1 + rng.IntN(3), MaxAttempts: []int{1, 2, 3}[rng.IntN(3)],
				Backoff: func(n int) time.Duration { return time.Duration(n) * time.Minute }}
			side := newParitySide(t, "memory", mem, clock, true, icfg, c.add, nil)
			types := []string{"invoice.paid", "invoice.payment_succeeded", "checkout.session.completed", "charge.refunded"}
			modes := []string{"ok", "ok", "skip", "fail1", "fail2", "fail", "snooze", "perm", "snooze0", "panic"}
			var specs []paritySpec
			for i := range 30 {
				specs = append(specs, paritySpec{
					id: fmt.Sprintf("evt_idx_%d_%02d", seed, i), typ: types[rng.IntN(len(types))],
					object: fmt.Sprintf("in_idx_%d", rng.IntN(5)), account: []string{"", "acct_idx_1"}[rng.IntN(2)],
					mode: modes[rng.IntN(len(modes))], created: 1756742400 + int64(rng.IntN(10)), inbox: rng.IntN(5) > 0,
				})
			}
			states := map[idempotency.InboxState]bool{}
			for step := range 300 {
				switch op := rng.IntN(12); {
				case op < 4:
					sp := specs[rng.IntN(len(specs))]
					h := side.sync
					if sp.inbox {
						h = side.ingest
					}
					idempotencytest.Deliver(h, parityPayload(t, sp), testSecret)
				case op < 5:
					clock.Advance([]time.Duration{time.Second, time.Minute, 3 * time.Minute, time.Hour, 8 * 24 * time.Hour}[rng.IntN(5)])
				case op < 7:
					_, err := side.inbox.WorkDue(ctx)
					require.NoError(t, err)
				case op < 8:
					f := idempotency.RedriveFilter{}
					if rng.IntN(2) == 0 {
						f.States = []idempotency.InboxState{idempotency.InboxDeadLetter, idempotency.InboxFailed}
					}
					_, _ = side.inbox.Redrive(ctx, f)
				case op < 9:
					_, _ = mem.Forget(ctx, specs[rng.IntN(len(specs))].id)
				case op < 10:
					_, _ = mem.Prune(ctx, idempotency.Retention{Pause: -1, BatchSize: rng.IntN(4), Now: clock.Now,
						Payloads: 24 * time.Hour, DeadLetters: 2 * 24 * time.Hour, Tasks: 140 * 24 * time.Hour})
				default:
					switch rng.IntN(3) {
					case 0: // a worker leases and dies, or resumes late
						ls, err := idempotency.LeaseInbox(ctx, side.inbox, 1+rng.IntN(4))
						require.NoError(t, err)
						side.leased = append(side.leased, ls...)
					case 1:
						for _, l := range side.leased {
							idempotency.ApplyLeased(ctx, side.inbox, l)
						}
						side.leased = nil
					default:
						for _, l := range side.leased {
							idempotency.ReleaseLeased(ctx, side.inbox, l)
						}
						side.leased = nil
					}
				}
				require.NoError(t, idempotency.MemoryInboxIndexErr(mem), "step %d", step)
				st, err := side.inbox.Stats(ctx)
				require.NoError(t, err)
				for s, n := range st.Counts {
					states[s] = states[s] || n > 0
				}
				for s, n := range st.TaskCounts {
					states[s] = states[s] || n > 0
				}
			}
			t.Logf("seed %d: states seen %v", seed, states)
		})
	}
}
