package idempotencytest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestZeroClockStartsAtItsFirstUse: the zero Clock reads the real time of
// its first use (a read or an Advance), then stands still, as
// NewClock(time.Now()) would: an inbox on it stores a delivery at about
// the real time, the time its event was created and signed at and the
// one Prune's default clock reads. It read the year 1, and the event was
// stored as received 2025 years before it was created.
func TestZeroClockStartsAtItsFirstUse(t *testing.T) {
	t.Parallel()
	var clock idempotencytest.Clock
	before := time.Now()
	start := clock.Now()
	require.WithinRange(t, start, before, time.Now())
	require.Equal(t, start, clock.Now(), "it stands still")
	clock.Advance(time.Minute)
	require.Equal(t, start.Add(time.Minute), clock.Now())

	advanced := &idempotencytest.Clock{}
	before = time.Now()
	advanced.Advance(time.Hour) // a first use too
	require.WithinRange(t, advanced.Now(), before.Add(time.Hour), time.Now().Add(time.Hour))

	set := &idempotencytest.Clock{}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	set.Set(at)
	require.Equal(t, at, set.Now(), "Set is the clock's time, whatever it read before")

	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Now: (&idempotencytest.Clock{}).Now})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, invoicePaid(t, "evt_zero_clock", "in_zero_clock", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%d %s", a.Status, a.Body)
	rec, ok, err := inbox.Lookup(t.Context(), "evt_zero_clock")
	require.NoError(t, err)
	require.True(t, ok)
	require.WithinDuration(t, time.Now(), rec.ReceivedAt, time.Minute)
}
