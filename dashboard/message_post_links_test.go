package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestMessageOfAPostOffersTheOverviewAlone: an action (a POST) the store
// could not answer offers "Back to the overview" alone, not "Try again", a
// link that would read the action's URL with GET and not send it again;
// a POST to the overview, refused 405, offers "Back to the overview", the
// overview read with GET. (No test failed when a POST's 503 offered "Try
// again", or when the overview's 405 offered no link.)
func TestMessageOfAPostOffersTheOverviewAlone(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	f := newFixture(t, db.NewStore(t, idempotency.PgxConfig{}), dashboard.Config{AllowRedrive: true, AllowForget: true})
	db.Pool.Close()
	for _, action := range []string{"redrive", "forget"} {
		resp := f.post(t, action, "confirm=yes&id=evt_gone", nil)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, action)
		contains(t, resp.body, `<p><a href="./" id="back-to-overview">Back to the overview</a></p>`, action)
		notContains(t, resp.body, "Try again", action)
	}
	resp := f.post(t, "", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	contains(t, resp.body, `<p><a href="./" id="back-to-overview">Back to the overview</a></p>`, "the overview's 405")
}
