package dashboard_test

import (
	"testing"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestRedriveColumnNamedForScreenReaders: a table's column of Redrive
// buttons has a heading a screen reader reads, "Redrive", hidden on
// screen (class visually-hidden); it was an empty <th>, so that a screen
// reader moving along a row announced its cell with no column name.
func TestRedriveColumnNamedForScreenReaders(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	for _, page := range []string{"", "events?state=dead_letter", "search?q=in_dead_1"} {
		_, body := f.get(t, page)
		contains(t, body, `<th><span class="visually-hidden">Redrive</span></th></tr></thead>`, page)
		notContains(t, body, `<th></th>`, page)
	}
}
