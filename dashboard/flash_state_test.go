package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency/dashboard"
)

// TestFlashNothingRedrivenNamesTheListsState: a bulk redrive of a list
// (one state) that moves nothing names that state, not all three; a
// redrive by ids, which takes any, names all three; a state no redrive
// takes names all three too, so a hand-made link cannot put words on the
// page. The list of ignored records, of every kind, names events alone:
// a task is never ignored.
func TestFlashNothingRedrivenNamesTheListsState(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	for q, want := range map[string]string{
		"state=dead_letter":      "Nothing redriven: no event selected is still dead-lettered.",
		"state=failed":           "Nothing redriven: no event selected is still failed.",
		"state=ignored":          "Nothing redriven: no event selected is still ignored.",
		"":                       "Nothing redriven: no event selected is still dead-lettered, failed or ignored.",
		"state=processed":        "Nothing redriven: no event selected is still dead-lettered, failed or ignored.",
		"state=%3Cb%3E":          "Nothing redriven: no event selected is still dead-lettered, failed or ignored.",
		"kind=task&state=failed": "Nothing redriven: no event selected is still failed.",
	} {
		_, body := f.get(t, "events?msg=redriven&n=0&"+q)
		contains(t, body, want, q)
	}
	_, body := f.get(t, "events?msg=redriven-tasks&n=0&kind=task&state=dead_letter")
	contains(t, body, "Nothing redriven: no task selected is still dead-lettered.")

	// The list's own redrive button carries its state to the message.
	f = memoryFixture(t, dashboard.Config{AllowRedrive: true})
	resp := f.post(t, "redrive", "kind=event&state=failed&type=no.such.type", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, body = f.get(t, resp.Header.Get("Location")[2:])
	contains(t, body, "Nothing redriven: no event selected is still failed.")

	// The list of ignored records of every kind redrives events alone (a
	// task is never ignored), and its message says so.
	resp = f.post(t, "redrive", "state=ignored&type=no.such.type", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "./events?msg=redriven&n=0&state=ignored&type=no.such.type", resp.Header.Get("Location"))
	_, body = f.get(t, resp.Header.Get("Location")[2:])
	contains(t, body, "Nothing redriven: no event selected is still ignored.")
}
