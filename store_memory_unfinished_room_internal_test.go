package idempotency

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMemoryUnfinishedMadeAnew applies all but 10 of a burst of 1,000
// events and checks that the map of unfinished rows was made anew on the
// way, holding the 10 left, which a lease then takes.
func TestMemoryUnfinishedMadeAnew(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := NewMemoryStore()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		id := fmt.Sprintf("evt_room_%04d", i)
		_, err := s.inboxEnqueue(ctx, &inboxRow{InboxRecord: InboxRecord{
			EventID: id, EventType: "invoice.paid", ObjectID: "in_" + id, State: InboxPending, ReceivedAt: at, NextAttemptAt: at,
		}})
		require.NoError(t, err)
	}
	leased, _, err := s.inboxLease(ctx, at, 1000, time.Minute, 3)
	require.NoError(t, err)
	require.Len(t, leased, 1000)
	for _, r := range leased[10:] {
		ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxProcessed, "", time.Time{}, at, false, time.Time{})
		require.True(t, ok)
		require.NoError(t, err)
	}
	for _, r := range leased[:10] { // given back, due again
		ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxPending, "", at, at, true, r.PrevAttemptedAt)
		require.True(t, ok)
		require.NoError(t, err)
	}
	require.NoError(t, MemoryInboxIndexErr(s))
	require.Len(t, s.unfinished, 10)
	require.Less(t, s.unfinishedPeak, 1000/4, "the map was not made anew")
	again, _, err := s.inboxLease(ctx, at, 100, time.Minute, 3)
	require.NoError(t, err)
	require.Len(t, again, 10)
}
