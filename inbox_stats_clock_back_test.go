package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestStatsLastAttemptOfAnAttemptEndedOnAClockSetBack: LastAttempt is the
// newest attempt's start also when the inbox's clock went back while it
// ran (NTP stepped it; a test's Clock.Set), so that the row it
// dead-lettered finished before it was attempted, on both stores. On
// PostgreSQL Stats read the rows finished since the newest attempt among
// the last finished, which that row is not: LastAttempt was zero.
func TestStatsLastAttemptOfAnAttemptEndedOnAClockSetBack(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			clock := idempotencytest.NewClock(base)
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[pgInboxObject]) error {
				clock.Set(base.Add(-time.Minute)) // stepped back while the attempt runs
				return errors.New("declined")
			})
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, MaxAttempts: 1, Logger: discardLogger()})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, pgInboxPayload(t, "evt_clock_back", "in_clock_back", 0), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			attempted := base.Add(time.Second)
			clock.Set(attempted)
			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)

			st, err := in.Stats(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, st.Counts[idempotency.InboxDeadLetter])
			require.Equal(t, attempted, st.LastAttempt.UTC())
		})
	}
}
