package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestIDFlagsAreTrimmed: -object, -account and -after read their id
// without the spaces around it, as -type, -id and the dashboard's forms
// do, so that a pasted " in_2" or "acct_1 " selects what it names. list
// said nothing matched, list -after that the id was not found, redrive
// -object moved nothing. A task's
// id, whose key may begin or end with spaces, is taken as it is by
// -after, as by -id.
func TestIDFlagsAreTrimmed(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t)
	r := idemctl(t, s.db, nil, "list", "-object", " in_2 ", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	recs := decode[listJSON](t, r).Records
	require.Len(t, recs, 1)
	require.Equal(t, "evt_paid_2", recs[0].ID)

	require.Equal(t, idempotency.OutcomeQueued, s.deliverRaw(t, accountEventPayload(t, "evt_paid_2_other", "invoice.paid", "in_2", "acct_other", s.clock().Unix())))
	r = idemctl(t, s.db, nil, "list", "-object", "in_2", "-account", " acct_other\t", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	recs = decode[listJSON](t, r).Records
	require.Len(t, recs, 1, "-account acct_other, trimmed: its event alone, not the platform's")
	require.Equal(t, "evt_paid_2_other", recs[0].ID)

	r = idemctl(t, s.db, nil, "list", "-after", " evt_paid_2", "-kind", "event", "-json")
	require.Equal(t, 0, r.code, r.stderr)

	r = idemctl(t, s.db, nil, "list", "-after", "task:send-receipt:in_1 ")
	require.Equal(t, exitNotFound, r.code, "a task's id is taken as it is")

	r = idemctl(t, s.db, nil, "redrive", "-object", "ch_1 ", "-dry-run", "-json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, 1, decode[redriveJSON](t, r).Events, "the dead letter of ch_1")

}
