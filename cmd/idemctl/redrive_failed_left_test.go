package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveCountsTheFailedItLeaves: a redrive without -state selected by
// type, object, account or time takes dead letters alone, and ends with a
// line counting the failed events and tasks of its selection that it
// leaves, and the -state that takes them. Once a deploy that failed an
// event type was fixed before its events were dead-lettered, "redrive
// -type T -since 2h -dry-run" said "would redrive 0 events" and nothing
// of the failed events it selected, as though there were none. With
// -state the states are the operator's, and -id says it of each id.
func TestRedriveCountsTheFailedItLeaves(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t) // charge.failed: evt_dead_1 dead-lettered, evt_failed_1 failed
	const left = "not redriven, failed: 1 event of this selection (-state failed takes failed ones, -state dead_letter,failed both)\n"

	r := idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-since", "2h", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 1 event (dry run: none moved)\n"+left, r.stdout)

	r = idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-since", "2h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n"+left, r.stdout)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_dead_1").State)
	require.Equal(t, idempotency.InboxFailed, s.lookup(t, "evt_failed_1").State)

	r = idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 0 events (dry run: none moved)\n"+left, r.stdout)

	r = idemctl(t, s.db, nil, "redrive", "-type", "invoice.paid", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 0 events (dry run: none moved)\n", r.stdout, "no failed event of the selection")

	r = idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-state", "dead_letter", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 0 events (dry run: none moved)\n", r.stdout, "-state given")

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_failed_1", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_failed_1: not redriven: it is failed, not dead_letter (-state failed takes it)\n"+
		"would redrive 0 events (dry run: none moved)\n", r.stdout, "-id: the id's own line")

	r = idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-kind", "task", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 0 tasks (dry run: none moved)\n", r.stdout, "-kind task: no failed task")

	r = idemctl(t, s.db, nil, "redrive", "-type", "charge.failed", "-state", "failed")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 event: pending again, with a fresh attempt budget\n", r.stdout)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_failed_1").State)
}
