package idempotency

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecentClaimsTTLNegativeRefused: NewPgxStore refuses a negative
// PgxConfig.RecentClaimsTTL, naming the field, as it refuses every other
// invalid field; zero takes the default.
func TestRecentClaimsTTLNegativeRefused(t *testing.T) {
	t.Parallel()
	_, err := NewPgxStore(noBeginner{}, PgxConfig{RecentClaimsTTL: -time.Second})
	require.ErrorContains(t, err, "PgxConfig.RecentClaimsTTL")
	require.ErrorContains(t, err, "negative")
	s, err := NewPgxStore(noBeginner{}, PgxConfig{})
	require.NoError(t, err)
	require.Equal(t, DefaultRecentClaimsTTL, s.cfg.RecentClaimsTTL)
}
