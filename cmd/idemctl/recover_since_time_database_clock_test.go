package main

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRecoverSinceTimeOnTheDatabasesClock: recover judges a time in
// -since on the database's clock, which it measures the Events API's
// window on, not on the clock of the machine idemctl runs on: an hour
// behind, a -since ten minutes ago is not in the future, and two hours
// ahead, a -since an hour within the window is not beyond it; each asks
// the Events API for the events since that time.
func TestRecoverSinceTimeOnTheDatabasesClock(t *testing.T) {
	t.Parallel()
	s := newService(t, nil)
	for _, c := range []struct {
		name  string
		skew  time.Duration
		since time.Time
	}{
		{"behind, ten minutes ago", -time.Hour, time.Now().Add(-10 * time.Minute)},
		{"ahead, an hour within the window", 2 * time.Hour, time.Now().Add(-30*24*time.Hour + time.Hour)},
	} {
		api := &eventsAPI{}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		since := c.since.UTC().Truncate(time.Second)
		r := idemctlSkewed(t, c.skew, s.db, map[string]string{"STRIPE_SECRET_KEY": stripeKey},
			"recover", "-since", since.Format(time.RFC3339), "-types", "invoice.paid", "-api-base", srv.URL)
		require.Equal(t, exitOK, r.code, "%s: %s", c.name, r.stderr)
		api.mu.Lock()
		require.NotEmpty(t, api.queries, c.name)
		require.Equal(t, strconv.FormatInt(since.Unix(), 10), api.queries[0].Get("created[gte]"), c.name)
		api.mu.Unlock()
	}
}
