package dashboard_test

import (
	"html"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestListSaysWhenThereAreMore: a list page says, above its rows, how
// many it shows and, when the filter selects more than fit, that there
// are more, linking the next page: the Next link is below the last row,
// out of sight on a page of 100; the last page says none.
func TestListSaysWhenThereAreMore(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	status, body := f.get(t, "events?kind=event&limit=3")
	require.Equal(t, http.StatusOK, status)
	m := regexp.MustCompile(`<p class="muted" id="shown">Newest first, 3 on this page; there are more: <a href="([^"]+)">next page</a>.</p>`).FindStringSubmatch(body)
	require.NotNil(t, m, "the first of two pages")
	status, body = f.get(t, html.UnescapeString(m[1]))
	require.Equal(t, http.StatusOK, status)
	contains(t, body, `<p class="muted" id="shown">Newest first, 2 on this page.</p>`, "the last page")
}
