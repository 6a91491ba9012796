package main

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestChaosChecksFailOnADoubledCredit runs the checks on a run's
// database where one invoice's credit was granted twice by hand: C3 fails
// and says so on its line, and every other check holds; then, where an
// event's inbox row was deleted, C2 fails too, and where an event was
// dead-lettered, C6.
func TestChaosChecksFailOnADoubledCredit(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	var out bytes.Buffer
	res, err := execute(t.Context(), config{
		n: 40, c: 4, workers: 2, accounts: 5, dup: 0.20, twin: 0.05,
		drainTimeout: time.Minute, retryFor: time.Minute, databaseURL: db.URL,
	}, &out)
	require.NoError(t, err, out.String())
	require.True(t, res.OK, out.String())

	_, err = db.Pool.Exec(t.Context(), `UPDATE accounts SET credits = credits + 100
WHERE id = (SELECT min(id) FROM accounts WHERE starts_with(id, $1))`, accountPrefix+res.outcome.tag+"_")
	require.NoError(t, err)
	checks, err := checkRun(t.Context(), db.Pool, res.outcome)
	require.NoError(t, err)
	invoices := int64(res.Invoices)
	for _, c := range checks {
		if c.Name != "C3" {
			require.True(t, c.OK, c.Line)
			continue
		}
		require.False(t, c.OK)
		require.Equal(t, 100*invoices+100, c.Value)
		require.Regexp(t, `^C3 FAIL credits: \d+, must be \d+ \(100 × \d+ distinct invoices\)$`, c.Line)
	}

	// An event the ledger has that the inbox lost fails C2, whose value
	// is the ledger's count.
	_, err = db.Pool.Exec(t.Context(), `DELETE FROM idempotency_inbox
WHERE event_id = (SELECT min(event_id) FROM idempotency_inbox WHERE kind = 'event' AND starts_with(event_id, $1))`, eventPrefix+res.outcome.tag)
	require.NoError(t, err)
	checks, err = checkRun(t.Context(), db.Pool, res.outcome)
	require.NoError(t, err)
	require.Equal(t, "C2", checks[1].Name)
	require.False(t, checks[1].OK, checks[1].Line)
	require.Regexp(t, `^C2 FAIL ledger rows of the run `, checks[1].Line)
	require.Contains(t, checks[1].Line, fmt.Sprintf("(inbox events %d): %d, must be %d", res.Events-1, res.Events, res.Events))

	// A dead letter fails C6.
	_, err = db.Pool.Exec(t.Context(), `UPDATE idempotency_inbox SET state = 'dead_letter'
WHERE event_id = (SELECT min(event_id) FROM idempotency_inbox WHERE kind = 'event' AND starts_with(event_id, $1))`, eventPrefix+res.outcome.tag)
	require.NoError(t, err)
	checks, err = checkRun(t.Context(), db.Pool, res.outcome)
	require.NoError(t, err)
	require.Equal(t, "C6", checks[5].Name)
	require.False(t, checks[5].OK, checks[5].Line)
	require.Equal(t, "C6 FAIL dead letters: 1, must be 0 (none)", checks[5].Line)
}
