package main

import (
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/display"
)

// TestPastedIDNamesThatIDAlone: the id idemctl and the dashboard print in
// a command to paste (display.IDWord), run through /bin/sh and read by
// -id and -after, is that id and no other; an id no such word names gets
// none (the hint leaves the command out): an event's id with a comma,
// which -id split into other ids ("evt_a,evt_b" redrove evt_a and
// evt_b), with white space at its ends, which -id and -after trim, and
// any id with a control character, which was printed otherwise. A
// task's id is taken as it is, so its key may hold all but controls.
func TestPastedIDNamesThatIDAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		id       string
		pastable bool
	}{
		{"evt_1NirD82eZvKYlo2C", true},
		{"evt_it's;$(id)", true},
		{"task:send-receipt:in_1 2;echo it's", true},
		{"task:send-receipt:a,b ", true},
		{"task:send-receipt:a\u00a0b", true},
		{"evt_a,evt_b", false},
		{" evt_1", false},
		{"evt_1\t", false},
		{"evt_\x1b[2J", false},
		{"evt_\u202eabc", false},
		{"task:send-receipt:a\nb", false},
		{"", false},
	} {
		w := display.IDWord(c.id)
		if !c.pastable {
			require.Empty(t, w, "%q", c.id)
			continue
		}
		out, err := exec.Command("/bin/sh", "-c", "printf %s "+w).Output()
		require.NoError(t, err, w)
		var ids idsFlag
		require.NoError(t, ids.Set(string(out)), w)
		require.Equal(t, idsFlag{c.id}, ids, "-id %s", w)
		require.Equal(t, c.id, trimID(string(out)), "-after %s", w)
	}
}

// TestListMoreLeavesOutAnIDNoCommandNames: list's "more" line leaves out
// the -after of a last id a command line cannot give (here one with an
// escape sequence), saying why; it printed the id with U+FFFD in place
// of the escape, an -after of another id.
func TestListMoreLeavesOutAnIDNoCommandNames(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	_, err := s.db.Pool.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{s.db.Schema}.Sanitize()+`.idempotency_inbox
    (event_id, event_type, created, payload, state, received_at, finished_at)
VALUES ('evt_a', 'invoice.paid', $1, '\x7b7d', 'processed', $1, $1),
    (E'evt_\x1b[2Jb', 'invoice.paid', $1, '\x7b7d', 'processed', $1 + interval '1 second', $1)`, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	r := idemctl(t, s.db, nil, "list", "-limit", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "next: -after the last id of -json's records ("+display.IDWordNote+"), or raise -limit")
}
