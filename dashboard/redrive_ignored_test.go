package dashboard_test

import (
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRedriveIgnoredEvent: an event recorded ignored (Config.RecordIgnored)
// has a Redrive button on its page, as a dead letter has, and the list of
// ignored events a bulk one, which names events only, with or without a
// kind; each moves what it names back to pending. A redrive of ignored
// tasks is refused, 400: a task is never ignored.
func TestRedriveIgnoredEvent(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	h, err := f.inbox.Handler(idempotency.Config{Secrets: []string{secret}, RecordIgnored: true, Now: f.clock.Now,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, id := range []string{"evt_ign_1", "evt_ign_2"} {
		ans := idempotencytest.Deliver(h, eventPayload(t, "invoice.payment_succeeded", id, "in_"+id), secret)
		require.Equal(t, idempotency.OutcomeIgnored, ans.Outcome, ans.Body)
	}

	_, body := f.get(t, "event?id=evt_ign_1")
	resp := f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "./event?id=evt_ign_1&msg=redriven&n=1", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_ign_1"))
	require.Equal(t, idempotency.InboxIgnored, f.state(t, "evt_ign_2"))

	_, body = f.get(t, "events?state=ignored")
	contains(t, body, `id="redrive-all">Redrive every ignored event</button>`, "events only: a task is never ignored")
	_, body = f.get(t, "events?kind=event&state=ignored")
	contains(t, body, `id="redrive-all">Redrive every ignored event</button>`)
	resp = f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "./events?kind=event&msg=redriven&n=1&state=ignored", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_ign_2"))

	resp = f.post(t, "redrive", "kind=task&state=ignored", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	contains(t, resp.body, "A task is never ignored")
}
