package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxClockOutOfRangeRefusedAlike: an InboxConfig.Now outside the
// years 1 to 9999 (a fake clock set wrong) stores nothing, on either store:
// the delivery is answered 500 and WorkDue fails with ErrInvalidKey, naming
// the clock. PgxStore answered 503 store_unavailable ("timestamp out of
// range") for the year 300000 and stored the year 1970 for
// time.Unix(1<<62, 0); MemoryStore queued the event at the time given.
func TestInboxClockOutOfRangeRefusedAlike(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(1<<62, 0), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		clock := idempotencytest.NewClock(at)
		c := &counters{m: map[string]int{}}
		pg := newPgBackend(t, idempotency.PgxConfig{})
		sides := []*paritySide{
			newParitySide(t, "memory", idempotency.NewMemoryStore(), clock, true, idempotency.InboxConfig{}, c.add, nil),
			newParitySide(t, "postgres", pg.store, clock, true, idempotency.InboxConfig{}, pg.add, nil),
		}
		sp := paritySpec{id: "evt_clock_range", typ: "invoice.paid", object: "in_clock_range", mode: "ok", created: 1756742400}
		for _, s := range sides {
			a := idempotencytest.Deliver(s.ingest, parityPayload(t, sp), testSecret)
			require.Equal(t, 500, a.Status, "%s, clock at %s: %s", s.name, at, a.Body)
			require.JSONEq(t, `{"error":"processing_failed"}`, a.Body)
			_, ok, err := s.inbox.Lookup(t.Context(), sp.id)
			require.NoError(t, err)
			require.False(t, ok, "%s, clock at %s: the event was stored", s.name, at)
			n, err := s.inbox.WorkDue(t.Context())
			require.ErrorIs(t, err, idempotency.ErrInvalidKey, "%s, clock at %s", s.name, at)
			require.ErrorContains(t, err, "InboxConfig.Now")
			require.Zero(t, n)
		}
	}
}
