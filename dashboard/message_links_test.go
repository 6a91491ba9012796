package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestMessagePageLinksFitThePage: the overview that the store could not
// answer offers "Try again", a link to itself, and not "Back to the
// overview", which was a link to itself too; another page the store
// could not answer offers both; a message of bad input, "Back to the
// overview" alone.
func TestMessagePageLinksFitThePage(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	f := newFixture(t, db.NewStore(t, idempotency.PgxConfig{}), dashboard.Config{})
	const (
		retry    = `<a href="" id="try-again">Try again</a>`
		overview = `<a href="./" id="back-to-overview">Back to the overview</a>`
	)
	db.Pool.Close()
	status, body := f.get(t, "")
	require.Equal(t, http.StatusServiceUnavailable, status)
	contains(t, body, `<p>`+retry+`</p>`, "the overview")
	notContains(t, body, "Back to the overview", "the overview")
	status, body = f.get(t, "events?state=failed")
	require.Equal(t, http.StatusServiceUnavailable, status)
	contains(t, body, `<p>`+retry+` · `+overview+`</p>`, "a list")
	status, body = f.get(t, "events?state=bogus")
	require.Equal(t, http.StatusBadRequest, status)
	contains(t, body, `<p>`+overview+`</p>`, "bad input")
}
