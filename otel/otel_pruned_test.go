package idempotencyotel_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPrunerCountsWhatPruneDeletes: a prune through Telemetry.Pruner
// counts in idempotency.retention.pruned what its report counts, by rows,
// each batch as it commits, each series at 0 before the first prune; the
// Retention's own OnBatch is still called at each batch; a dry run counts
// nothing. On both stores.
func TestPrunerCountsWhatPruneDeletes(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := open(t)
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			logger := slog.New(slog.DiscardHandler)
			in, err := idempotency.NewInbox(store, handlers(), idempotency.InboxConfig{Now: clock.Now, MaxAttempts: 1, Logger: logger})
			require.NoError(t, err)
			h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: logger})
			require.NoError(t, err)
			for _, e := range []struct{ id, typ string }{
				{"evt_prune_paid_1", "invoice.paid"}, {"evt_prune_paid_2", "invoice.paid"}, {"evt_prune_fails", "invoice.payment_failed"},
			} {
				a := idempotencytest.Deliver(h, event(t, e.id, e.typ, "in_"+e.id), secret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			}
			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 3, n)

			tel := newTelemetry(t, clock.Now)
			pr := tel.Pruner(store.(idempotency.Pruner))
			zero := map[string]float64{
				"rows=event_ids": 0, "rows=events": 0, "rows=dead_letters": 0, "rows=guards": 0,
				"rows=tasks": 0, "rows=objects": 0, "rows=task_args_cleared": 0,
			}
			require.Equal(t, zero, tel.points(t)["idempotency.retention.pruned"], "every series at 0 before a prune")

			// Past every window, by the inbox's clock and by the real one,
			// which dates the ledger's claims.
			later := func() time.Time { return time.Now().Add(200 * 24 * time.Hour) }
			dry, err := pr.Prune(t.Context(), idempotency.Retention{DryRun: true, Now: later})
			require.NoError(t, err)
			require.Equal(t, 2, dry.Events)
			require.Equal(t, zero, tel.points(t)["idempotency.retention.pruned"], "a dry run deletes nothing")

			batches := 0
			rep, err := pr.Prune(t.Context(), idempotency.Retention{BatchSize: 1, Pause: -1, Now: later,
				OnBatch: func(so idempotency.PruneReport) {
					batches++
					pts := tel.points(t)["idempotency.retention.pruned"]
					require.Equal(t, float64(so.Events), pts["rows=events"], "counted as each batch commits")
					require.Equal(t, float64(so.DeadLetters), pts["rows=dead_letters"], "counted as each batch commits")
				}})
			require.NoError(t, err)
			require.Equal(t, idempotency.PruneReport{EventIDs: 2, Events: 2, DeadLetters: 1}, rep)
			require.Equal(t, rep.Total(), batches, "the Retention's OnBatch, at each batch of one row")
			want := map[string]float64{}
			for k, v := range zero {
				want[k] = v
			}
			want["rows=event_ids"], want["rows=events"], want["rows=dead_letters"] = 2, 2, 1
			require.Equal(t, want, tel.points(t)["idempotency.retention.pruned"])

			rep, err = pr.Prune(t.Context(), idempotency.Retention{Now: later})
			require.NoError(t, err)
			require.Zero(t, rep.Total(), "nothing left to prune")
			require.Equal(t, want, tel.points(t)["idempotency.retention.pruned"], "counted once")
		})
	}
}

// TestPrunerOfNilStore: Telemetry.Pruner of a nil store, a nil pointer of
// a store type included, gives nil, so that PruneEvery refuses it at once,
// as it refuses the store itself, rather than calling its Prune.
func TestPrunerOfNilStore(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	logger := slog.New(slog.DiscardHandler)
	for name, p := range map[string]idempotency.Pruner{
		"nil":              nil,
		"nil *MemoryStore": (*idempotency.MemoryStore)(nil),
		"nil *PgxStore":    (*idempotency.PgxStore)(nil),
	} {
		pr := tel.Pruner(p)
		require.Nil(t, pr, name)
		err := idempotency.PruneEvery(t.Context(), pr, idempotency.Retention{}, time.Hour, logger)
		require.ErrorContains(t, err, "nil Pruner", name)
	}
}

// reportingPruner is a Pruner other than the stores: it calls no OnBatch
// and returns rep and err.
type reportingPruner struct {
	rep idempotency.PruneReport
	err error
}

func (p reportingPruner) Prune(context.Context, idempotency.Retention) (idempotency.PruneReport, error) {
	return p.rep, p.err
}

// TestPrunerCountsTheReportWithoutBatches: of a Pruner that calls no
// OnBatch, Telemetry.Pruner counts what the report counts when the prune
// returns, a failed prune's too (the batches it committed).
func TestPrunerCountsTheReportWithoutBatches(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	failed := errors.New("connection lost")
	pr := tel.Pruner(reportingPruner{rep: idempotency.PruneReport{Events: 3, TaskArgsCleared: 2}, err: failed})
	_, err := pr.Prune(t.Context(), idempotency.Retention{})
	require.ErrorIs(t, err, failed)
	pts := tel.points(t)["idempotency.retention.pruned"]
	require.Equal(t, float64(3), pts["rows=events"])
	require.Equal(t, float64(2), pts["rows=task_args_cleared"])
	require.Equal(t, float64(0), pts["rows=event_ids"])
}
