package idempotency_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxPruneFinishedReadsFewRows: a prune deletes the finished inbox
// events (processed, skipped, ignored), the dead letters and, when
// Retention.Tasks is set, the finished tasks (processed, skipped), each
// batch under the prune lock. With the states in one condition (state IN (...)), PostgreSQL
// took the rows deleted for a large share of the table, chose a
// sequential scan, and read every row that stood before them in the
// table: the rows the prune keeps, and the last batch of a step the
// whole table (an inbox of 1.5 million rows, half of them expired
// events: 1.4 to 4.2 s for that batch). Each batch is to read its rows
// on idempotency_inbox_finished_idx, state by state, and delete n rows
// across the states, the plan as generic as a connection's cached
// statement's after five runs.
func TestPgxPruneFinishedReadsFewRows(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insert := func(what, kind, state string, from, n int) {
		t.Helper()
		insertInboxRows(t, b, base, what, kind, "", state, from, n)
	}
	// In the table's order: 30,000 rows a prune keeps, then the finished
	// rows it deletes, a third of each in every state, and a backlog.
	insert("evt_dead", "event", "dead_letter", 1, 15000)
	insert("task_dead", "task", "dead_letter", 1, 15000)
	insert("evt_processed", "event", "processed", 20001, 7000)
	insert("evt_skipped", "event", "skipped", 30001, 7000)
	insert("evt_ignored", "event", "ignored", 40001, 7000)
	insert("task_processed", "task", "processed", 20001, 7000)
	insert("task_skipped", "task", "skipped", 30001, 7000)
	insert("evt_pending", "event", "pending", 50001, 2000)
	conn := analyzedInboxConn(t, b)
	// before is past every finished row, the dead letters' too: what
	// keeps them is that the step reads other states.
	before := base.Add(60000 * time.Second)
	// Per step: the rows it deletes, and the states it reads.
	steps := map[string]struct{ rows, states int }{
		"events": {21000, 3}, "tasks": {14000, 2}, "dead letters": {15000, 1}, "dead tasks": {15000, 1},
	}
	for step, want := range steps {
		for _, n := range []int{1000, 20000} {
			plan, err := idempotency.PgxPruneInboxPlan(ctx, b.store, conn, step, before, n)
			require.NoError(t, err)
			assert.NotContains(t, plan, "Seq Scan", "%s, batch of %d:\n%s", step, n, plan)
			assert.Contains(t, plan, "idempotency_inbox_finished_idx", "%s, batch of %d:\n%s", step, n, plan)
			assertFewRowsPassedOver(t, plan, 100)
			// The batch deletes n rows, or every row of the step when
			// fewer.
			deleted := min(n, want.rows)
			assert.Regexp(t, regexp.MustCompile(`Delete on \S+\s+\(cost=[^)]*\) \(actual time=[0-9.]+ rows=`+strconv.Itoa(deleted)+` loops=1\)`), plan,
				"%s, batch of %d deletes %d rows:\n%s", step, n, deleted, plan)
			if n > want.rows {
				// Every state's rows are read, each on the index.
				assert.Equal(t, want.states, strings.Count(plan, "Index Scan using idempotency_inbox_finished_idx"), plan)
			}
		}
	}
}
