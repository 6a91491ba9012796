package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedriveDryRunOfTasksSaysLookAtTheProvider: a dry run that counts
// tasks says, under its count, that a task's failed attempt may have had
// its effect all the same and to look at the provider's log first, as
// the dashboard says beside a task's Redrive: the count alone led to a
// redrive that sent a customer's email again. A dry run of events alone,
// and the redrive itself, do not say it.
func TestRedriveDryRunOfTasksSaysLookAtTheProvider(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	_, id := deadLetteredTask(t, db, "cus_1")
	r := idemctl(t, db, nil, "redrive", "-id", id, "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 1 task (dry run: none moved)\n"+tasksRedriveNote+"\n", r.stdout)
	require.Contains(t, tasksRedriveNote, "idempotency key")

	r = idemctl(t, db, nil, "redrive", "-id", "evt_notify", "-state", "processed", "-dry-run")
	require.NotContains(t, r.stdout, tasksRedriveNote, "no task counted")
	r = idemctl(t, db, nil, "redrive", "-id", id)
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 task: pending again, with a fresh attempt budget\n", r.stdout)
}
