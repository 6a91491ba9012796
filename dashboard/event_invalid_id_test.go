package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestEventPageOfAnIDNoEventCanHave: the event page of an id no event can
// have (a NUL byte, invalid UTF-8, over 1024 bytes: a truncated paste or
// a crafted link) is the request's fault, 400 Bad input naming the
// causes, as Inbox.Lookup refuses such an id, and nothing is logged as an
// error. It was 404, as if the inbox did not have a valid id.
func TestEventPageOfAnIDNoEventCanHave(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for _, id := range []string{"%00", "evt_%FF", "evt_" + strings.Repeat("x", 1021)} {
		status, body := f.get(t, "event?id="+id)
		require.Equal(t, http.StatusBadRequest, status, "%.20s", id)
		contains(t, body, "Bad input", id)
		contains(t, body, "over 1024 bytes", id)
	}
	status, _ := f.get(t, "event?id="+strings.Repeat("x", 1024))
	require.Equal(t, http.StatusNotFound, status, "an id of 1024 bytes is an id")
	require.NotContains(t, f.logs(t), "level=ERROR")
}
