package stripeapi

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRedirectWithoutLocationIsTheAnswer: a redirect's status without a
// Location, which Go's client does not follow, is the answer, as Go gives
// it, whatever the URL it answers holds (here "desk_", text with a secret
// key's prefix): the guard checks only a location the client would go
// to. (No test failed when the guard checked such an answer as a
// redirect to the URL asked, and refused it as holding a key.)
func TestRedirectWithoutLocationIsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := start(t, false, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusFound)
	})
	resp, err := guarded(live, nil).Get(srv.URL + "/v1/customers/search?query=email:'desk_ops@example.com'")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusFound, resp.StatusCode)
}
