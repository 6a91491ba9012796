package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestRowRedriveButtonNamesItsRecord: each row's Redrive button of a
// table is named for a screen reader by the record it redrives, "Redrive
// evt_...", as a row's context is not read out when the focus moves from
// button to button with Tab; the button reads Redrive.
func TestRowRedriveButtonNamesItsRecord(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	for _, page := range []string{"", "events?state=dead_letter"} {
		status, body := f.get(t, page)
		require.Equal(t, http.StatusOK, status, page)
		contains(t, body, `<button type="submit" class="redrive" aria-label="Redrive evt_dead_1">Redrive</button>`, page)
	}
}
