package dashboard_test

import (
	"html"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestQueryUnknownKeyRefused: a query key a page does not take (a typo,
// ?stat=dead_letter) is answered 400 with a message naming it, on every
// page that takes a query, instead of being ignored (the list then
// showed every record). The keys each page takes, and those of the
// message after an action, are served as before.
func TestQueryUnknownKeyRefused(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	for _, c := range []struct{ path, key string }{
		{"events?stat=dead_letter", `"stat"`},
		{"events?kind=event&state=dead_letter&tpye=invoice.paid", `"tpye"`},
		{"?state=dead_letter", `"state"`},
		{"event?id=evt_dead_1&msg=redriven&n=1&ids=evt_paid_1", `"ids"`},
		{"search?query=in_paid_1", `"query"`},
		{"events?%E2%80%AEx=1", `"\u202ex"`}, // quoted: no bidirectional control on the page
	} {
		status, body := f.get(t, c.path)
		require.Equal(t, http.StatusBadRequest, status, c.path)
		contains(t, html.UnescapeString(body), "Unknown query key "+c.key, c.path)
		notContains(t, body, `data-id=`, c.path)
	}
	for _, path := range []string{
		"?msg=redriven&n=2",
		"events?kind=event&state=dead_letter&type=invoice.paid&object=in_dead_1&account=&since=2000-01-01&until=&limit=5&msg=redriven&n=1",
		"event?id=evt_dead_1&msg=redriven&n=1",
		"search?q=in_paid_1",
	} {
		status, _ := f.get(t, path)
		require.Equal(t, http.StatusOK, status, path)
	}
}
