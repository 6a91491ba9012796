package idempotency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// The ids a store stored, alone or in a shared insert, are remembered
// (PgxConfig.RecentClaims): a redelivery is answered duplicate without a
// round trip, even once another process deleted the row; an id Forget
// deleted is not remembered, and its next delivery stores it again.
func TestPgxIngestRemembersStoredIDs(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s, err := NewPgxStore(db.Pool, PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))

	ok, err := s.inboxEnqueue(t.Context(), ingestRow("evt_alone"))
	require.NoError(t, err)
	require.True(t, ok)
	for _, ids := range [][]string{{"evt_shared_a", "evt_shared_b", "evt_forgotten"}, {"evt_copy", "evt_copy"}} {
		batch := make([]*ingestReq, len(ids))
		for i, id := range ids {
			r := ingestRow(id)
			if id == "evt_forgotten" { // finished, so that Forget takes it
				r.State, r.NextAttemptAt, r.FinishedAt = InboxIgnored, time.Time{}, r.ReceivedAt
			}
			batch[i] = &ingestReq{ctx: t.Context(), row: r, done: make(chan struct{})}
		}
		s.insertIngest(batch)
		for _, req := range batch {
			<-req.done
			require.NoError(t, req.err)
		}
	}
	found, err := s.Forget(t.Context(), "evt_forgotten")
	require.NoError(t, err)
	require.True(t, found)
	// Another process deletes every row: only the memory still knows them.
	_, err = db.Pool.Exec(t.Context(), `DELETE FROM idempotency_inbox`)
	require.NoError(t, err)

	for _, id := range []string{"evt_alone", "evt_shared_a", "evt_shared_b", "evt_copy"} {
		ok, err := s.inboxEnqueue(t.Context(), ingestRow(id))
		require.NoError(t, err)
		require.False(t, ok, "%s is remembered stored: duplicate, without a round trip", id)
	}
	ok, err = s.inboxEnqueue(t.Context(), ingestRow("evt_forgotten"))
	require.NoError(t, err)
	require.True(t, ok, "evt_forgotten was forgotten: stored again")
	var ids []string
	rows, err := db.Pool.Query(t.Context(), `SELECT event_id FROM idempotency_inbox`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"evt_forgotten"}, ids)
}
