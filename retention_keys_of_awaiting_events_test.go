package idempotency_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPruneKeepsKeysOfAwaitingEvents: whatever the Guards and Tasks
// windows, a guard, a finished task and a dead-lettered task written less
// than EventIDs before the oldest event still to be applied (pending or
// failed) was received are kept while that event is there, and only
// those: a key inside its window stays when a recent event awaits, and
// once the event is applied the keys past their windows go. Both stores.
// (No test failed when the tasks' or the dead tasks' cutoff was left
// where its window put it, when PgxStore left failed events out, when
// MemoryStore took the newest awaiting event for the oldest, or when the
// cutoffs moved to the awaiting event's bound even when that is later.)
func TestPruneKeepsKeysOfAwaitingEvents(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	least := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	type awaiting struct {
		id, invoice string
		at          time.Duration // received, after the keys were written
		fail        bool          // worked once and failed; else left pending
	}
	cases := map[string]struct {
		awaiting []awaiting
		pruneAt  time.Duration
		apply    bool // then applied, and pruned again: the keys go
	}{
		"failed, then applied":   {awaiting: []awaiting{{"evt_late", "in_kept", 44 * day, true}}, pruneAt: 140 * day, apply: true},
		"pending, and a newer":   {awaiting: []awaiting{{"evt_late", "in_kept", 44 * day, false}, {"evt_newer", "in_other", 90 * day, false}}, pruneAt: 140 * day},
		"recent, keys in window": {awaiting: []awaiting{{"evt_late", "in_kept", 50 * day, false}}, pruneAt: 100 * day},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for sname, s := range bothPruners(t) {
				start := time.Now() // the stores date a guard by the real time
				clock := idempotencytest.NewClock(start)
				var mu sync.Mutex
				failing := map[string]bool{}
				hs := idempotency.NewHandlers()
				receipt := idempotency.NewTask(hs, "receipt", func(context.Context, idempotency.TaskRun[misuseArgs]) error { return nil })
				notify := idempotency.NewTask(hs, "notify", func(context.Context, idempotency.TaskRun[misuseArgs]) error {
					return idempotency.Permanent(errors.New("refused")) // dead-lettered: its key's record
				})
				idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
					mu.Lock()
					fail := failing[ev.ID]
					mu.Unlock()
					if fail {
						return errors.New("a bug in the handler")
					}
					first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
					if err != nil || !first {
						return err
					}
					if _, err := receipt.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{}); err != nil {
						return err
					}
					_, err = notify.Enqueue(ctx, tx, ev.Object.ID, misuseArgs{})
					return err
				})
				in, err := idempotency.NewInbox(s, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
				require.NoError(t, err)
				h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				require.NoError(t, err)
				deliver := func(id, invoice string) {
					a := idempotencytest.Deliver(h, invoicePayload(t, id, invoice, "acct_1"), testSecret)
					require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%s: %s", sname, a.Body)
				}
				workDue := func() {
					_, err := in.WorkDue(t.Context())
					require.NoError(t, err, sname)
				}
				// The guard, a processed task and a dead-lettered task of
				// in_kept, all written at start.
				deliver("evt_first", "in_kept")
				workDue()
				for _, id := range []string{receipt.ID("in_kept"), notify.ID("in_kept")} {
					rec, ok, err := in.Lookup(t.Context(), id)
					require.NoError(t, err)
					require.True(t, ok, "%s: %s", sname, id)
					require.True(t, rec.State.Final(), "%s: %s is %s", sname, id, rec.State)
				}

				for _, a := range c.awaiting {
					clock.Advance(start.Add(a.at).Sub(clock.Now())) // awaiting events come in order
					mu.Lock()
					failing[a.id] = a.fail
					mu.Unlock()
					deliver(a.id, a.invoice)
					if a.fail {
						workDue()
						rec, _, err := in.Lookup(t.Context(), a.id)
						require.NoError(t, err)
						require.Equal(t, idempotency.InboxFailed, rec.State, sname)
					}
				}

				r := idempotency.Retention{Guards: least, Tasks: least, Now: func() time.Time { return start.Add(c.pruneAt) }}
				rep, err := s.Prune(t.Context(), r)
				require.NoError(t, err, sname)
				require.Zero(t, rep.Guards, "%s: the guard is kept: %+v", sname, rep)
				require.Zero(t, rep.Tasks, "%s: the processed task is kept: %+v", sname, rep)
				require.Zero(t, rep.DeadLetters, "%s: the dead-lettered task is kept: %+v", sname, rep)
				if !c.apply {
					continue
				}

				mu.Lock()
				clear(failing)
				mu.Unlock()
				clock.Advance(time.Hour) // past the failed attempt's backoff
				workDue()
				rec, _, err := in.Lookup(t.Context(), "evt_late")
				require.NoError(t, err)
				require.Equal(t, idempotency.InboxProcessed, rec.State, sname)
				rep, err = s.Prune(t.Context(), r)
				require.NoError(t, err, sname)
				require.Equal(t, 1, rep.Guards, "%s: nothing awaits: the guard past its window goes: %+v", sname, rep)
				require.Equal(t, 1, rep.Tasks, "%s: %+v", sname, rep)
				require.Equal(t, 1, rep.DeadLetters, "%s: the dead-lettered task: %+v", sname, rep)
			}
		})
	}
}
