package idempotency_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxRunKeepsTheNextLoneEventAloneWhenAHungOneEnds: a process died
// holding two events, evt_a and evt_b. Run leases evt_a alone, and its
// attempt hangs past its new lease (its handler ignores its context); Run
// then leases evt_b, alone too, and holds it back behind evt_a's attempt.
// When evt_a's attempt at last ends, evt_b is attempted, and Run leases
// nothing beside it while its attempt runs: evt_a's end ends evt_a's hold,
// not evt_b's. Both stores, on a fake clock. (evt_c was leased and applied
// beside evt_b: the end of evt_a's attempt cleared the hold whatever
// event it was for.)
func TestInboxRunKeepsTheNextLoneEventAloneWhenAHungOneEnds(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			started := map[string]chan struct{}{"evt_a": make(chan struct{}), "evt_b": make(chan struct{})}
			finish := map[string]chan struct{}{"evt_a": make(chan struct{}), "evt_b": make(chan struct{})}
			applied := make(chan string, 3)
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				if ch, ok := started[ev.ID]; ok {
					close(ch)
					<-finish[ev.ID] // its context ignored
				}
				applied <- ev.ID
				return nil
			})
			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
				Now: clock.Now, Workers: 2, IngestWorkers: 2, Lease: time.Minute, Timeout: 10 * time.Second,
				PollInterval: time.Hour, Logger: discardLogger(),
			})
			require.NoError(t, err)
			deliver := invoiceDeliverer(t, in)
			deliver("evt_a")
			deliver("evt_b")
			died, err := idempotency.LeaseInbox(t.Context(), in, 2) // their process dies
			require.NoError(t, err)
			require.Len(t, died, 2)
			clock.Advance(time.Minute + time.Second) // 12:01:01: both leases expired

			once := map[string]*sync.Once{"evt_a": {}, "evt_b": {}}
			letGo := func(id string) { once[id].Do(func() { close(finish[id]) }) }
			t.Cleanup(runInbox(t, in))
			t.Cleanup(func() { letGo("evt_a"); letGo("evt_b") }) // before Run is stopped
			recv(t, started["evt_a"], "evt_a's attempt, alone")

			clock.Advance(time.Minute) // 12:02:01: evt_a's lease ended; its attempt hangs
			deliver("evt_c")           // wakes Run, which leases evt_b alone and holds it behind evt_a
			require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")
			rec, _, err := in.Lookup(t.Context(), "evt_b")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessing, rec.State, "evt_b leased")
			require.Equal(t, 2, rec.Attempt)

			letGo("evt_a") // evt_a's attempt ends: evt_b is attempted
			require.Equal(t, "evt_a", recv(t, applied, "evt_a"))
			recv(t, started["evt_b"], "evt_b's attempt")
			require.Eventually(t, func() bool { return idempotency.InboxIdle(in) }, 10*time.Second, time.Millisecond, "Run waits")
			rec, _, err = in.Lookup(t.Context(), "evt_c")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxPending, rec.State, "evt_c leased beside evt_b, leased alone")

			letGo("evt_b")
			require.Equal(t, "evt_b", recv(t, applied, "evt_b"))
			require.Equal(t, "evt_c", recv(t, applied, "evt_c, once evt_b's attempt ended"))
		})
	}
}
