package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestForgetRepeatedID: an id given twice (a list of ids with a repeat) is
// forgotten once and reported once; the run exits 0, not 3 as if the id
// had not been found.
func TestForgetRepeatedID(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)

	r := idemctl(t, s.db, nil, "forget", "evt_paid_1", "evt_paid_2", "evt_paid_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "evt_paid_1: forgotten: its claim, its guards and its inbox row are deleted; it is applied again when it comes next, once replicas that saw it no longer answer it duplicate from memory (up to PgxConfig.RecentClaimsTTL, 1 minute)\n"+
		"evt_paid_2: forgotten: its claim, its guards and its inbox row are deleted; it is applied again when it comes next, once replicas that saw it no longer answer it duplicate from memory (up to PgxConfig.RecentClaimsTTL, 1 minute)\n", r.stdout)
	require.Empty(t, r.stderr)
}
