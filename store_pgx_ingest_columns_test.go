package idempotency

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every column of a delivery is stored as it came, byte for byte, whether
// it is inserted alone, with others in one shared insert, or by the
// memory store: each row's values differ from the others' in every
// column, so a column taken from the wrong field or row shows.
func TestIngestStoresEveryColumn(t *testing.T) {
	t.Parallel()
	rows := func(prefix string, n int) []*inboxRow {
		out := make([]*inboxRow, n)
		for i := range out {
			at := time.Date(2026, 3, 1, 12, 0, i, 123456000, time.UTC)
			id := fmt.Sprintf("evt_%s_%d", prefix, i)
			out[i] = &inboxRow{InboxRecord: InboxRecord{
				EventID: id, EventType: fmt.Sprintf("invoice.type_%d", i), ObjectID: fmt.Sprintf("in_%s_%d", prefix, i),
				Account: fmt.Sprintf("acct_%d", i), Livemode: i%2 == 0, APIVersion: fmt.Sprintf("2025-0%d-27.basil", i+1),
				Created: at.Add(-time.Duration(i+1) * time.Hour).Truncate(time.Second), State: InboxPending,
				ReceivedAt: at, NextAttemptAt: at,
			}, Payload: []byte(fmt.Sprintf("{\"id\":%q}\n \x00\xff%d", id, i)), Trace: fmt.Sprintf("00-trace-%d", i)}
		}
		return out
	}
	check := func(t *testing.T, b inboxBackend, want []*inboxRow) {
		t.Helper()
		got, _, err := b.inboxLease(t.Context(), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), 10, time.Minute, 5)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		byID := map[string]inboxRow{}
		for _, r := range got {
			byID[r.EventID] = r
		}
		for _, w := range want {
			g, ok := byID[w.EventID]
			require.True(t, ok, w.EventID)
			require.Equal(t, w.EventType, g.EventType, w.EventID)
			require.Equal(t, w.ObjectID, g.ObjectID, w.EventID)
			require.Equal(t, w.Account, g.Account, w.EventID)
			require.Equal(t, w.Livemode, g.Livemode, w.EventID)
			require.Equal(t, w.APIVersion, g.APIVersion, w.EventID)
			require.True(t, w.Created.Equal(g.Created), "%s: created %s, want %s", w.EventID, g.Created, w.Created)
			require.True(t, w.NextAttemptAt.Equal(g.DueAt), "%s: due %s, want %s", w.EventID, g.DueAt, w.NextAttemptAt)
			require.True(t, w.ReceivedAt.Equal(g.ReceivedAt), "%s: received %s, want %s", w.EventID, g.ReceivedAt, w.ReceivedAt)
			require.Equal(t, w.Payload, g.Payload, w.EventID)
			require.Equal(t, w.Trace, g.Trace, w.EventID)
		}
	}
	scribble := func(rs []*inboxRow) {
		for _, r := range rs {
			for i := range r.Payload {
				r.Payload[i] = 'x'
			}
		}
	}
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		s := NewMemoryStore()
		sent := rows("mem", 3)
		for _, r := range sent {
			ok, err := s.inboxEnqueue(t.Context(), r)
			require.NoError(t, err)
			require.True(t, ok)
		}
		scribble(sent) // the caller reuses its buffers
		check(t, s, rows("mem", 3))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		s, _ := newIngestStore(t)
		shared, alone := rows("shared", 3), rows("alone", 1)
		for _, batch := range [][]*inboxRow{shared, alone} {
			reqs := make([]*ingestReq, len(batch))
			for i, r := range batch {
				reqs[i] = &ingestReq{ctx: t.Context(), row: r, done: make(chan struct{})}
			}
			s.insertIngest(reqs)
			for _, req := range reqs {
				<-req.done
				require.NoError(t, req.err)
				require.True(t, req.inserted, req.row.EventID)
			}
		}
		scribble(append(shared, alone...))
		check(t, s, append(rows("shared", 3), rows("alone", 1)...))
	})
}
