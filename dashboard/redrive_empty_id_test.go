package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestRedriveEmptyIDIsABadForm: a redrive form with an empty id is refused
// as a bad form that says so, and logged, as forget's is; nothing moves.
// It was answered "Bad input ... (a NUL byte or invalid UTF-8)", a cause
// it did not have, and left no record of the refusal.
func TestRedriveEmptyIDIsABadForm(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	for _, form := range []string{"id=", "id=evt_dead_1&id="} {
		resp := f.post(t, "redrive", form, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, form)
		contains(t, resp.body, "An event id is empty.", form)
		notContains(t, resp.body, "NUL byte", form)
		require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"), "nothing redriven")
	}
	require.Equal(t, 2, strings.Count(f.logs(t), "action refused: bad form"), f.logs(t))
}
