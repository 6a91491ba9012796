package main

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestListAfter: -after the last id of a list lists the next page, so that
// an operator pages through a list longer than -limit, every record once,
// also among records received in one microsecond (which -until, the only
// way on before, left out); the "more" line names the next -after. An id
// the inbox does not have is not found (exit 3).
func TestListAfter(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	_, err := s.db.Pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{s.db.Schema}.Sanitize()+`.idempotency_inbox
    (event_id, event_type, created, payload, state, received_at, finished_at)
SELECT 'evt_bulk_' || lpad(i::text, 3, '0'), 'invoice.paid', $2, '\x7b7d', 'processed', $2, $2
FROM generate_series(1, $1) AS i`, 25, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	all := decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json"))
	require.Len(t, all.Records, 32)
	require.False(t, all.More)

	var paged []string
	args := []string{"list", "-json", "-limit", "10"}
	for range 5 {
		doc := decode[listJSON](t, idemctl(t, s.db, nil, args...))
		for _, r := range doc.Records {
			paged = append(paged, r.ID)
		}
		if !doc.More {
			break
		}
		args = []string{"list", "-json", "-limit", "10", "-after", doc.Records[len(doc.Records)-1].ID}
	}
	var want []string
	for _, r := range all.Records {
		want = append(want, r.ID)
	}
	require.Equal(t, want, paged)

	r := idemctl(t, s.db, nil, "list", "-limit", "10")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "next: -after "+want[9])

	r = idemctl(t, s.db, nil, "list", "-after", "evt_nope")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Contains(t, r.stderr, "evt_nope")
}

// TestListMoreQuotesTheNextID: the "more" line's -after quotes an id a
// shell would split or run part of (a task's key with a space, a
// semicolon and a quote), so that pasted it lists the next page and runs
// nothing else; it was pasted as several words.
func TestListMoreQuotesTheNextID(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	for _, id := range []string{"evt_odd_1", "evt_odd_2"} {
		require.Equal(t, idempotency.OutcomeQueued, s.deliver(t, id, "invoice.paid", "in_"+id+" 2;echo it's"))
	}
	s.work(t, s.inbox)
	r := idemctl(t, s.db, nil, "list", "-kind", "task", "-limit", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `next: -after 'task:send-receipt:in_evt_odd_[12] 2;echo it'\\''s', or raise -limit`, r.stderr)
}
