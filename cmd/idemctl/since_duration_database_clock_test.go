package main

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSinceDurationOnTheDatabasesClock: a duration in -since or -until
// (30m) is measured back from the database's clock, on which the replicas
// dated what list, ledger and redrive select, not from the clock of the
// machine idemctl runs on: run where that clock is an hour ahead, -since
// 30m still selects the events received a moment ago, and -until 30m
// none of them.
func TestSinceDurationOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	s.seed(t) // every event received a moment ago by the database's clock
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	idemctlAhead := func(args ...string) result {
		t.Helper()
		r := idemctlAt(t.Context(), ahead, s.db, nil, args...)
		require.Equal(t, 0, r.code, r.stderr)
		return r
	}

	recs := decode[listJSON](t, idemctlAhead("list", "-kind", "event", "-since", "30m", "-json")).Records
	require.Len(t, recs, 5, "list -since 30m: the seeded events")
	require.Empty(t, decode[listJSON](t, idemctlAhead("list", "-kind", "event", "-until", "30m", "-json")).Records, "list -until 30m")

	require.NotEmpty(t, decode[ledgerListJSON](t, idemctlAhead("ledger", "-since", "30m", "-json")).Records, "ledger -since 30m")

	doc := decode[redriveJSON](t, idemctlAhead("redrive", "-state", "dead_letter", "-since", "30m", "-dry-run", "-json"))
	require.Equal(t, 1, doc.Events, "redrive -since 30m: evt_dead_1")

	api := &eventsAPI{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	r := idemctlAt(t.Context(), ahead, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
		"recover", "-since", "2h", "-types", "invoice.paid", "-api-base", srv.URL)
	require.Equal(t, 0, r.code, r.stderr)
	api.mu.Lock()
	defer api.mu.Unlock()
	require.NotEmpty(t, api.queries)
	gte, err := strconv.ParseInt(api.queries[0].Get("created[gte]"), 10, 64)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(-2*time.Hour), time.Unix(gte, 0), time.Minute, "recover -since 2h")
}
