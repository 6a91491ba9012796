package idempotency_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxInnocentEventAtItsLastAttemptDiesWithACrasher: an event whose
// last attempt was leased beside an event that kills the process is
// dead-lettered when that lease expires, without its handler having run,
// as the README says: every lease of a process that died counts as an
// attempt, since nothing stored tells an attempt that started from one
// leased ahead. It happens once per crash: an expired lease is taken
// alone afterwards (TestInboxRunLeasesNothingBesideAnEventWhoseWorkerDied).
// A redrive applies the innocent event, once.
func TestInboxInnocentEventAtItsLastAttemptDiesWithACrasher(t *testing.T) {
	t.Parallel()
	var innocentRuns, crasherRuns atomic.Int32
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		switch ev.ID {
		case "evt_innocent":
			if innocentRuns.Add(1) == 1 {
				return errors.New("the downstream is down") // its first attempt fails
			}
		case "evt_crasher":
			if crasherRuns.Add(1) == 1 {
				runtime.Goexit() // its process dies (once: the next one applies it)
			}
		}
		return nil
	})
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{
		Now: clock.Now, Workers: 2, MaxAttempts: 2, Lease: time.Minute, Timeout: 10 * time.Second,
		Backoff: func(int) time.Duration { return time.Minute }, Logger: discardLogger(),
	})
	require.NoError(t, err)
	deliver := invoiceDeliverer(t, in)
	deliver("evt_innocent")
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	deliver("evt_crasher") // due before the innocent event's retry
	clock.Advance(time.Minute)
	workDueDying(t, in) // leases both, runs the crasher first, and dies
	require.Equal(t, int32(1), crasherRuns.Load())
	require.Equal(t, int32(1), innocentRuns.Load(), "the innocent event's last attempt never started")

	clock.Advance(time.Minute + time.Second) // both leases expired
	rec, _, err := in.Lookup(t.Context(), "evt_innocent")
	require.NoError(t, err)
	require.Equal(t, 2, rec.Attempt, "the lease counts as its last attempt")
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	rec, _, err = in.Lookup(t.Context(), "evt_innocent")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxDeadLetter, rec.State)
	require.Contains(t, rec.LastError, "lease expired after attempt 2")
	require.Equal(t, int32(1), innocentRuns.Load(), "dead-lettered without running")

	n, err = in.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_innocent"}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = in.WorkDue(t.Context())
	require.NoError(t, err)
	rec, _, err = in.Lookup(t.Context(), "evt_innocent")
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxProcessed, rec.State)
	require.Equal(t, int32(2), innocentRuns.Load(), "applied once, after the redrive")
}
