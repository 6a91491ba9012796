package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/keytext"
)

// TestForgetInvalidIDForgetsNothing: an id no store can hold (empty, a NUL
// byte, not UTF-8, too long) is a usage error, exit 2, and like every
// usage error it is found before anything is deleted: the valid ids before
// it are not forgotten either.
func TestForgetInvalidIDForgetsNothing(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	for _, bad := range []string{"", "evt_\x00", "evt_\xff", "evt_" + strings.Repeat("x", 2000)} {
		r := idemctl(t, s.db, nil, "forget", "evt_paid_1", bad)
		require.Equal(t, exitUsage, r.code, r.stderr)
		require.Empty(t, r.stdout, "nothing forgotten, nothing reported")
		require.Contains(t, r.stderr, "idemctl: forget: ")
		require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_paid_1").State, "evt_paid_1 is still known")
		_, found, err := s.store.LookupEvent(t.Context(), "evt_paid_1")
		require.NoError(t, err)
		require.True(t, found, "evt_paid_1's claim is kept")
	}
}

// TestForgetIDBoundIsTheLibrarys: forget's bound on an id's length
// (checkEventID's, internal/keytext's) is the one Forget itself keeps.
func TestForgetIDBoundIsTheLibrarys(t *testing.T) {
	t.Parallel()
	store := idempotency.NewMemoryStore()
	_, err := store.Forget(t.Context(), strings.Repeat("x", keytext.MaxKeyLen))
	require.NoError(t, err)
	_, err = store.Forget(t.Context(), strings.Repeat("x", keytext.MaxKeyLen+1))
	require.ErrorIs(t, err, idempotency.ErrInvalidKey)
}
