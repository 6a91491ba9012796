package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
)

// Config.Logger receives one record per action taken or refused: an
// action refused for its form (400) is logged too, with the action and
// the reason, not only an action turned off or cross-origin. Before, a
// bad form left no record.
func TestActionRefusedForItsFormIsLogged(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true, AllowForget: true})
	for _, c := range []struct{ action, form, reason string }{
		{"redrive", "state=processed", "Redrive takes event ids"},
		{"redrive", "state=dead_letter&kind=job", "Unknown kind"},
		{"forget", "", "Forget takes an event id"},
		{"redrive", "state=%zz", "could not be read"},
	} {
		resp := f.post(t, c.action, c.form, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, c.action+" "+c.form)
		logs := f.logs(t)
		var found bool
		for line := range strings.SplitSeq(logs, "\n") {
			if strings.Contains(line, "action refused") && strings.Contains(line, "action="+c.action) && strings.Contains(line, c.reason) {
				found = true
			}
		}
		require.True(t, found, "%s %q: no record of the refusal in\n%s", c.action, c.form, logs)
	}
	require.Equal(t, idempotency.InboxDeadLetter, f.state(t, "evt_dead_1"), "nothing redriven")
}
