package idempotency_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestResultSaysWhySkipped: the Result that Config.OnResult and
// InboxConfig.OnResult get for a skip has its reason in SkipReason, as the
// store keeps it (a NUL byte or invalid UTF-8 replaced, cut at 1000
// bytes, as a task's LastError): a delivery's, an inbox attempt's and a
// task's, on both stores. A user's metrics and logs
// saw the outcome skipped without why.
func TestResultSaysWhySkipped(t *testing.T) {
	t.Parallel()
	// Over 1000 bytes: the ledger and a task's LastError keep the first 1000.
	tail := strings.Repeat(" and more", 120)
	reason, kept := "invoice has no account_id \x00 in \xff metadata"+tail, "invoice has no account_id \uFFFD in \uFFFD metadata"+tail
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var results []idempotency.Result
			onResult := func(r idempotency.Result) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			}
			last := func() idempotency.Result {
				mu.Lock()
				defer mu.Unlock()
				require.NotEmpty(t, results)
				return results[len(results)-1]
			}
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error {
				return idempotency.Skip(reason)
			})
			cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: onResult}

			h, err := idempotency.NewHandler(store, hs, cfg)
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeSkipped, idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_why_sync", nil), testSecret).Outcome)
			res := last()
			require.Equal(t, idempotency.OutcomeSkipped, res.Outcome)
			require.Equal(t, kept[:1000], res.SkipReason, "the delivery's")
			require.Empty(t, res.IgnoredReason)

			in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger(), OnResult: onResult})
			require.NoError(t, err)
			cfg.OnResult = nil
			receiver, err := in.Handler(cfg)
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(receiver, eventPayload(t, "invoice.paid", "evt_why_inbox", nil), testSecret).Outcome)
			workDue(t, in, 1)
			res = last()
			require.Equal(t, 1, res.Attempt)
			require.Equal(t, idempotency.InboxSkipped, res.State)
			require.Equal(t, kept[:1000], res.SkipReason, "the inbox attempt's")

			rec, results := skippedTask(t, store, idempotency.Skip(reason))
			require.Len(t, results, 1)
			require.Equal(t, idempotency.KindTask, results[0].Kind)
			require.Equal(t, idempotency.OutcomeSkipped, results[0].Outcome)
			require.Equal(t, kept[:1000], results[0].SkipReason, "the task's, as its LastError")
			require.Equal(t, rec.LastError, results[0].SkipReason)
		})
	}
}
