package idempotency

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// TestPoolFullHintOnlyForAConnectionWait: on a pool whose every
// connection is in use, the cure is added to the context's deadline as
// pgxpool's wait for a connection fails with it, once, and wrapped; not
// to a statement that ran into the deadline (pgconn's timeout error), nor
// to a cancellation, which pgconn also returns for a cancelled statement;
// nor once a connection of the pool is free.
func TestPoolFullHintOnlyForAConnectionWait(t *testing.T) {
	t.Parallel()
	pdb := pgtest.NewWithConfig(t, func(c *pgxpool.Config) { c.MaxConns = 2 })
	s, err := NewPgxStore(pdb.Pool, PgxConfig{Schema: pdb.Schema})
	require.NoError(t, err)
	first, err := pdb.Pool.Acquire(t.Context())
	require.NoError(t, err)
	defer first.Release()
	second, err := pdb.Pool.Acquire(t.Context())
	require.NoError(t, err)
	defer second.Release()

	// The statement must be under way when the deadline comes, to fail
	// with pgconn's timeout error: a deadline already past as it begins
	// fails it with the context's error, as the pool's wait. 10 s, which a
	// loaded machine does not take to send it (100 ms it might).
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, statementErr := first.Exec(ctx, `SELECT pg_sleep(60)`)
	require.ErrorIs(t, statementErr, context.DeadlineExceeded)
	_, acquireErr := pdb.Pool.Acquire(ctx)
	require.ErrorIs(t, acquireErr, context.DeadlineExceeded)

	hinted := func(err error) bool { return strings.Contains(err.Error(), poolFullCure) }
	wait := fmt.Errorf("claiming event: %w", acquireErr)
	err = s.poolFullHint(wait)
	require.True(t, hinted(err), err.Error())
	require.ErrorContains(t, err, "claiming event: context deadline exceeded (waited for a connection of the store's pool: all 2 of MaxConns in use; ")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 1, strings.Count(s.poolFullHint(fmt.Errorf("charge: %w", err)).Error(), poolFullCure))

	for _, err := range []error{
		fmt.Errorf("claiming event: %w", statementErr),
		fmt.Errorf("claiming event: %w", context.Canceled),
	} {
		require.False(t, hinted(s.poolFullHint(err)), err.Error())
	}

	second.Release() // first's connection, closed by its statement's timeout, is destroyed later
	require.False(t, hinted(s.poolFullHint(wait)), "a connection is free")
}
