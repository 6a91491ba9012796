package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestAccountFirstGrantsAtOnce: two invoices of a new account applied at
// once both count on PostgreSQL. The second's UPDATE finds no row (the
// first's insert is not committed), its INSERT waits for the first's
// commit, and its ON CONFLICT branch must then add to the row rather than
// overwrite it, and move plan_until to its later end.
func TestAccountFirstGrantsAtOnce(t *testing.T) {
	t.Parallel()
	svc := newStore(t, "postgres")
	pool := svc.accounts.(pgAccounts).pool
	until, later := time.Date(2025, 10, 1, 16, 0, 0, 0, time.UTC), time.Date(2025, 10, 31, 16, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	inserted, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := svc.store.Run(ctx, idempotency.Claim{EventID: "evt_race_1"}, func(ctx context.Context, tx idempotency.Tx) error {
			if err := svc.accounts.Grant(ctx, tx, "acct_race", 100, until); err != nil {
				return err
			}
			close(inserted)
			select { // commit once the second waits on this row
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		first <- err
	}()
	select {
	case <-inserted:
	case err := <-first:
		t.Fatalf("the first grant ended before inserting: %v", err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := svc.store.Run(ctx, idempotency.Claim{EventID: "evt_race_2"}, func(ctx context.Context, tx idempotency.Tx) error {
			return svc.accounts.Grant(ctx, tx, "acct_race", 100, later)
		})
		second <- err
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO accounts%')`).Scan(&waiting)
		return err == nil && waiting
	}, 20*time.Second, 5*time.Millisecond, "the second grant's INSERT should wait for the first's row")
	close(release)
	require.NoError(t, <-first)
	require.NoError(t, <-second)

	acct, ok, err := svc.accounts.Get(ctx, "acct_race")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Account{ID: "acct_race", Credits: 200, Receipts: 2, PlanUntil: &later}, acct)
}
