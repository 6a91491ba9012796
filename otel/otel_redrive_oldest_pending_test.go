package idempotencyotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedrivenDeadLetterPendingSinceReceipt: a dead letter redriven a
// week after its receipt is pending since that receipt, as the README's
// runbook says after a redrive: the oldest pending age is the week at
// once (the alert that events wait fires), and the last attempt's age
// is its last attempt's (the alert that no worker runs fires too), until
// a worker applies it. Both stores.
func TestRedrivenDeadLetterPendingSinceReceipt(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testRedrivenDeadLetterPendingSinceReceipt(t, open(t))
		})
	}
}

func testRedrivenDeadLetterPendingSinceReceipt(t *testing.T, store idempotency.Store) {
	in, h, clock, tel := observedInbox(t, store)

	a := idempotencytest.Deliver(h, event(t, "evt_fails", "invoice.payment_failed", "in_1"), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	clock.Advance(time.Minute)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rec, ok, err := in.Lookup(t.Context(), "evt_fails")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)

	clock.Advance(7*24*time.Hour - time.Minute)
	moved, err := in.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_fails"}})
	require.NoError(t, err)
	require.Equal(t, 1, moved)
	pts := tel.points(t)
	require.Equal(t, float64(1), pts["idempotency.inbox.depth"]["kind=event,state=pending"])
	require.Equal(t, map[string]float64{"": (7 * 24 * time.Hour).Seconds()}, pts["idempotency.inbox.oldest_pending_age"],
		"pending since its receipt, a week ago")
	require.Equal(t, map[string]float64{"": (7*24*time.Hour - time.Minute).Seconds()}, pts["idempotency.inbox.last_attempt_age"],
		"its last attempt, not the redrive, is the last attempt")
}
