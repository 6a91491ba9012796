package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedriveCountNamesWhatMoved: redrive's line names what its -kind
// selects, in the number its count needs. `-kind task` printed "redrove
// 1 events", and a single event "1 events". Without -kind, the rows are
// counted by kind: a dead-lettered task alone was "1 event".
func TestRedriveCountNamesWhatMoved(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	in, id := deadLetteredTask(t, db, "cus_1")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-kind", "event", "-all", "-dry-run"}, "would redrive 0 events (dry run: none moved)\n"},
		{[]string{"-kind", "task", "-all", "-dry-run"}, "would redrive 1 task (dry run: none moved)\n" + tasksRedriveNote + "\n"},
		{[]string{"-all", "-dry-run"}, "would redrive 1 task (dry run: none moved)\n" + tasksRedriveNote + "\n"},
		{[]string{"-kind", "task", "-all"}, "redrove 1 task: pending again, with a fresh attempt budget\n"},
		{[]string{"-kind", "task", "-all"}, "redrove 0 tasks: none selected is dead_letter\n"},
	} {
		r := idemctl(t, db, nil, append([]string{"redrive"}, c.args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, c.want, r.stdout, c.args)
	}
	rec, _, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxPending, rec.State)
}
