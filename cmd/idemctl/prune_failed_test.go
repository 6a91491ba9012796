package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPruneFailedSaysWhatItDeleted: a prune that fails (here on a database
// that may only be read, so its first batch does) says that it stopped on
// an error and what it had deleted before it, not "deleted 0 rows:" as if
// it had run to the end; the error follows on stderr. A dry run, which
// only reads, runs there.
func TestPruneFailedSaysWhatItDeleted(t *testing.T) {
	t.Parallel()
	s := seedOld(t, 3)
	env := map[string]string{"DATABASE_URL": pgtest.WithOptions(s.db.URL, "-c default_transaction_read_only=on")}

	r := idemctl(t, s.db, env, "prune", "-quiet")
	require.NotEqual(t, 0, r.code, r.stdout)
	require.Equal(t, "stopped by an error after deleting 0 rows, every batch reported committed:\n  event ids     0\n  events        0\n  dead letters  0\n  guards        0\n  tasks         0\n  objects       0\n", r.stdout)
	require.Regexp(t, `^idemctl: .*read-only`, r.stderr)
	require.Equal(t, 6, inboxCount(t, s), "nothing deleted")

	r = idemctl(t, s.db, env, "prune", "-dry-run", "-quiet")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "would delete 4 rows")
}

// TestPruneDryRunFailedPrintsNoCounts: a dry run that failed deleted
// nothing and had not made every count: it prints none, the error alone
// says what happened.
func TestPruneDryRunFailedPrintsNoCounts(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &app{stdout: &out}
	require.NoError(t, a.writePrune(idempotency.PruneReport{EventIDs: 3}, true, pruneFailed, false))
	require.Empty(t, out.String())
}
