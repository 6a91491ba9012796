package idempotency_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestPgxInboxStatsReadsNoFinishedRowPastItsLimit: Stats reads the rows
// still to apply, the dead letters, and of each finished kind and state
// no more rows than its exact limit; past it, the count is PostgreSQL's
// estimate, marked so. It counted every row of the table: with 1.5
// million inbox rows, 1.1-1.6 s a scrape, now 30-37 ms
// (BenchmarkPgxInboxStats).
func TestPgxInboxStatsReadsNoFinishedRowPastItsLimit(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	const limit = 1000
	idempotency.SetPgxStatsExactLimit(b.store, limit)
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertInboxRows(t, b, base, "evt_done", "event", "", "processed", 1, 20000)
	insertInboxRows(t, b, base, "task:send:done", "task", "", "processed", 1, 3000)
	insertInboxRows(t, b, base, "evt_dead", "event", "", "dead_letter", 20001, limit+200)
	insertInboxRows(t, b, base, "evt_wait", "event", "in_1", "pending", 30001, 30)
	insertInboxRows(t, b, base, "evt_fail", "event", "in_2", "failed", 30101, 5)
	insertInboxRows(t, b, base, "task:send:busy", "task", "", "processing", 30201, 2)
	_, err := b.db.Pool.Exec(ctx, `ANALYZE `+pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize())
	require.NoError(t, err)

	conn, err := b.db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	actual := regexp.MustCompile(`actual time=[0-9.]+\.\.[0-9.]+ rows=(\d+) loops=(\d+)`)
	for _, generic := range []bool{false, true} {
		plan, err := idempotency.PgxStatsPlan(ctx, b.store, conn.Conn(), generic)
		require.NoError(t, err)
		assert.NotContains(t, plan, "Seq Scan", "generic %t:\n%s", generic, plan)
		assert.Contains(t, plan, "Index Only Scan using idempotency_inbox_finished_idx", "generic %t:\n%s", generic, plan)
		assertFewRowsPassedOver(t, plan, 10)
		for _, m := range actual.FindAllStringSubmatch(plan, -1) {
			rows, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			// The dead letters are all counted: limit+200 in one loop.
			assert.LessOrEqual(t, rows, limit+200, "a node read more rows than the limit, generic %t:\n%s", generic, plan)
		}
	}

	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	st, err := in.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[idempotency.InboxState]bool{idempotency.InboxProcessed: true}, st.Estimated)
	// A freshly analyzed table this small is sampled whole: the estimate
	// is the count, give or take the planner's rounding.
	assert.InEpsilon(t, 23000, st.Counts[idempotency.InboxProcessed], 0.02)
	assert.InEpsilon(t, 3000, st.TaskCounts[idempotency.InboxProcessed], 0.02)
	want := map[idempotency.InboxState]int{
		idempotency.InboxDeadLetter: limit + 200, idempotency.InboxPending: 30, idempotency.InboxFailed: 5,
		idempotency.InboxProcessing: 2, idempotency.InboxSkipped: 0, idempotency.InboxIgnored: 0,
	}
	for state, n := range want {
		assert.Equal(t, n, st.Counts[state], "%s, counted", state)
	}
	assert.Equal(t, 2, st.TaskCounts[idempotency.InboxProcessing])
	assert.Equal(t, base.Add(30001*time.Second), st.OldestPending.UTC())
}

// TestPgxInboxStatsUnderTheLimitCountsEveryRow: below the limit nothing
// is estimated, and a count at the limit is exact too.
func TestPgxInboxStatsUnderTheLimitCountsEveryRow(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	idempotency.SetPgxStatsExactLimit(b.store, 40)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertInboxRows(t, b, base, "evt_done", "event", "", "processed", 1, 40)
	insertInboxRows(t, b, base, "task:send:done", "task", "", "processed", 1, 39)
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	assert.Nil(t, st.Estimated)
	assert.Equal(t, 79, st.Counts[idempotency.InboxProcessed])
	assert.Equal(t, 39, st.TaskCounts[idempotency.InboxProcessed])
}

// TestPgxInboxStatsLastAttemptOfAnAttemptFinishedEarly: LastAttempt is
// the newest attempt's start also when 24 older attempts, which took
// longer, finished after it: Stats reads the rows finished since the
// newest start among the last finished, not the last finished alone.
func TestPgxInboxStatsLastAttemptOfAnAttemptFinishedEarly(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertInboxRows(t, b, base, "evt_done", "event", "", "processed", 1, 25)
	inbox := pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()
	// evt_done_25 started last (at base+100 s) and finished at once; the
	// others started at base+1..24 s and finished at base+102..125 s.
	_, err := b.db.Pool.Exec(t.Context(), `UPDATE `+inbox+` SET
    attempted_at = $1::timestamptz + make_interval(secs => CASE WHEN event_id = 'evt_done_25' THEN 100 ELSE substr(event_id, 10)::int END),
    finished_at = $1::timestamptz + make_interval(secs => CASE WHEN event_id = 'evt_done_25' THEN 101 ELSE 101 + substr(event_id, 10)::int END)`, base)
	require.NoError(t, err)
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	assert.Equal(t, base.Add(100*time.Second), st.LastAttempt.UTC())
}

// TestPgxInboxStatsCountsABacklogPastTheLimit: the states still to apply
// are counted however many rows they hold, never estimated: a backlog of
// one kind past the exact limit failed Stats ("no rows in result set"),
// the alerts and the dashboard losing the inbox when it mattered most.
func TestPgxInboxStatsCountsABacklogPastTheLimit(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	const limit = 40
	idempotency.SetPgxStatsExactLimit(b.store, limit)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertInboxRows(t, b, base, "evt_wait", "event", "in_1", "pending", 1, limit+5)
	insertInboxRows(t, b, base, "task:send:fail", "task", "", "failed", 101, limit+1)
	insertInboxRows(t, b, base, "evt_busy", "event", "", "processing", 201, limit+2)
	insertInboxRows(t, b, base, "evt_dead", "event", "", "dead_letter", 301, limit+3)
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	assert.Nil(t, st.Estimated)
	assert.Equal(t, limit+5, st.Counts[idempotency.InboxPending])
	assert.Equal(t, limit+1, st.TaskCounts[idempotency.InboxFailed])
	assert.Equal(t, limit+2, st.Counts[idempotency.InboxProcessing])
	assert.Equal(t, limit+3, st.Counts[idempotency.InboxDeadLetter])
	assert.Equal(t, base.Add(time.Second), st.OldestPending.UTC())
}

// TestPgxInboxStatsCountsAGroupTheStatisticsDoNotKnow: past the exact
// limit, a group whose estimate is below what Stats counted (a table
// never analyzed: restored, upgraded, autovacuum off or not yet come) is
// counted row by row, not reported as the limit. It read "~41" for 1,000
// processed events, PostgreSQL's guess without statistics being a row.
func TestPgxInboxStatsCountsAGroupTheStatisticsDoNotKnow(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{})
	const limit = 40
	idempotency.SetPgxStatsExactLimit(b.store, limit)
	_, err := b.db.Pool.Exec(t.Context(), `ALTER TABLE `+pgx.Identifier{b.db.Schema, "idempotency_inbox"}.Sanitize()+
		` SET (autovacuum_enabled = false)`)
	require.NoError(t, err)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	insertInboxRows(t, b, base, "evt_done", "event", "", "processed", 1, 1000)
	insertInboxRows(t, b, base, "task:send:done", "task", "", "processed", 2001, 30)
	in, err := idempotency.NewInbox(b.store, idempotency.NewHandlers(), idempotency.InboxConfig{})
	require.NoError(t, err)
	st, err := in.Stats(t.Context())
	require.NoError(t, err)
	assert.Nil(t, st.Estimated)
	assert.Equal(t, 1000, st.Events(idempotency.InboxProcessed))
	assert.Equal(t, 30, st.TaskCounts[idempotency.InboxProcessed])
}
