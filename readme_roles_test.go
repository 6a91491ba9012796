package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
	"github.com/seed-a84bb619/idempotency/internal/readme"
)

// TestReadmeRoles runs the README's "Roles and privileges" SQL, its names
// made unique to the test, and holds its bullets to what the roles then
// may do: the migration role migrates a fresh schema and owns what
// Migrate creates; the service's role, whose grants on the tables come
// from the default privileges, migrates while nothing is pending,
// applies a synchronous delivery and inbox deliveries (each releasing an
// early guard its handler did not use: a DELETE), forgets, redrives and
// prunes; without USAGE on idempotency_seq an inbox delivery is answered
// 503 ("permission denied for sequence"); it is refused a pending
// migration ("must be owner", none applied) and a missing schema
// ("permission denied for database"). A role with USAGE on the schema
// and SELECT on its tables reads Stats, List, Lookup, Payload and the
// ledger, and runs a dry-run prune, and is refused HeldBy and Redrive
// ("permission denied for table idempotency_inbox"), nothing changed.
func TestReadmeRoles(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := newPgDB(t)
	admin := pgtest.AdminPool(t)

	// Roles are the cluster's: named after the test's schema.
	schema := db.Schema + "-Billing-Webhooks"
	migrator, service, reader := db.Schema+"_webhooks_migrate", db.Schema+"_webhooks_app", db.Schema+"_webhooks_read"
	roles := quoteIdent(migrator) + ", " + quoteIdent(service) + ", " + quoteIdent(reader)
	_, err := admin.Exec(ctx, `CREATE ROLE `+quoteIdent(migrator)+` LOGIN; CREATE ROLE `+quoteIdent(service)+` LOGIN; CREATE ROLE `+quoteIdent(reader)+` LOGIN`)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, q := range []string{`DROP SCHEMA IF EXISTS ` + quoteIdent(schema) + ` CASCADE`, `DROP OWNED BY ` + roles, `DROP ROLE ` + roles} {
			_, err := admin.Exec(ctx, q)
			require.NoError(t, err, q)
		}
	})

	block := rolesSQL(t)
	for readmeName, name := range map[string]string{`"Billing-Webhooks"`: schema, "webhooks_migrate": migrator, "webhooks_app": service} {
		require.Contains(t, block, readmeName, "the README's SQL names %s", readmeName)
		block = strings.ReplaceAll(block, readmeName, quoteIdent(name))
	}
	_, err = admin.Exec(ctx, block)
	require.NoError(t, err, "the README's SQL:\n%s", block)

	// The migration role migrates the schema it owns and owns what
	// Migrate creates.
	mig := storeAs(t, db, migrator, schema)
	require.NoError(t, mig.Migrate(ctx))
	rows, err := admin.Query(ctx, `SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind IN ('r', 'S')`, quoteIdent(schema))
	require.NoError(t, err)
	owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{migrator}, owners, "the tables and the sequence are the migration role's")

	// The service's role: Migrate with nothing pending, then its work.
	app := storeAs(t, db, service, schema)
	require.NoError(t, app.Migrate(ctx), "nothing pending: reads idempotency_migrations, changes nothing")

	var failing atomic.Bool
	failing.Store(true)
	hs := idempotency.NewHandlers()
	idempotency.NewAction(hs, idempotency.ActionSpec{Name: "credit-invoice", Key: "invoice id", Owners: []string{"invoice.paid"}, KeyIsObjectID: true},
		func(context.Context, idempotency.Tx, string, struct{}) error { return nil })
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.ObjectID == "in_dead" && failing.Load() {
			return errors.New("the handler's own failure")
		}
		// The action's key, claimed with the event, is not asked for:
		// the store deletes that guard before the commit.
		_, err := tx.Guard(ctx, "invoice", ev.ObjectID)
		return err
	})
	logger, logs := testLogger()
	config := idempotency.Config{Secrets: []string{testSecret}, Logger: logger}
	h, err := idempotency.NewHandler(app, hs, config)
	require.NoError(t, err)
	answer := idempotencytest.Deliver(h, invoicePayload(t, "evt_sync", "in_sync", "acct_1"), testSecret)
	require.Equal(t, idempotency.OutcomeProcessed, answer.Outcome, "%+v\n%s", answer, logs)

	clock := idempotencytest.NewClock(time.Now().UTC())
	inboxConfig := idempotency.InboxConfig{Now: clock.Now, Logger: logger, MaxAttempts: 1}
	inbox, err := idempotency.NewInbox(app, hs, inboxConfig)
	require.NoError(t, err)
	ih, err := inbox.Handler(config)
	require.NoError(t, err)
	for _, id := range []string{"inbox", "dead"} {
		answer := idempotencytest.Deliver(ih, invoicePayload(t, "evt_"+id, "in_"+id, "acct_1"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, answer.Outcome, "%+v\n%s", answer, logs)
	}
	// Each inbox event takes its number from the sequence as it is stored.
	sequence := `USAGE ON SEQUENCE ` + quoteIdent(schema) + `.idempotency_seq`
	_, err = admin.Exec(ctx, `REVOKE `+sequence+` FROM `+quoteIdent(service))
	require.NoError(t, err)
	answer = idempotencytest.Deliver(ih, invoicePayload(t, "evt_unnumbered", "in_unnumbered", "acct_1"), testSecret)
	require.Equal(t, http.StatusServiceUnavailable, answer.Status, "%+v", answer)
	require.Contains(t, logs.String(), "permission denied for sequence idempotency_seq")
	_, err = admin.Exec(ctx, `GRANT `+sequence+` TO `+quoteIdent(service))
	require.NoError(t, err)

	n, err := inbox.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	requireInboxState(t, inbox, "evt_inbox", idempotency.InboxProcessed)
	requireInboxState(t, inbox, "evt_dead", idempotency.InboxDeadLetter)

	forgot, err := app.Forget(ctx, "evt_sync")
	require.NoError(t, err)
	require.True(t, forgot)
	_, found, err := app.LookupGuard(ctx, "invoice", "in_sync")
	require.NoError(t, err)
	require.False(t, found, "forgotten with its event")

	// The reader: what idemctl's stats, list and show and the dashboard
	// read, all but the events holding one back.
	ro := storeAs(t, db, reader, schema)
	_, err = admin.Exec(ctx, `GRANT USAGE ON SCHEMA `+quoteIdent(schema)+` TO `+quoteIdent(reader)+`; GRANT SELECT ON ALL TABLES IN SCHEMA `+quoteIdent(schema)+` TO `+quoteIdent(reader))
	require.NoError(t, err)
	roInbox, err := idempotency.NewInbox(ro, hs, inboxConfig)
	require.NoError(t, err)
	st, err := roInbox.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, st.Events(idempotency.InboxProcessed))
	require.Equal(t, 1, st.Events(idempotency.InboxDeadLetter))
	recs, err := roInbox.List(ctx, idempotency.InboxFilter{})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	requireInboxState(t, roInbox, "evt_dead", idempotency.InboxDeadLetter)
	_, found, err = roInbox.Payload(ctx, "evt_dead")
	require.NoError(t, err)
	require.True(t, found)
	_, found, err = ro.LookupEvent(ctx, "evt_inbox")
	require.NoError(t, err)
	require.True(t, found)
	_, err = ro.ListEvents(ctx, idempotency.EventFilter{ObjectID: "in_inbox"})
	require.NoError(t, err)

	_, err = roInbox.HeldBy(ctx, "evt_dead")
	require.ErrorContains(t, err, "permission denied for table idempotency_inbox", "HeldBy reads FOR SHARE, which asks UPDATE")
	_, err = roInbox.Redrive(ctx, idempotency.RedriveFilter{})
	require.ErrorContains(t, err, "permission denied for table idempotency_inbox")
	rec := requireInboxState(t, inbox, "evt_dead", idempotency.InboxDeadLetter)
	require.Zero(t, rec.Redrives, "the refused redrive changed nothing")

	// The service's role redrives, and prunes what is past its windows.
	failing.Store(false)
	n, err = inbox.Redrive(ctx, idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = inbox.WorkDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	requireInboxState(t, inbox, "evt_dead", idempotency.InboxProcessed)

	keys := idempotency.DefaultEventIDRetention + idempotency.DefaultDeadLetterRetention
	later := clock.Now().Add(keys + 24*time.Hour)
	r := idempotency.Retention{Guards: keys, Pause: -1, Now: func() time.Time { return later }}
	want := idempotency.PruneReport{EventIDs: 2, Events: 2, Guards: 2} // both inbox events, their claims and their guards
	dry := r
	dry.DryRun = true
	rep, err := ro.Prune(ctx, dry)
	require.NoError(t, err, "a dry run only reads")
	require.Equal(t, want, rep)
	rep, err = app.Prune(ctx, r)
	require.NoError(t, err)
	require.Equal(t, want, rep)

	// A missing schema: Migrate would create it, with CREATE on the
	// database, which the service's role does not have.
	err = storeAs(t, db, service, schema+"-missing").Migrate(ctx)
	require.ErrorContains(t, err, "permission denied for database")

	// A release's migration pending (the last one, forgotten): the
	// service's role may not alter the tables it does not own.
	var version int
	var name string
	require.NoError(t, admin.QueryRow(ctx, `DELETE FROM `+quoteIdent(schema)+`.idempotency_migrations
WHERE version = (SELECT max(version) FROM `+quoteIdent(schema)+`.idempotency_migrations) RETURNING version, name`).Scan(&version, &name))
	err = app.Migrate(ctx)
	require.ErrorContains(t, err, fmt.Sprintf("migration %03d_%s: ERROR: must be owner of table", version, name))
	var applied int
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM `+quoteIdent(schema)+`.idempotency_migrations WHERE version = $1`, version).Scan(&applied))
	require.Zero(t, applied, "none applied")
}

// rolesSQL returns the SQL block of the README's "Roles and privileges".
func rolesSQL(t *testing.T) string {
	t.Helper()
	_, section, ok := strings.Cut(readme.Section(t, ".", "PostgreSQL"), "\n### Roles and privileges\n")
	require.True(t, ok, "the README has no section \"Roles and privileges\"")
	section, _, _ = strings.Cut(section, "\n### ")
	_, block, ok := strings.Cut(section, "```sql\n")
	require.True(t, ok, "the section has no SQL block")
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)
	return block
}

// requireInboxState requires in's record of eventID to be in state, and
// returns it.
func requireInboxState(t *testing.T, in *idempotency.Inbox, eventID string, state idempotency.InboxState) idempotency.InboxRecord {
	t.Helper()
	rec, found, err := in.Lookup(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, found, eventID)
	require.Equal(t, state, rec.State, eventID)
	return rec
}
