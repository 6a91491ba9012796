package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestForgetLineWarnsOfRecentClaims: the line forget prints for a forgotten
// event said "it is applied again when it comes next", and a resend right
// after the forget, to the replica that stored the event, is answered
// duplicate from its memory of recent claims and never stored: the line
// names that wait, as forget -h, the README and the dashboard do.
func TestForgetLineWarnsOfRecentClaims(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "forget", "evt_paid_1")
	require.Equal(t, exitOK, r.code, r.stderr)
	require.Equal(t, idempotency.OutcomeDuplicate, s.deliver(t, "evt_paid_1", "invoice.paid", "in_1"),
		"a resend within RecentClaimsTTL is answered duplicate")
	_, stored, err := s.inbox.Lookup(t.Context(), "evt_paid_1")
	require.NoError(t, err)
	require.False(t, stored, "the duplicate was not stored: the resend is lost")
	require.Contains(t, r.stdout, "PgxConfig.RecentClaimsTTL")
}
