package idempotency_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// What sqlc generates (sql_package: "pgx/v5") for the README's two
// queries (Writing handlers, "With sqlc"):
//
//	-- name: GetAccount :one
//	SELECT id, credits FROM accounts WHERE id = $1;
//	-- name: AddCredits :exec
//	UPDATE accounts SET credits = credits + $2 WHERE id = $1;
type sqlcDBTX interface {
	Exec(context.Context, string, ...interface{}) (pgconn.CommandTag, error)
	Query(context.Context, string, ...interface{}) (pgx.Rows, error)
	QueryRow(context.Context, string, ...interface{}) pgx.Row
}

type sqlcQueries struct{ db sqlcDBTX }

func sqlcNew(db sqlcDBTX) *sqlcQueries { return &sqlcQueries{db: db} }

func (q *sqlcQueries) WithTx(tx pgx.Tx) *sqlcQueries { return &sqlcQueries{db: tx} }

type sqlcAccount struct {
	ID      string
	Credits int64
}

const sqlcGetAccount = `-- name: GetAccount :one
SELECT id, credits FROM accounts WHERE id = $1
`

func (q *sqlcQueries) GetAccount(ctx context.Context, id string) (sqlcAccount, error) {
	row := q.db.QueryRow(ctx, sqlcGetAccount, id)
	var i sqlcAccount
	err := row.Scan(&i.ID, &i.Credits)
	return i, err
}

const sqlcAddCredits = `-- name: AddCredits :exec
UPDATE accounts SET credits = credits + $2 WHERE id = $1
`

type AddCreditsParams struct {
	ID      string
	Credits int64
}

func (q *sqlcQueries) AddCredits(ctx context.Context, arg AddCreditsParams) error {
	_, err := q.db.Exec(ctx, sqlcAddCredits, arg.ID, arg.Credits)
	return err
}

// registerSqlc's body is the README's block (Writing handlers, "With
// sqlc"), as it is there: TestReadmeSqlc fails when the two differ.
func registerSqlc(hs *idempotency.Handlers, queries *sqlcQueries) {
	// queries is New(pool): sqlc's Queries on the service's pool.
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID) // once per invoice
		if err != nil || !first {
			return err
		}
		q := queries.WithTx(idempotency.PgxTx(tx)) // commits or rolls back with the claim; queries itself would not
		account, err := q.GetAccount(ctx, ev.Object.Metadata["account_id"])
		if err != nil {
			return err // pgx.ErrNoRows: no account yet (Stripe does not deliver in order): rolled back, retried
		}
		return q.AddCredits(ctx, AddCreditsParams{ID: account.ID, Credits: 100})
	})
}

// TestReadmeSqlc holds the README's "With sqlc" to PostgreSQL, in a
// service whose *sql.DB (stdlib.OpenDBFromPool) and sqlc queries share
// the store's pool, and whose own migration tools keep their version
// tables (golang-migrate's schema_migrations, goose's goose_db_version)
// in the store's schema, made before Migrate and left as they were by
// it. An invoice.paid whose account is not there yet fails with
// pgx.ErrNoRows, nothing kept; delivered again once it is, 10 copies at
// once credit it once, and a second event of the invoice (another id)
// credits nothing. In inbox mode the same handler credits another
// invoice once, its attempt before the account existed retried.
func TestReadmeSqlc(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var block string
	for _, b := range readmeGoBlocks(string(readme)) {
		if strings.Contains(b.src, "queries.WithTx(idempotency.PgxTx(tx))") {
			block = b.src
		}
	}
	require.NotEmpty(t, block, "the README's With sqlc has its block")
	self, err := os.ReadFile("readme_sqlc_test.go")
	require.NoError(t, err)
	_, body, _ := strings.Cut(string(self), "\nfunc registerSqlc(hs *idempotency.Handlers, queries *sqlcQueries) {\n")
	body, _, _ = strings.Cut(body, "\n}\n")
	body = strings.ReplaceAll("\n"+body, "\n\t", "\n")[1:] + "\n"
	require.Equal(t, block, body, "registerSqlc differs from the README's block (Writing handlers, With sqlc): copy the README's here")

	ctx := t.Context()
	db := pgtest.New(t)
	sqlDB := stdlib.OpenDBFromPool(db.Pool) // the service's *sql.DB, on the store's pool
	t.Cleanup(func() { require.NoError(t, sqlDB.Close()) })
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL)`,
		`CREATE TABLE goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp DEFAULT now())`,
		`CREATE TABLE accounts (id text PRIMARY KEY, credits bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO schema_migrations VALUES (3, false)`,
		`INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true), (3, true)`,
	} {
		_, err := sqlDB.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	require.NoError(t, store.Migrate(ctx)) // on every start
	var versions string
	require.NoError(t, sqlDB.QueryRowContext(ctx, `SELECT (SELECT string_agg(version::text, ',') FROM schema_migrations) || ' ' ||
(SELECT string_agg(version_id::text, ',' ORDER BY id) FROM goose_db_version)`).Scan(&versions))
	require.Equal(t, "3 0,3", versions)

	hs := idempotency.NewHandlers()
	registerSqlc(hs, sqlcNew(db.Pool))
	credits := func(account string) int64 {
		t.Helper()
		var n int64
		require.NoError(t, sqlDB.QueryRowContext(ctx, `SELECT credits FROM accounts WHERE id = $1`, account).Scan(&n))
		return n
	}
	paid := func(id, invoice, account string) []byte {
		return idempotencytest.Derive(fixture(t, "invoice.paid"), map[string]any{ // as Stripe sent it
			"id": id, "data.object.id": invoice, "data.object.metadata.account_id": account,
		})
	}

	t.Run("synchronous", func(t *testing.T) {
		h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}})
		require.NoError(t, err)
		first := paid("evt_sync_1", "in_sync", "acct_sync")
		a := idempotencytest.Deliver(h, first, testSecret)
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body) // no account yet: pgx.ErrNoRows
		_, claimed, err := store.LookupGuard(ctx, "invoice-credit", "in_sync")
		require.NoError(t, err)
		require.False(t, claimed, "the guard rolled back with the failed attempt")

		_, err = sqlDB.ExecContext(ctx, `INSERT INTO accounts (id) VALUES ('acct_sync')`)
		require.NoError(t, err)
		answers := idempotencytest.Replay(h, first, testSecret, 10)
		require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed), answers)
		require.Equal(t, 9, answers.Count(idempotency.OutcomeDuplicate), answers)
		twin := idempotencytest.Deliver(h, paid("evt_sync_2", "in_sync", "acct_sync"), testSecret)
		require.Equal(t, idempotency.OutcomeProcessed, twin.Outcome, twin.Body) // another event of the invoice: the guard
		require.EqualValues(t, 100, credits("acct_sync"))
	})

	t.Run("inbox", func(t *testing.T) {
		clock := idempotencytest.NewClock(time.Now())
		inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
		require.NoError(t, err)
		h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}})
		require.NoError(t, err)
		first := paid("evt_inbox_1", "in_inbox", "acct_inbox")
		answers := idempotencytest.Replay(h, first, testSecret, 10)
		require.Equal(t, 1, answers.Count(idempotency.OutcomeQueued), answers)
		require.Equal(t, 9, answers.Count(idempotency.OutcomeDuplicate), answers)
		_, err = inbox.WorkDue(ctx)
		require.NoError(t, err)
		rec, ok, err := inbox.Lookup(ctx, "evt_inbox_1")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, idempotency.InboxFailed, rec.State) // no account yet: retried after its backoff
		require.Contains(t, rec.LastError, pgx.ErrNoRows.Error())

		_, err = sqlDB.ExecContext(ctx, `INSERT INTO accounts (id) VALUES ('acct_inbox')`)
		require.NoError(t, err)
		twin := idempotencytest.Deliver(h, paid("evt_inbox_2", "in_inbox", "acct_inbox"), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, twin.Outcome, twin.Body)
		_, err = idempotencytest.Drain(ctx, inbox, clock, time.Hour)
		require.NoError(t, err)
		for _, id := range []string{"evt_inbox_1", "evt_inbox_2"} {
			rec, _, err := inbox.Lookup(ctx, id)
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, rec.State, id)
		}
		require.EqualValues(t, 100, credits("acct_inbox"))
	})
}
