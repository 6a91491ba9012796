package idempotency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The link Observer.Link gave is stored by both of PgxStore's inserts,
// the plain one and the batch's unnest, and leased back with the event.
func TestPgxIngestKeepsTrace(t *testing.T) {
	t.Parallel()
	s, _ := newIngestStore(t)
	send := func(rows ...*inboxRow) {
		batch := make([]*ingestReq, len(rows))
		for i, r := range rows {
			batch[i] = &ingestReq{ctx: t.Context(), row: r, done: make(chan struct{})}
		}
		s.insertIngest(batch)
		for _, req := range batch {
			<-req.done
			require.NoError(t, req.err)
			require.True(t, req.inserted)
		}
	}
	traced := func(id, trace string) *inboxRow {
		r := ingestRow(id)
		r.Trace = trace
		return r
	}
	send(traced("evt_one", "00-one"))
	send(traced("evt_batch_1", "00-batch-1"), traced("evt_batch_2", ""), traced("evt_batch_3", "00-batch-3"))
	rows, _, err := s.inboxLease(t.Context(), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 10, time.Minute, 5)
	require.NoError(t, err)
	got := map[string]string{}
	for _, r := range rows {
		got[r.EventID] = r.Trace
	}
	require.Equal(t, map[string]string{"evt_one": "00-one", "evt_batch_1": "00-batch-1", "evt_batch_2": "", "evt_batch_3": "00-batch-3"}, got)
}
