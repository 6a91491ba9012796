package idempotencytest

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// testInboxNextEventAfterItsWrites: the next event of an object is never
// applied before the writes of the earlier one can be read. A worker that
// looks for due events while the earlier event's transaction ends, as its
// AfterCommit funcs run (here one registered before the handler's write,
// which runs WorkDue as another worker would lease at that moment), finds
// the next event held back, or applies it with the write there: on
// PostgreSQL the write committed with the earlier event; MemoryStore,
// whose fakes apply their writes from AfterCommit funcs, holds the
// object's next event back until those funcs have run, as it holds a
// task its transaction enqueued. A handler that reads what the earlier
// event of its object wrote reads it on both stores.
func testInboxNextEventAfterItsWrites(t *testing.T, b StoreBackend) {
	clock := NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	logger := slog.New(slog.DiscardHandler)
	hs := idempotency.NewHandlers()
	var in *idempotency.Inbox
	read := map[string]int{} // the counter, as each event's handler read it; every run is on the test's goroutine: WorkDue's
	ranDuring := 0
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[inboxObject]) error {
		read[ev.ID] = b.Get(t, "c")
		if ev.ID == "evt_after_writes_1" {
			tx.AfterCommit(func(ctx context.Context) {
				n, err := in.WorkDue(ctx)
				require.NoError(t, err)
				ranDuring = n
			})
		}
		return b.Add(ctx, tx, "c", 1)
	})
	in = newInbox(t, b, hs, idempotency.InboxConfig{Now: clock.Now, Logger: logger})
	h, err := in.Handler(idempotency.Config{Secrets: []string{inboxSecret}, Logger: logger})
	require.NoError(t, err)
	for i, id := range []string{"evt_after_writes_1", "evt_after_writes_2"} {
		a := Deliver(h, inboxEvent(id, "invoice.paid", "in_after_writes", 1756742401+int64(i)), inboxSecret)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome)
	}
	ranAfter, err := in.WorkDue(ctxT(t))
	require.NoError(t, err)
	require.Equal(t, 2, ranDuring+ranAfter, "each event applied once")
	require.Equal(t, map[string]int{"evt_after_writes_1": 0, "evt_after_writes_2": 1}, read,
		"the next event of the object read the counter as the earlier one wrote it")
	require.Equal(t, 2, b.Get(t, "c"))
}
