package idempotency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// execMode has pgx send parameters and read results as text, as the
// README asks behind PgBouncer before 1.21 (default_query_exec_mode=exec).
func execMode(c *pgxpool.Config) { c.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec }

// TestPgxTimesUnderUnusualTimeSettings: a role or database whose TimeZone,
// DateStyle order and IntervalStyle are unusual changes no time the store
// keeps, compares or reports, whether pgx reads results in binary (its
// default) or as text (exec mode): received, attempted and due times, the
// backoff after a failure, the lease's end, Stats' oldest, the ledger's
// and the recovery checkpoint's.
func TestPgxTimesUnderUnusualTimeSettings(t *testing.T) {
	t.Parallel()
	settings := map[string]string{"TimeZone": "Pacific/Chatham", "DateStyle": "ISO, DMY", "IntervalStyle": "postgres_verbose"}
	for name, configure := range map[string]func(*pgxpool.Config){"binary": nil, "exec": execMode} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newPgBackendWithSettings(t, settings, configure)
			p := newPgInbox(t, b, idempotency.InboxConfig{Lease: time.Minute, Backoff: func(n int) time.Duration { return time.Duration(n) * time.Hour }})
			received := p.clock.Now()
			p.deliver(t, "evt_tz", "in_tz", 0)
			st, err := p.inbox.Stats(t.Context())
			require.NoError(t, err)
			require.True(t, st.OldestPending.Equal(received), "oldest pending %v, received %v", st.OldestPending, received)

			leased := p.lease(t, 1)
			r := p.record(t, "evt_tz")
			require.True(t, r.ReceivedAt.Equal(received), "%v", r.ReceivedAt)
			require.True(t, r.AttemptedAt.Equal(received), "%v", r.AttemptedAt)
			require.True(t, r.Created.Equal(time.Unix(pgInboxCreated, 0)), "%v", r.Created)
			holders, err := p.inbox.HeldBy(t.Context(), "evt_tz")
			require.NoError(t, err)
			require.Empty(t, holders, "a worker applies it")

			p.mu.Lock()
			p.fail = func(string) error { return errors.New("declined") }
			p.mu.Unlock()
			idempotency.ApplyLeased(t.Context(), p.inbox, leased[0])
			r = p.record(t, "evt_tz")
			require.Equal(t, idempotency.InboxFailed, r.State)
			require.True(t, r.NextAttemptAt.Equal(received.Add(time.Hour)), "backoff of 1h from %v: %v", received, r.NextAttemptAt)
			p.lease(t, 0) // not due before its backoff
			p.clock.Advance(time.Hour)
			p.lease(t, 1) // due again
			p.clock.Advance(time.Minute - time.Microsecond)
			p.lease(t, 0) // its lease has not ended
			p.clock.Advance(time.Microsecond)
			require.Len(t, p.lease(t, 1), 1, "taken over when its lease ended")

			out, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_tz_sync", EventType: "invoice.paid"},
				func(context.Context, idempotency.Tx) error { return nil })
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, out)
			ev, ok, err := b.store.LookupEvent(t.Context(), "evt_tz_sync")
			require.NoError(t, err)
			require.True(t, ok)
			require.WithinDuration(t, time.Now(), ev.ProcessedAt, time.Minute)
			listed, err := b.store.ListEvents(t.Context(), idempotency.EventFilter{Since: ev.ProcessedAt, Until: ev.ProcessedAt.Add(time.Microsecond)})
			require.NoError(t, err)
			require.Len(t, listed, 1, "the filter's bounds compare with the stored time")

			f := newFakeStripe()
			client := f.serve(t)
			f.add(snapshotEvent(t, "evt_tz_recovered", "customer.created", "cus_tz", time.Now().Add(-time.Hour).Unix()))
			h, err := idempotency.NewHandler(b.store, p.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour), Checkpoint: "tz"})
			require.NoError(t, err)
			require.Equal(t, 1, rep.Ignored)
			last, found, err := idempotency.RecoveryCheckpoint(t.Context(), b.store, "tz")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, "evt_tz_recovered", last)
		})
	}
}

// TestPgxMigrateRefusesDateStyleTimesCannotBeReadIn: pgx reads a time
// sent as text only in DateStyle ISO, so with exec mode (or the simple
// protocol) and a role or database whose DateStyle is SQL, Postgres or
// German every time the store reads failed with "invalid PostgreSQL
// date/time value": the inbox's workers leased nothing, ever, and
// lookups, lists, Stats and Recover's checkpoint failed. Migrate, run at
// start-up, now refuses it before it changes anything, with the cure; in
// pgx's binary default the setting is harmless.
func TestPgxMigrateRefusesDateStyleTimesCannotBeReadIn(t *testing.T) {
	t.Parallel()
	settings := map[string]string{"DateStyle": "SQL, DMY"}
	db := pgtest.NewWithConfig(t, func(c *pgxpool.Config) {
		c.ConnConfig.RuntimeParams["DateStyle"] = settings["DateStyle"]
		execMode(c)
	})
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	err = store.Migrate(t.Context())
	require.ErrorContains(t, err, `DateStyle "SQL, DMY"`)
	require.ErrorContains(t, err, `DateStyle=ISO`)
	var tables int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, db.Schema).Scan(&tables))
	require.Zero(t, tables, "nothing created")

	b := newPgBackendWithSettings(t, settings, nil)
	p := newPgInbox(t, b, idempotency.InboxConfig{})
	p.deliver(t, "evt_sql_style", "in_sql_style", 0)
	require.True(t, p.record(t, "evt_sql_style").ReceivedAt.Equal(p.clock.Now()))
}

// TestPgxTimeReadInDateStyleNamesTheCure: a process that serves without
// running Migrate (its receivers and workers, when a deploy step
// migrates) on connections whose DateStyle pgx cannot read as text
// failed every read of a time with pgx's "invalid PostgreSQL date/time
// value" alone; the error now names the cause and the cure, as Migrate's
// refusal does.
func TestPgxTimeReadInDateStyleNamesTheCure(t *testing.T) {
	t.Parallel()
	b := newPgBackend(t, idempotency.PgxConfig{}) // migrated
	_, err := b.store.Run(t.Context(), idempotency.Claim{EventID: "evt_sql_style", EventType: "invoice.paid"}, nil)
	require.NoError(t, err)

	cfg := b.db.Pool.Config()
	cfg.ConnConfig.RuntimeParams["DateStyle"] = "SQL, DMY"
	execMode(cfg)
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	defer pool.Close()
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: b.db.Schema})
	require.NoError(t, err)
	_, _, err = store.LookupEvent(t.Context(), "evt_sql_style")
	require.ErrorContains(t, err, "DateStyle=ISO")
	require.NotErrorIs(t, err, idempotency.ErrStoreUnavailable)
	_, err = store.ListEvents(t.Context(), idempotency.EventFilter{})
	require.ErrorContains(t, err, "DateStyle=ISO")
}
