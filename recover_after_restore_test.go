package idempotency_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestRecoverAfterARestoreReachesBackStripesRetries holds the README's
// runbook entry "The database was restored from a backup", in both modes,
// on PostgreSQL (the memory store has no backup): three invoice.paid
// events, each enqueueing a receipt task; the first applied before the
// backup, the second created before it but applied after it (its first
// deliveries failed; Stripe's retry got through), the third created and
// applied after it. After pg_dump and pg_restore:
//   - a replica that kept running answers all three duplicate, from its
//     memory of recent ids, though the restore took two claims away;
//   - restarted, a recovery from the backup's time applies the third
//     alone: the second's created is before the backup;
//   - from 3 days before the backup it applies the second, once, and the
//     first and the third are duplicates;
//   - the receipts of the second and the third run again, with the
//     idempotency keys they had before the restore; the first's does not.
func TestRecoverAfterARestoreReachesBackStripesRetries(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"synchronous", "inbox"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			pdb := pgtest.New(t)
			b := newPgBackendIn(t, pdb, idempotency.PgxConfig{}, func(p *pgxpool.Pool) idempotency.PgxBeginner { return p })
			var mu sync.Mutex
			receipts := map[string][]string{} // the idempotency keys of each invoice's receipt runs
			hs := idempotency.NewHandlers()
			receipt := idempotency.NewTask(hs, "send-receipt", func(_ context.Context, run idempotency.TaskRun[struct{}]) error {
				mu.Lock()
				defer mu.Unlock()
				receipts[run.Key] = append(receipts[run.Key], run.IdempotencyKey)
				return nil
			})
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[serviceObject]) error {
				if err := b.add(ctx, tx, ev.ID, 1); err != nil {
					return err
				}
				_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, struct{}{})
				return err
			})
			replica := func(store *idempotency.PgxStore) (*idempotency.Handler, *idempotency.Inbox) {
				in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
				require.NoError(t, err)
				cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()}
				h, err := idempotency.NewHandler(store, hs, cfg)
				if mode == "inbox" {
					h, err = in.Handler(cfg)
				}
				require.NoError(t, err)
				return h, in
			}
			work := func(in *idempotency.Inbox) { // the events (inbox mode) and the receipts
				for {
					n, err := in.WorkDue(t.Context())
					require.NoError(t, err)
					if n == 0 {
						return
					}
				}
			}
			applied := func() map[string]int { return counterValues(t, pdb.Pool, `SELECT name, value FROM counters`) }

			backupAt := time.Now().Add(-2 * time.Hour) // the events' times are Stripe's: the backup is taken "then"
			f := newFakeStripe()
			client := f.inProcess()
			events := [][]byte{
				snapshotEvent(t, "evt_before", "invoice.paid", "in_before", backupAt.Add(-3*time.Hour).Unix()),
				snapshotEvent(t, "evt_retried", "invoice.paid", "in_retried", backupAt.Add(-time.Hour).Unix()),
				snapshotEvent(t, "evt_after", "invoice.paid", "in_after", backupAt.Add(30*time.Minute).Unix()),
			}
			for _, ev := range events {
				f.add(ev)
			}
			h, in := replica(b.store)
			require.Equal(t, 200, idempotencytest.Deliver(h, events[0], testSecret).Status)
			work(in)
			backup := pdb.Dump(t)
			for _, ev := range events[1:] {
				require.Equal(t, 200, idempotencytest.Deliver(h, ev, testSecret).Status)
			}
			work(in)
			require.Equal(t, map[string]int{"evt_before": 1, "evt_retried": 1, "evt_after": 1}, applied())
			mu.Lock()
			keys := map[string]string{}
			for invoice, runs := range receipts {
				require.Len(t, runs, 1, invoice)
				keys[invoice] = runs[0]
			}
			mu.Unlock()

			pdb.Restore(t, backup)
			require.Equal(t, map[string]int{"evt_before": 1}, applied(), "the restore undid what came after the backup")
			since := backupAt.Add(-3 * 24 * time.Hour)
			rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: since})
			require.NoError(t, err)
			require.Equal(t, 3, rep.Duplicate, "a replica that kept running remembers its recent ids: %+v", rep)

			h, in = replica(newPgxStoreIn(t, pdb))
			rep, err = h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: backupAt, Checkpoint: "at-the-backup"})
			require.NoError(t, err)
			require.Equal(t, 1, rep.Listed, "%+v", rep)
			require.Equal(t, 1, rep.Processed+rep.Queued, "%+v", rep)
			work(in)
			require.Equal(t, map[string]int{"evt_before": 1, "evt_after": 1}, applied(),
				"from the backup's time: an event created before it and applied after it is missed")

			rep, err = h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: since, Checkpoint: "restore"})
			require.NoError(t, err)
			require.Equal(t, 3, rep.Listed, "%+v", rep)
			require.Equal(t, 2, rep.Duplicate, "%+v", rep)
			require.Equal(t, 1, rep.Processed+rep.Queued, "%+v", rep)
			work(in)
			require.Equal(t, map[string]int{"evt_before": 1, "evt_retried": 1, "evt_after": 1}, applied())

			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, map[string][]string{
				"in_before":  {keys["in_before"]},
				"in_retried": {keys["in_retried"], keys["in_retried"]},
				"in_after":   {keys["in_after"], keys["in_after"]},
			}, receipts, "the receipts run again after the restore, with the keys they had")
		})
	}
}

// newPgxStoreIn is another PgxStore on pdb's schema, migrated already:
// a replica started afresh.
func newPgxStoreIn(t *testing.T, pdb *pgtest.DB) *idempotency.PgxStore {
	t.Helper()
	store, err := idempotency.NewPgxStore(pdb.Pool, idempotency.PgxConfig{Schema: pdb.Schema})
	require.NoError(t, err)
	return store
}
