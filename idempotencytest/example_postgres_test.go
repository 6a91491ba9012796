package idempotencytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// creditInvoice is the handler under test, as your service registers it: it
// credits the invoice's account once per invoice, in SQL, in the event's
// transaction, and fails while the account does not exist.
func creditInvoice(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
	first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
	if err != nil || !first {
		return err
	}
	tag, err := idempotency.PgxTx(tx).Exec(ctx, `UPDATE accounts SET credits = credits + 100 WHERE id = $1`,
		ev.Object.Metadata["account_id"])
	if err == nil && tag.RowsAffected() == 0 { // not created yet: Stripe does not deliver in order
		err = errors.New("metadata.account_id is no account") // rolled back, for Stripe to send it again
	}
	return err
}

// testInvoiceCreditedOnce is a test of your service, on PostgreSQL: in your
// code it is func TestInvoiceCreditedOnce(t *testing.T), in a package whose
// TestMain is
//
//	func TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }
func testInvoiceCreditedOnce(t *testing.T) {
	db := idempotencytest.Postgres(t) // an empty schema of its own
	// Your migrations:
	for _, sql := range []string{
		`CREATE TABLE accounts (id text PRIMARY KEY, credits int NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id) VALUES ('acct_1')`,
	} {
		_, err := db.Pool.Exec(t.Context(), sql)
		require.NoError(t, err)
	}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", creditInvoice)
	h, err := idempotency.NewHandler(db.NewStore(t, idempotency.PgxConfig{}), hs, idempotency.Config{
		Secrets: []string{"whsec_test"},
		Logger:  slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	require.NoError(t, err)

	invoiceEvent := func(id, invoice, account string) []byte {
		b, err := json.Marshal(map[string]any{
			"id": id, "object": "event", "type": "invoice.paid", "api_version": stripe.APIVersion,
			"data": map[string]any{"object": map[string]any{
				"id": invoice, "object": "invoice", "metadata": map[string]string{"account_id": account},
			}},
		})
		require.NoError(t, err)
		return b
	}
	event := func(id string) []byte { return invoiceEvent(id, "in_1", "acct_1") }
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, event("evt_1"), "whsec_test").Outcome)
	require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(h, event("evt_1"), "whsec_test").Outcome)
	answers := idempotencytest.Replay(h, event("evt_2"), "whsec_test", 20) // another event for in_1
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))

	var credits int
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT credits FROM accounts WHERE id = 'acct_1'`).Scan(&credits))
	require.Equal(t, 100, credits, "two events for one invoice, one delivered twice and one 20 times: one credit")

	// An invoice of an account not created yet (Stripe does not deliver in
	// order) fails, for Stripe to send it again, rather than being recorded
	// processed with nothing credited.
	early := invoiceEvent("evt_3", "in_2", "acct_2")
	require.Equal(t, 500, idempotencytest.Deliver(h, early, "whsec_test").Status)
	_, err = db.Pool.Exec(t.Context(), `INSERT INTO accounts (id) VALUES ('acct_2')`)
	require.NoError(t, err)
	require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, early, "whsec_test").Outcome) // Stripe's retry
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT credits FROM accounts WHERE id = 'acct_2'`).Scan(&credits))
	require.Equal(t, 100, credits)
}

// A handler that writes SQL through idempotency.PgxTx, tested against a real
// PostgreSQL instead of a fake of its tables: testInvoiceCreditedOnce is the
// test you would write (TestPostgresHandlerExample runs it).
func ExamplePostgres() {}
