package idempotency_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestSkipReasonIsBounded: a skipped event's reason is kept as a task's
// skip reason and a worker's ignored reason are, its first 1000 bytes, a
// rune cut in half there dropped, alike in the ledger's SkipReason, the
// log's skip_reason and Result.SkipReason, on both stores: a handler that
// skipped with a reason of megabytes wrote it whole into the ledger and
// a log line.
func TestSkipReasonIsBounded(t *testing.T) {
	t.Parallel()
	// 999 bytes, then "é" (2 bytes) across the 1000th, then more.
	head := "invoice has no account_id: " + strings.Repeat("x", 999-len("invoice has no account_id: "))
	reason := head + "é" + strings.Repeat(" and more", 1000)
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var results []idempotency.Result
			logger, logs := testLogger()
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error {
				return idempotency.Skip(reason)
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: logger,
				OnResult: func(r idempotency.Result) {
					mu.Lock()
					defer mu.Unlock()
					results = append(results, r)
				}})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeSkipped, idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_long_skip", nil), testSecret).Outcome)

			mu.Lock()
			require.Len(t, results, 1)
			got := results[0].SkipReason
			mu.Unlock()
			require.Len(t, got, len(head), "Result.SkipReason")
			require.True(t, utf8.ValidString(got))
			require.Equal(t, head, got, "Result.SkipReason: the first 1000 bytes, the rune cut in half dropped")

			rec, ok, err := store.(interface {
				LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
			}).LookupEvent(t.Context(), "evt_long_skip")
			require.NoError(t, err)
			require.True(t, ok)
			require.Len(t, rec.SkipReason, len(head), "the ledger's")
			require.Equal(t, head, rec.SkipReason, "the ledger's")

			var logged []string
			for l := range strings.Lines(logs.String()) {
				var line struct {
					SkipReason string `json:"skip_reason"`
				}
				require.NoError(t, json.Unmarshal([]byte(l), &line))
				if line.SkipReason != "" {
					require.Len(t, line.SkipReason, len(head), "the log's")
					logged = append(logged, line.SkipReason)
				}
			}
			require.Equal(t, []string{head}, logged, "the log's")
		})
	}
}
