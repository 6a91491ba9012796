package main

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedriveWithoutKindIsOneStatement: redrive without -kind moves the
// events and the tasks in one statement, and still counts each kind. It
// ran the events' statement, then the tasks': when the tasks' failed, the
// events stayed moved, a redrive half done. Here a trigger refuses the
// task's move: nothing moves, the event stays dead-lettered.
func TestRedriveWithoutKindIsOneStatement(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	_, task := deadLetteredTask(t, db, "cus_atomic")
	s := newServiceOn(t, db, nil)
	s.deliver(t, "evt_dead_1", "charge.failed", "ch_1")
	s.work(t, s.dead)
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State)

	schema := pgx.Identifier{db.Schema}.Sanitize()
	_, err := db.Pool.Exec(t.Context(), `CREATE FUNCTION `+schema+`.refuse_task_redrive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'task redrive refused'; END $$;
CREATE TRIGGER refuse_task_redrive BEFORE UPDATE ON `+schema+`.idempotency_inbox
FOR EACH ROW WHEN (OLD.kind = 'task' AND NEW.state = 'pending') EXECUTE FUNCTION `+schema+`.refuse_task_redrive()`)
	require.NoError(t, err)

	r := idemctl(t, db, nil, "redrive", "-all")
	require.NotEqual(t, 0, r.code, r.stdout)
	require.Empty(t, r.stdout)
	require.NotContains(t, r.stderr, "redrove", "nothing moved")
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State, "the event's move is undone with the task's")
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, task).State)

	_, err = db.Pool.Exec(t.Context(), `DROP TRIGGER refuse_task_redrive ON `+schema+`.idempotency_inbox`)
	require.NoError(t, err)
	r = idemctl(t, db, nil, "redrive", "-all", "-dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would redrive 1 event and 1 task (dry run: none moved)\n"+tasksRedriveNote+"\n", r.stdout)
	r = idemctl(t, db, nil, "redrive", "-all")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "redrove 1 event and 1 task: pending again, with a fresh attempt budget\n", r.stdout)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_dead_1").State)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, task).State)
}
