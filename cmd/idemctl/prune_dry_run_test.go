package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPruneDryRun: prune -dry-run reports what prune with the same
// windows deletes and clears, says "would", and leaves the database as it
// was: every inbox row, the task's arguments and the claims. It does not
// wait for another prune (never exit 5), and the prune run afterwards
// reports the same counts.
func TestPruneDryRun(t *testing.T) {
	t.Parallel()
	s := seedOld(t, 3)
	state := func() ([]idempotency.InboxRecord, bool, bool) {
		t.Helper()
		recs, err := s.inbox.List(t.Context(), idempotency.InboxFilter{})
		require.NoError(t, err)
		_, args, err := s.inbox.Payload(t.Context(), "task:send-receipt:in_1")
		require.NoError(t, err)
		_, claimed, err := s.store.LookupEvent(t.Context(), "evt_old_paid")
		require.NoError(t, err)
		return recs, args, claimed
	}
	recs, args, claimed := state()
	require.Len(t, recs, 6, "the dead letter, the processed event and its task, 3 ignored events")
	require.True(t, args)
	require.True(t, claimed)

	r := idemctl(t, s.db, nil, "prune", "-dry-run", "-progress", "lines")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "would delete 4 rows (dry run: nothing deleted):\n  event ids     0\n  events        4\n  dead letters  0\n  guards        0\n  tasks         0\n  objects       0\n"+
		"would clear the arguments of 1 finished task, its row kept\n", r.stdout)
	require.Equal(t, "idemctl: prune: counting (dry run)\n", r.stderr)

	// Another prune's batch in flight holds the prune lock: a dry run
	// does not wait for it.
	tx, err := s.db.Pool.Begin(t.Context())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock(hashtextextended('idempotency.prune:' || $1, 0))`, s.db.Schema)
	require.NoError(t, err)
	r = idemctl(t, s.db, nil, "prune", "-dry-run", "-dead-letters", "20d", "-json", "-quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, `"dry_run": true`)
	want := pruneJSON{Events: 4, DeadLetters: 1, Total: 5, TaskArgsCleared: 1, DryRun: true}
	require.Equal(t, want, decode[pruneJSON](t, r))
	require.NoError(t, tx.Rollback(t.Context()))

	gotRecs, gotArgs, gotClaimed := state()
	require.Equal(t, recs, gotRecs, "no inbox row deleted or changed")
	require.True(t, gotArgs, "the task's arguments are kept")
	require.True(t, gotClaimed, "the claim is kept")

	r = idemctl(t, s.db, nil, "prune", "-dead-letters", "20d", "-json", "-quiet")
	require.Equal(t, 0, r.code, r.stderr)
	want.DryRun = false
	require.Equal(t, want, decode[pruneJSON](t, r), "the prune deletes and clears what the dry run counted")
	require.Equal(t, 1, inboxCount(t, s), "the task, kept by default")
}

// TestPruneDryRunInterrupted: a dry run stopped by SIGINT or SIGTERM says
// that it deleted nothing and shows no counts: the signal cancels the count
// it is running, and the kinds it had not counted would read 0 (a dry run
// stopped during its first count said "so far it would delete 0 rows" of a
// database with 400,000 rows to delete). -json keeps what it had counted,
// with "interrupted": true.
func TestPruneDryRunInterrupted(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &app{stdout: &out}
	require.NoError(t, a.writePrune(idempotency.PruneReport{EventIDs: 3, TaskArgsCleared: 2}, true, pruneInterrupted, false))
	require.Equal(t, "interrupted: the dry run stopped before it had counted everything; nothing deleted "+
		"(run it again for the counts)\n", out.String())

	out.Reset()
	require.NoError(t, a.writePrune(idempotency.PruneReport{EventIDs: 3}, true, pruneInterrupted, true))
	require.Contains(t, out.String(), `"interrupted": true`)
	require.Contains(t, out.String(), `"dry_run": true`)
	help := idemctl(t, nil, nil, "prune", "-h")
	require.Contains(t, strings.Join(strings.Fields(help.stdout+help.stderr), " "),
		"Interrupted (exit 130), it shows no counts: it had not counted everything")
}
