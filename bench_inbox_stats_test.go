package idempotency_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// BenchmarkPgxInboxStats measures Inbox.Stats, what every alert scrape and
// every otel collection runs, on an inbox of IDEMPOTENCY_STATS_ROWS
// finished rows (100,000 by default, two thirds of them events; the
// README's numbers are for 1,500,000) and 1,000 still to apply, beside
// the statement it replaced, which counted every row (count-every-row):
//
//	IDEMPOTENCY_STATS_ROWS=1500000 go test -run '^$' -bench PgxInboxStats -benchtime 20x
func BenchmarkPgxInboxStats(b *testing.B) {
	rows := benchRows(b, "IDEMPOTENCY_STATS_ROWS", 100000)
	ctx := b.Context()
	db := newPgDB(b)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(b, err)
	require.NoError(b, store.Migrate(ctx))
	inbox := pgx.Identifier{db.Schema, "idempotency_inbox"}.Sanitize()
	// Payloads of about 1 KB that lz4 does not shrink, as Stripe's events
	// take room in the table.
	_, err = db.Pool.Exec(ctx, `INSERT INTO `+inbox+` (kind, event_id, event_type, created, payload, state, received_at,
    attempted_at, next_attempt_at, finished_at)
SELECT CASE WHEN g % 3 = 0 THEN 'task' ELSE 'event' END, 'evt_' || g, 'invoice.paid', r, convert_to(repeat(md5(g::text), 32), 'UTF8'),
    CASE WHEN g > $2 THEN 'pending' WHEN g % 100 = 1 THEN 'skipped' ELSE 'processed' END, r,
    CASE WHEN g <= $2 THEN r END, CASE WHEN g > $2 THEN r END, CASE WHEN g <= $2 THEN r + interval '1 second' END
FROM generate_series(1, $2::int + 1000) AS g, LATERAL (SELECT $1::timestamptz + make_interval(secs => g) AS r) AS t`,
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), rows)
	require.NoError(b, err)
	_, err = db.Pool.Exec(ctx, `VACUUM ANALYZE `+inbox)
	require.NoError(b, err)
	in, err := idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(b, err)

	b.Run("stats", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			st, err := in.Stats(ctx)
			require.NoError(b, err)
			require.Equal(b, 1000, st.Counts[idempotency.InboxPending])
		}
	})
	b.Run("count-every-row", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, err := idempotency.PgxStatsEveryRow(ctx, store, db.Pool)
			require.NoError(b, err)
			require.Equal(b, rows+1000, n)
		}
	})
}
