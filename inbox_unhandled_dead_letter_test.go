package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxUnhandledTypeDeadLetteredAtMaxAttempts: an event that a worker
// without its handler attempts, within InboxConfig.RetryUnhandledFor,
// fails with ErrNoHandler as any failed attempt does: at MaxAttempts it
// is dead-lettered (as InboxConfig.RetryUnhandledFor's doc says), not
// failed again for ever, and a redrive hands it to a process that has the
// handler.
func TestInboxUnhandledTypeDeadLetteredAtMaxAttempts(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			var results []idempotency.Result
			cfg := idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(), MaxAttempts: 2,
				OnResult: func(r idempotency.Result) { results = append(results, r) }}
			applied := map[string]int{}
			newRelease, h, oldRelease := rollingReleases(t, store, cfg, applied)

			a := idempotencytest.Deliver(h, invoicePayload(t, "evt_unhandled_dl", "in_unhandled_dl", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			for range 2 {
				n, err := oldRelease.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, n)
				clock.Advance(time.Minute) // past the backoff, well within RetryUnhandledFor
			}
			require.Len(t, results, 2)
			require.Equal(t, idempotency.InboxFailed, results[0].State)
			require.Equal(t, idempotency.InboxDeadLetter, results[1].State, "the last attempt dead-letters")
			require.ErrorIs(t, results[1].Err, idempotency.ErrNoHandler)
			rec, ok, err := newRelease.Lookup(t.Context(), "evt_unhandled_dl")
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, idempotency.InboxDeadLetter, rec.State)
			require.Equal(t, 2, rec.Attempt)

			n, err := newRelease.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_unhandled_dl"}})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			n, err = newRelease.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, map[string]int{"evt_unhandled_dl": 1}, applied)
		})
	}
}
