package stripeapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedirectErrorQuotesTheLocationResolved: a refused redirect's
// location written relative to the request (here without its scheme, to
// another host) is named in RedirectError.URL and the message resolved
// against the request's URL, the URL the client would have gone to.
// (No test failed when the location was named as sent.)
func TestRedirectErrorQuotesTheLocationResolved(t *testing.T) {
	t.Parallel()
	srv := redirecting(t, true, http.StatusFound, func(*http.Request) string { return "//" + otherHost + "/v1/events?limit=1" })
	req, err := http.NewRequest(http.MethodGet, on(t, srv, fakeHost)+"/v1/events", nil)
	require.NoError(t, err)
	_, err = guarded(live, fakeHostClient(t)).Do(req)
	re, ok := errors.AsType[*RedirectError](err)
	require.True(t, ok, "%v", err)
	require.Equal(t, "https://"+otherHost+"/v1/events?limit=1", re.URL)
	require.ErrorContains(t, err, `not following a redirect to "https://`+otherHost+`/v1/events?limit=1": it is another host`)
}
