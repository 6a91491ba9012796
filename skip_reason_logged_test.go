package idempotency_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Skip's reason is stored and logged, as Skip says: the delivery's log
// line, and an inbox attempt's, give it, so that an operator reading an
// outcome of skipped in the logs learns why without querying the ledger.
func TestSkipReasonIsLogged(t *testing.T) {
	t.Parallel()
	const reason = "invoice has no account_id in metadata"
	register := func() *idempotency.Handlers {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error {
			return idempotency.Skip(reason)
		})
		return hs
	}
	payload := eventPayload(t, "invoice.paid", "evt_skip_logged", nil)

	t.Run("delivery", func(t *testing.T) {
		logger, logs := testLogger()
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), register(), idempotency.Config{Secrets: []string{testSecret}, Logger: logger})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeSkipped, idempotencytest.Deliver(h, payload, testSecret).Outcome)
		require.Contains(t, logs.String(), reason, "the delivery's log line")
	})

	t.Run("inbox", func(t *testing.T) {
		logger, logs := testLogger()
		inbox, err := idempotency.NewInbox(idempotency.NewMemoryStore(), register(), idempotency.InboxConfig{Logger: logger})
		require.NoError(t, err)
		h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, payload, testSecret).Outcome)
		n, err := inbox.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Contains(t, logs.String(), reason, "the attempt's log line")
	})
}
