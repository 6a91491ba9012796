package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRedriveIDNotMovedSaysWhy: redrive -id names each id it does not
// move and why (its state, its kind, its type, not found), and exits 3
// when an id is not found, as forget does (with -json, in the document's
// not_redriven); a run that moves nothing does
// not say the events are pending again. An id mistyped, or one failed
// and not dead-lettered (the dashboard's button takes both), printed
// "redrove 0 events: pending again, with a fresh attempt budget" and
// exited 0.
func TestRedriveIDNotMovedSaysWhy(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1,evt_failed_1,evt_paid_1,evt_unknown", "-dry-run")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Equal(t, "evt_failed_1: not redriven: it is failed, not dead_letter (-state failed takes it)\n"+
		"evt_paid_1: not redriven: it is processed, not dead_letter\n"+
		"evt_unknown: not found: the inbox has no event or task with this id\n"+
		"would redrive 1 event (dry run: none moved)\n", r.stdout)
	require.Equal(t, "idemctl: redrive: 1 of 4 ids not found: evt_unknown\n", r.stderr)

	// -json: the same report, for a script, in one document.
	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1,evt_failed_1,evt_unknown", "-dry-run", "-json")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Equal(t, "idemctl: redrive: 1 of 3 ids not found: evt_unknown\n", r.stderr)
	type redriveDoc struct {
		Events      int  `json:"events"`
		Tasks       int  `json:"tasks"`
		DryRun      bool `json:"dry_run"`
		NotRedriven []struct {
			ID       string `json:"id"`
			Reason   string `json:"reason"`
			NotFound bool   `json:"not_found"`
		} `json:"not_redriven"`
	}
	doc := decode[redriveDoc](t, r)
	require.Equal(t, 1, doc.Events)
	require.Zero(t, doc.Tasks)
	require.True(t, doc.DryRun)
	require.Len(t, doc.NotRedriven, 2)
	require.Equal(t, "evt_failed_1", doc.NotRedriven[0].ID)
	require.Equal(t, "it is failed, not dead_letter (-state failed takes it)", doc.NotRedriven[0].Reason)
	require.False(t, doc.NotRedriven[0].NotFound)
	require.Equal(t, "evt_unknown", doc.NotRedriven[1].ID)
	require.True(t, doc.NotRedriven[1].NotFound)
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State, "a dry run moves nothing")

	r = idemctl(t, s.db, nil, "redrive", "-kind", "task", "-id", "evt_dead_1", "-id", "task:send-receipt:in_1", "-type", "send-receipt")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_dead_1: not redriven: an event, and -kind task keeps tasks\n"+
		"task:send-receipt:in_1: not redriven: it is processed, not dead_letter\n"+
		"redrove 0 tasks: none selected is dead_letter\n", r.stdout)
	require.Empty(t, r.stderr)

	r = idemctl(t, s.db, nil, "redrive", "-kind", "event", "-id", "task:send-receipt:in_1", "-id", "evt_paid_1,evt_paid_1", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "task:send-receipt:in_1: not redriven: a task, and -kind event keeps events\n"+
		"evt_paid_1: not redriven: it is processed, not dead_letter\n"+
		"would redrive 0 events (dry run: none moved)\n", r.stdout, "in the order given, each id once")

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1", "-type", "invoice.paid", "-since", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_dead_1: not redriven: of type charge.failed, not invoice.paid\n"+
		"redrove 0 events: none selected is dead_letter\n", r.stdout)
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State)

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1", "-until", "1h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_dead_1: not redriven: received at or after -until\n"+
		"redrove 0 events: none selected is dead_letter\n", r.stdout)

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1", "-state", "failed", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_dead_1: not redriven: it is dead_letter, not failed (-state dead_letter takes it)\n"+
		"would redrive 0 events (dry run: none moved)\n", r.stdout)

	r = idemctl(t, s.db, nil, "redrive", "-id", "evt_dead_1", "-id", "evt_failed_1", "-state", "dead_letter,failed")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 2 events: pending again, with a fresh attempt budget\n", r.stdout)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_dead_1").State)
}
