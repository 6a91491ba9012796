package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestPgxPruneCommitInProgressCounted: the COMMIT of a prune's first batch
// of claims reached PostgreSQL and its answer was lost, and the batch's
// transaction was still in progress when the store first looked it up
// (its COMMIT held by a deferred constraint trigger that waits for a lock,
// as one waiting for synchronous replication is held); it committed just
// after. The store waits for the transaction's end: the batch is counted,
// the prune goes on to the next batch, and it reports every claim it
// deleted, without an error.
func TestPgxPruneCommitInProgressCounted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	var armed atomic.Bool
	var arm sync.Once
	tracer, lookedUp := lookUpCloses(func(sql string) {
		// The first batch of claims: its COMMIT is the next.
		if strings.HasPrefix(sql, "DELETE FROM") && strings.Contains(sql, "idempotency_events") {
			arm.Do(func() { armed.Store(true) })
		}
	})
	db := newCommitCutDB(t, &armed, tracer)
	store, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	h, _ := reportingHandler(t, store, func(context.Context, idempotency.Tx) error { return nil })
	const claims = 6
	for i := range claims {
		id := fmt.Sprintf("evt_prune_in_progress_%d", i)
		a := idempotencytest.Deliver(h, invoicePayload(t, id, fmt.Sprintf("in_prune_in_progress_%d", i), "acct_1"), testSecret)
		require.Equal(t, 200, a.Status, a.Body)
	}
	_, err = db.Pool.Exec(ctx, `UPDATE `+quoteIdent(db.Schema)+`.idempotency_events SET processed_at = processed_at - interval '60 days'`)
	require.NoError(t, err)
	gate := newTriggerGate(t, db, "DELETE", "idempotency_events", "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW")

	type pruned struct {
		rep idempotency.PruneReport
		err error
	}
	done := make(chan pruned, 1)
	go func() {
		rep, err := store.Prune(ctx, idempotency.Retention{BatchSize: 4, Pause: -1})
		done <- pruned{rep, err}
	}()
	p := openWhenLookedUp(t, gate, lookedUp, done)
	require.False(t, armed.Load(), "the first batch's COMMIT was sent and its answer lost")
	select {
	case <-lookedUp:
	default:
		t.Fatal("the first batch was not looked up")
	}
	require.NoError(t, p.err)
	require.Equal(t, claims, p.rep.EventIDs, "every claim deleted is reported, the first batch's once")
	var left int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM `+quoteIdent(db.Schema)+`.idempotency_events`).Scan(&left))
	require.Zero(t, left)
}
