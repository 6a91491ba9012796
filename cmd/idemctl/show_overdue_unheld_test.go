package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestShowOverdueHeldByNothingSaysTheWorkers: show of an event still to
// be applied that nothing holds back and whose next attempt is past by
// more than five minutes by the database's clock says that no worker
// took it when it came due, as the dashboard's event page says it, where
// it said "due at its next attempt", which read as if it would be applied
// soon when the workers were down.
func TestShowOverdueHeldByNothingSaysTheWorkers(t *testing.T) {
	t.Parallel()
	// The service's clock an hour behind: its event came due an hour ago.
	s := newService(t, func() time.Time { return time.Now().Add(-time.Hour) })
	s.deliver(t, "evt_late", "invoice.paid", "in_late")
	rec := s.lookup(t, "evt_late")
	r := idemctl(t, s.db, nil, "show", "evt_late")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "\n  held by       - (nothing, yet overdue since "+formatTime(rec.NextAttemptAt)+
		": no worker took it when it came due; the workers are down, busy or cut off from the database: idemctl stats says when one last started an attempt)\n")
}
