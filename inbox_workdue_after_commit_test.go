package idempotency_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestWorkDueReturnsAfterTheAfterCommitFuncs: what an attempt's
// AfterCommit funcs write is there when WorkDue returns, as the README's
// testing section says, so that a test reads its fake table right after
// it. The write is a plain variable: under -race, a func run on another
// goroutine with no wait for it fails the test.
func TestWorkDueReturnsAfterTheAfterCommitFuncs(t *testing.T) {
	credits := 0
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		tx.AfterCommit(func(context.Context) { credits += 100 })
		return nil
	})
	inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{"whsec_test"}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, id := range []string{"evt_wd_1", "evt_wd_2"} {
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, invoiceEvent(id, "invoice.paid", nil), "whsec_test").Outcome)
	}
	n, err := inbox.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 200, credits, "both events' AfterCommit funcs ran before WorkDue returned")
}
