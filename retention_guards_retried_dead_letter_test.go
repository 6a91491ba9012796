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

// TestRetentionGuardsOutlastARetriedDeadLetter: Retention's rule for
// guards is that a different event about the same key may come EventIDs
// after the key was written, fail until it is dead-lettered and wait
// DeadLetters for a redrive. The least Guards window accepted, EventIDs
// plus DeadLetters, left out the failing: with the inbox's defaults (20
// attempts, n⁴ s apart) an event that came 45 days after the guard was
// dead-lettered 6.5 days later and kept 90 days from then, and a prune
// 140 days after the guard deleted it while the dead letter waited; its
// redrive credited the invoice a second time. Both stores alike.
func TestRetentionGuardsOutlastARetriedDeadLetter(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for name, s := range bothPruners(t) {
		start := time.Now() // the stores date a guard by the real time
		clock := idempotencytest.NewClock(start)
		var mu sync.Mutex
		credits, broken := 0, true
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
			mu.Lock()
			fail := ev.ID == "evt_second" && broken
			mu.Unlock()
			if fail {
				return errors.New("a bug in the handler")
			}
			first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
			if err != nil || !first {
				return err
			}
			tx.AfterCommit(func(context.Context) {
				mu.Lock()
				defer mu.Unlock()
				credits++
			})
			return nil
		})
		in, err := idempotency.NewInbox(s, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
		require.NoError(t, err)
		h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		deliver := func(id string) {
			a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_retried", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%s: %s", name, a.Body)
		}
		deliver("evt_first")
		_, err = in.WorkDue(t.Context())
		require.NoError(t, err)

		// Another event about the invoice comes 45 days on and fails every
		// attempt, each after the default backoff (at most n⁴ s + 10%).
		clock.Advance(45 * day)
		deliver("evt_second")
		for attempt := 1; ; attempt++ {
			_, err = in.WorkDue(t.Context())
			require.NoError(t, err)
			rec, ok, err := in.Lookup(t.Context(), "evt_second")
			require.NoError(t, err)
			require.True(t, ok)
			if rec.State == idempotency.InboxDeadLetter {
				break
			}
			require.Less(t, attempt, idempotency.DefaultMaxAttempts, "%s: not dead-lettered", name)
			clock.Advance(time.Duration(attempt*attempt*attempt*attempt) * time.Second * 6 / 5)
		}

		// 140 days after the guard, the dead letter is still kept.
		later := start.Add(140 * day)
		least := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
		rep, err := s.Prune(t.Context(), idempotency.Retention{Guards: least, Now: func() time.Time { return later }})
		require.NoError(t, err, name)
		require.Zero(t, rep.DeadLetters, "%s: the dead letter is within its window: %+v", name, rep)

		mu.Lock()
		broken = false
		mu.Unlock()
		n, err := in.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_second"}})
		require.NoError(t, err)
		require.Equal(t, 1, n, name)
		_, err = in.WorkDue(t.Context())
		require.NoError(t, err)
		mu.Lock()
		require.Equal(t, 1, credits, "%s: the invoice is credited once (prune deleted %d guards)", name, rep.Guards)
		mu.Unlock()
	}
}
