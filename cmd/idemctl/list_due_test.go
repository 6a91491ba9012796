package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestListDue: list's table says when each record is due, so that an
// operator need not show each one: a pending or failed record's next
// attempt, a processing record's lease end, with the judgement show makes
// by the database's clock ("lease until T" while it runs, "lease expired at T"
// once past: its worker died, and the next lease retries it), and "-" for
// a final record. -json has both times, null when not set.
func TestListDue(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	now := time.Now().Truncate(time.Second)
	overdue, next := now.Add(-5*time.Minute), now.Add(10*time.Minute)
	running, expired := now.Add(time.Hour), now.Add(-time.Hour)
	_, err := s.db.Pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{s.db.Schema}.Sanitize()+`.idempotency_inbox
    (event_id, event_type, created, payload, state, attempt, received_at, next_attempt_at, finished_at, lease_until)
VALUES ('evt_due_pending', 'invoice.paid', $1, '\x7b7d', 'pending', 0, $1, $2, NULL, NULL),
       ('evt_due_failed', 'invoice.paid', $1, '\x7b7d', 'failed', 1, $1, $3, NULL, NULL),
       ('evt_due_running', 'invoice.paid', $1, '\x7b7d', 'processing', 1, $1, NULL, NULL, $4),
       ('evt_due_expired', 'invoice.paid', $1, '\x7b7d', 'processing', 1, $1, NULL, NULL, $5),
       ('evt_due_done', 'invoice.paid', $1, '\x7b7d', 'processed', 1, $1, NULL, $1, NULL)`,
		now.Add(-time.Minute), overdue, next, running, expired)
	require.NoError(t, err)

	r := idemctl(t, s.db, nil, "list")
	require.Equal(t, 0, r.code, r.stderr)
	require.Regexp(t, `^ID\s+KIND\s+TYPE\s+OBJECT\s+ACCOUNT\s+STATE\s+ATTEMPTS\s+RECEIVED\s+DUE\s+LAST ERROR\n`, r.stdout)
	row := func(id, state, due string) string {
		return `(?m)^` + id + `\s+event\s+invoice\.paid\s+-\s+-\s+` + state + `\s+\d+\s+\S+Z\s+` + regexp.QuoteMeta(due) + `\s+-$`
	}
	require.Regexp(t, row("evt_due_pending", "pending", formatTime(overdue)), r.stdout)
	require.Regexp(t, row("evt_due_failed", "failed", formatTime(next)), r.stdout)
	require.Regexp(t, row("evt_due_running", "processing", "lease until "+formatTime(running)), r.stdout)
	require.Regexp(t, row("evt_due_expired", "processing", "lease expired at "+formatTime(expired)), r.stdout)
	require.Regexp(t, row("evt_due_done", "processed", "-"), r.stdout)

	doc := decode[listJSON](t, idemctl(t, s.db, nil, "list", "-json"))
	got := map[string]recordJSON{}
	for _, rec := range doc.Records {
		got[rec.ID] = rec
	}
	require.Len(t, got, 5)
	for id, want := range map[string]struct{ next, lease *time.Time }{
		"evt_due_pending": {next: &overdue}, "evt_due_failed": {next: &next},
		"evt_due_running": {lease: &running}, "evt_due_expired": {lease: &expired}, "evt_due_done": {},
	} {
		rec := got[id]
		require.Equal(t, want.next == nil, rec.NextAttemptAt == nil, "%s next_attempt_at: %v", id, rec.NextAttemptAt)
		require.Equal(t, want.lease == nil, rec.LeaseUntil == nil, "%s lease_until: %v", id, rec.LeaseUntil)
		if want.next != nil {
			require.True(t, want.next.Equal(*rec.NextAttemptAt), "%s next_attempt_at: %v, want %v", id, rec.NextAttemptAt, want.next)
		}
		if want.lease != nil {
			require.True(t, want.lease.Equal(*rec.LeaseUntil), "%s lease_until: %v, want %v", id, rec.LeaseUntil, want.lease)
		}
	}
}
