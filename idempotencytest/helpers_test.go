package idempotencytest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

const testSecret = "whsec_idempotencytest"

// bothStores make a store of each kind for a test: a MemoryStore, and a
// PgxStore on a schema of the test's own.
var bothStores = map[string]func(t *testing.T) idempotency.Store{
	"memory": func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() },
	"postgres": func(t *testing.T) idempotency.Store {
		return idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{})
	},
}

// invoicePaid returns an invoice.paid event id about invoice of account.
func invoicePaid(t testing.TB, id, invoice, account string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": "invoice.paid", "api_version": stripe.APIVersion,
		"created": time.Now().Unix(),
		"data": map[string]any{"object": map[string]any{
			"id": invoice, "object": "invoice", "metadata": map[string]string{"account_id": account},
		}},
	})
	require.NoError(t, err)
	return b
}

// credits is a fake accounts table: a transaction's writes apply when it
// commits.
type credits struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *credits) get(account string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[account]
}

// newCreditHandler returns a handler on the memory store that credits the
// invoice's account 100 once per invoice. It verifies with secrets, or with
// testSecret when none are given.
func newCreditHandler(t testing.TB, secrets ...string) (*idempotency.Handler, *credits) {
	t.Helper()
	c := &credits{m: map[string]int{}}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		account := ev.Object.Metadata["account_id"]
		tx.AfterCommit(func(context.Context) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.m[account] += 100
		})
		return nil
	})
	if len(secrets) == 0 {
		secrets = []string{testSecret}
	}
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: secrets,
		Logger:  slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	return h, c
}

// runChild runs this test binary again with env added, for the tests
// matching run, verbosely, and returns its combined output: a conformance
// case that crashes or hangs on a broken store is watched from outside.
func runChild(env, run string) ([]byte, error) {
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env)
	return cmd.CombinedOutput()
}
