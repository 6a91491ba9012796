package idempotency

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// noBeginner is a PgxBeginner that is never asked to begin.
type noBeginner struct{}

func (noBeginner) BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error) {
	panic("not called")
}

// TestRecentClaimsLargeCapacity: PgxConfig.RecentClaims bounds the ids
// remembered; the memory grows with the ids met, so a bound far above any
// traffic (math.MaxInt, "no bound but the TTL") builds a store instead of
// panicking in NewPgxStore, and the memory still answers.
func TestRecentClaimsLargeCapacity(t *testing.T) {
	t.Parallel()
	s, err := NewPgxStore(noBeginner{}, PgxConfig{RecentClaims: math.MaxInt})
	require.NoError(t, err)
	require.NotNil(t, s.local)

	l := newLocalClaims(math.MaxInt, time.Hour)
	done, release, err := l.acquire(context.Background(), "evt_1")
	require.NoError(t, err)
	require.False(t, done)
	release(true)
	done, _, err = l.acquire(context.Background(), "evt_1")
	require.NoError(t, err)
	require.True(t, done, "remembered")
}
