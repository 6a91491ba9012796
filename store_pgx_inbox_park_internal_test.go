package idempotency

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// parkTestStore is a migrated PgxStore on a schema of its own, and
// enqueue, which stores pending events due at their creation, a
// millisecond apart.
func parkTestStore(t *testing.T) (*PgxStore, *pgtest.DB, func(id, object string) time.Time) {
	t.Helper()
	db := pgtest.New(t)
	s, err := NewPgxStore(db.Pool, PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(t.Context()))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return s, db, func(id, object string) time.Time {
		t.Helper()
		at = enqueueDue(t, s, id, object, at)
		return at
	}
}

func leasedIDs(rows []inboxRow) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.EventID
	}
	return ids
}

// A release before migration 014's does not park and does not unpark:
// an event it takes and finishes can leave the event parked behind it
// the first of its object. A process's first lease sweeps such events
// back, and then one lease a minute by the inbox's clock does.
func TestPgxInboxLeaseSweepsAnEventLeftParked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, db, enqueue := parkTestStore(t)
	var now time.Time
	for i := range 3 {
		now = enqueue(fmt.Sprintf("evt_%d", i), "in_1")
	}
	first, _, err := s.inboxLease(ctx, now, 8, time.Minute, 5)
	require.NoError(t, err)
	require.Equal(t, []string{"evt_0"}, leasedIDs(first))
	var parked string
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT string_agg(event_id, ',') FROM idempotency_inbox WHERE parked`).Scan(&parked))
	require.Equal(t, "evt_2", parked, "the third waits parked")

	// The earlier release applies evt_0, then leases evt_1 and applies
	// it, unparking nothing: evt_2 is the first of its object, parked.
	_, err = db.Pool.Exec(ctx, `UPDATE idempotency_inbox SET state = 'processed', finished_at = $1, lease_until = NULL
WHERE event_id IN ('evt_0', 'evt_1')`, now)
	require.NoError(t, err)

	for _, c := range []struct {
		after time.Duration
		want  []string
	}{
		{time.Second, nil},                  // swept at the first lease, not since
		{parkSweepEvery - time.Second, nil}, // not yet
		{parkSweepEvery, []string{"evt_2"}}, // swept, and taken
	} {
		leased, _, err := s.inboxLease(ctx, now.Add(c.after), 8, time.Minute, 5)
		require.NoError(t, err)
		if c.want == nil {
			c.want = []string{}
		}
		require.Equal(t, c.want, leasedIDs(leased), "a lease %s after the first", c.after)
	}

	// A new process sweeps at its first lease, whatever its clock.
	_, err = db.Pool.Exec(ctx, `UPDATE idempotency_inbox SET state = 'pending', parked = true, attempt = 0, lease_until = NULL,
    next_attempt_at = $1 WHERE event_id = 'evt_2'`, now)
	require.NoError(t, err)
	other, err := NewPgxStore(db.Pool, PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	leased, _, err := other.inboxLease(ctx, now, 8, time.Minute, 5)
	require.NoError(t, err)
	require.Equal(t, []string{"evt_2"}, leasedIDs(leased))
}

// The lease beside a hot object's backlog reads about as much with 3,000
// events waiting behind its first as with 300, once the leases parked
// them (migration 014): the shared buffers EXPLAIN counts, compared in
// one run (60 and 65 on a quiet machine, 60 and 121 beside other
// tests). Before parking, the lease stepped over every waiting event
// with a probe of its object, and the first's probe read them all (952
// and 9,178 buffers).
func TestPgxInboxLeaseBesideAHotObjectReadsItsHeadOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	buffers := map[int]int{}
	for _, hot := range []int{300, 3000} {
		s, db, enqueue := parkTestStore(t)
		var now time.Time
		for i := range hot {
			now = enqueue(fmt.Sprintf("evt_hot_%05d", i), "in_hot")
		}
		for i := range 32 {
			now = enqueue(fmt.Sprintf("evt_other_%05d", i), fmt.Sprintf("in_other_%05d", i))
		}
		// The first lease takes the hot object's first event and parks
		// the others but its second; the next leases take the others.
		leased, _, err := s.inboxLease(ctx, now, 16, time.Minute, 5)
		require.NoError(t, err)
		require.Len(t, leased, 16)
		leased, _, err = s.inboxLease(ctx, now, 16, time.Minute, 5)
		require.NoError(t, err)
		require.Len(t, leased, 16)
		var parked int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_inbox WHERE parked`).Scan(&parked))
		require.Equal(t, hot-2, parked)
		// The first event applied: the lease takes the second and
		// unparks the third; explained in its own transaction, then
		// rolled back.
		first := "evt_hot_00000"
		var attempt int
		var attemptedAt time.Time
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT attempt, attempted_at FROM idempotency_inbox WHERE event_id = $1`, first).Scan(&attempt, &attemptedAt))
		ok, err := s.inboxSettle(ctx, first, attempt, attemptedAt, InboxProcessed, "", time.Time{}, now, false, time.Time{})
		require.NoError(t, err)
		require.True(t, ok)
		buffers[hot] = leaseBuffers(t, s, db, now)
		var leasedAgain int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_inbox WHERE state = 'processing'`).Scan(&leasedAgain))
		require.Equal(t, 31, leasedAgain, "the explained lease rolled back")
	}
	t.Logf("buffers read by the lease: %v", buffers)
	// Ten times the backlog, read event by event, would be ten times the
	// buffers. The bound leaves room for the index entries of the rows as
	// they were before they were parked, which a lease steps over until a
	// vacuum removes them: each costs a look at its row while another
	// transaction's snapshot (a test beside this one) may still see it.
	require.Less(t, buffers[3000], 4*buffers[300], "the lease's reads grow with the hot object's backlog: %v", buffers)
}

// An outage failed the first event of 300 or 3,000 objects, each with an
// event waiting behind it: a lease reads about as much beside either,
// once the first lease parked the waiting events (behind a failed event
// no worker applies, only a take ends it, and the take unparks them).
func TestPgxInboxLeaseBesideFailedFirstEventsReadsNoneOfTheirs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	buffers := map[int]int{}
	for _, objects := range []int{300, 3000} {
		s, db, enqueue := parkTestStore(t)
		var now time.Time
		for i := range objects {
			now = enqueue(fmt.Sprintf("evt_first_%05d", i), fmt.Sprintf("in_%05d", i))
		}
		for i := range objects {
			now = enqueue(fmt.Sprintf("evt_next_%05d", i), fmt.Sprintf("in_%05d", i))
		}
		for i := range 32 {
			now = enqueue(fmt.Sprintf("evt_other_%05d", i), fmt.Sprintf("in_other_%05d", i))
		}
		// As the first events' failed attempts leave them: due in an hour.
		_, err := db.Pool.Exec(ctx, `UPDATE idempotency_inbox SET state = 'failed', attempt = 1, attempted_at = $1::timestamptz,
    next_attempt_at = $1::timestamptz + interval '1 hour', last_error = 'the downstream is down' WHERE event_id LIKE 'evt_first_%'`, now)
		require.NoError(t, err)
		finish := func(rows []inboxRow, at time.Time) {
			t.Helper()
			for _, r := range rows {
				ok, err := s.inboxSettle(ctx, r.EventID, r.Attempt, r.AttemptedAt, InboxProcessed, "", time.Time{}, at, false, time.Time{})
				require.NoError(t, err)
				require.True(t, ok)
			}
		}
		leased, _, err := s.inboxLease(ctx, now, 16, time.Minute, 5)
		require.NoError(t, err)
		require.Len(t, leased, 16)
		finish(leased, now)
		var parked int
		require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_inbox WHERE parked`).Scan(&parked))
		require.Equal(t, objects, parked, "every event behind a failed one")
		buffers[objects] = leaseBuffers(t, s, db, now)
		leased, _, err = s.inboxLease(ctx, now, 16, time.Minute, 5)
		require.NoError(t, err)
		require.Len(t, leased, 16, "the other objects' events")
		finish(leased, now)

		// The first events due again, each take unparks the event
		// behind it, taken once the first is applied.
		later := now.Add(time.Hour)
		leased, _, err = s.inboxLease(ctx, later, 16, time.Minute, 5)
		require.NoError(t, err)
		require.Len(t, leased, 16)
		for _, r := range leased {
			require.Contains(t, r.EventID, "evt_first_")
		}
		finish(leased, later)
		leased, _, err = s.inboxLease(ctx, later, 16, time.Minute, 5)
		require.NoError(t, err)
		var next int
		for _, r := range leased {
			if strings.HasPrefix(r.EventID, "evt_next_") {
				next++
			}
		}
		require.Equal(t, 16, next, "the events behind the first 16 applied, unparked and taken: %v", leasedIDs(leased))
	}
	t.Logf("buffers read by the lease: %v", buffers)
	require.Less(t, buffers[3000], 4*buffers[300], "the lease's reads grow with the waiting events: %v", buffers)
}

// leaseBuffers is the shared buffers a lease at now reads, explained in
// a transaction of its own and rolled back: the first node's, the
// statement's.
func leaseBuffers(t *testing.T, s *PgxStore, db *pgtest.DB, now time.Time) int {
	t.Helper()
	ctx := t.Context()
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	at := func(t time.Time) string { return `'` + t.Format(time.RFC3339Nano) + `'::timestamptz` }
	plan, err := explainGeneric(ctx, conn.Conn(), leaseSettings, `EXPLAIN (ANALYZE, BUFFERS)`, s.inbox.lease,
		at(now)+`, 16, `+at(now.Add(time.Minute)))
	require.NoError(t, err)
	require.Contains(t, plan, "Update on idempotency_inbox")
	m := regexp.MustCompile(`Buffers: shared hit=(\d+)(?: read=(\d+))?`).FindStringSubmatch(plan)
	require.NotNil(t, m, plan)
	buffers := 0
	for _, n := range m[1:] {
		if n != "" {
			k, err := strconv.Atoi(n)
			require.NoError(t, err)
			buffers += k
		}
	}
	return buffers
}
