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
		badQuery(t, f, c.path, "Unknown query key "+c.key)
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

// TestQueryUnparsedRefused: a query part that does not parse (a
// semicolon, which Go no longer takes as a separator, or a bad %
// escape) is answered 400, as an unknown key is, instead of dropped
// (?state=dead_letter;x=1 listed every record).
func TestQueryUnparsedRefused(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowForget: true})
	for _, path := range []string{
		"events?state=dead_letter;x=1",
		"events?state=dead%_letter",
		"events?kind=task&stat%e=failed",
		"event?id=evt_dead_1;",
		"search?q=in_paid_1%",
		"forget?id=evt_dead_1;",
		"?msg=redriven;n=2",
	} {
		badQuery(t, f, path, "The query does not parse")
	}
}

// badQuery requires path to be answered 400 with want on the page, and
// no record listed.
func badQuery(t *testing.T, f *fixture, path, want string) {
	t.Helper()
	status, body := f.get(t, path)
	require.Equal(t, http.StatusBadRequest, status, path)
	contains(t, html.UnescapeString(body), want, path)
	notContains(t, body, `data-id=`, path)
}
