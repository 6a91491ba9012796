package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListNothingMatchesSaysWhy: a list that selects nothing says so, and
// why the inbox may hold no record of it, as ledger says it of the
// ledger: it printed the table's heading alone, which an operator looking
// for a customer's invoice read as "Stripe sent nothing". Its -json is
// the document with no records, as before.
func TestListNothingMatchesSaysWhy(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "list", "-object", "in_never")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "no inbox record matches: "+noInboxRecord+"\n", r.stdout)
	require.Contains(t, noInboxRecord, "answered ignored")
	require.Contains(t, noInboxRecord, "idemctl ledger")

	r = idemctl(t, s.db, nil, "list", "-object", "in_never", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, listJSON{Records: []recordJSON{}}, decode[listJSON](t, r))

	r = idemctl(t, s.db, nil, "list", "-object", "in_1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, "no inbox record matches")
}
