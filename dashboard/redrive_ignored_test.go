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
// ignored events of one type a bulk one, which names events only, with or
// without a kind; each moves what it names back to pending. A redrive of
// ignored tasks is refused, 400: a task is never ignored.
func TestRedriveIgnoredEvent(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	deliverIgnored(t, f, "evt_ign_1", "evt_ign_2")

	_, body := f.get(t, "event?id=evt_ign_1")
	resp := f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "./event?id=evt_ign_1&msg=redriven&n=1", resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_ign_1"))
	require.Equal(t, idempotency.InboxIgnored, f.state(t, "evt_ign_2"))

	const typed = "state=ignored&type=invoice.payment_succeeded"
	_, body = f.get(t, "events?"+typed)
	contains(t, body, `id="redrive-all">Redrive every ignored event of type invoice.payment_succeeded</button>`, "events only: a task is never ignored")
	_, body = f.get(t, "events?kind=event&"+typed)
	contains(t, body, `id="redrive-all">Redrive every ignored event of type invoice.payment_succeeded</button>`)
	resp = f.post(t, "redrive", pageForm(t, body, "redrive"), nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, "./events?kind=event&msg=redriven&n=1&"+typed, resp.Header.Get("Location"))
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_ign_2"))

	resp = f.post(t, "redrive", "kind=task&state=ignored", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	contains(t, resp.body, "A task is never ignored")
}

// TestBulkRedriveIgnoredNeedsType: with RecordIgnored the ignored events
// are also those of every type no release handles, and one redriven
// within RetryUnhandledFor of its receipt holds its object back: the list
// of ignored events offers its bulk redrive only when filtered by type
// (without one, it says to filter by type), and a POST of one without a
// type (by kind, time range, nothing, or a type of spaces alone) is
// refused, 400, saying why, nothing moved. By id, one is redriven; a type
// with spaces around it is read without them, as the list's filter reads
// it.
func TestBulkRedriveIgnoredNeedsType(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{AllowRedrive: true})
	deliverIgnored(t, f, "evt_ignt_1")

	for _, q := range []string{"state=ignored", "kind=event&state=ignored", "state=ignored&since=2000-01-01T00:00"} {
		_, body := f.get(t, "events?"+q)
		contains(t, body, "evt_ignt_1", q)
		notContains(t, body, `id="redrive-all"`, q)
		contains(t, body, `id="redrive-all-needs-type">To redrive every ignored event of a type, filter the list by that type`, q)
		contains(t, body, `class="redrive"`, "each row's own button: "+q)
	}
	for _, form := range []string{"state=ignored", "kind=event&state=ignored&type=", "kind=event&state=ignored&type=%20",
		"state=ignored&since=2000-01-01T00:00"} {
		resp := f.post(t, "redrive", form, nil)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, form)
		contains(t, resp.body, "Redrive ignored events of one type", form)
		require.Equal(t, idempotency.InboxIgnored, f.state(t, "evt_ignt_1"), form)
	}
	resp := f.post(t, "redrive", "id=evt_ignt_1", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_ignt_1"))

	// The type is read as the list's filter reads it, without the spaces
	// around it.
	deliverIgnored(t, f, "evt_ignt_2")
	resp = f.post(t, "redrive", "kind=event&state=ignored&type=%20invoice.payment_succeeded%20", nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, resp.body)
	require.Equal(t, idempotency.InboxPending, f.state(t, "evt_ignt_2"))
}

// TestIgnoredEventPageSaysWhy: the page of an event a worker recorded
// ignored (a receiver with the handler stored it, and no worker applied it
// within RetryUnhandledFor) shows why, its last error, as any event's page
// shows its last error.
func TestIgnoredEventPageSaysWhy(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	f.deliver(t, "invoice.paid", "evt_ignw_1", "in_ignw_1")
	without, err := idempotency.NewInbox(f.store, idempotency.NewHandlers(), idempotency.InboxConfig{Now: f.clock.Now,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	f.clock.Advance(idempotency.DefaultRetryUnhandledFor)
	_, err = without.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, idempotency.InboxIgnored, f.state(t, "evt_ignw_1"))

	_, body := f.get(t, "event?id=evt_ignw_1")
	contains(t, body, `id="state">ignored<`)
	contains(t, body, `id="last-error">idempotency: no handler for the event&#39;s type in this process: invoice.paid `+
		`(recorded ignored: not applied within RetryUnhandledFor, 1h0m0s, after it was received)<`)
}

// deliverIgnored delivers an invoice.payment_succeeded event (a type the
// fixture has no handler for) of each id to an inbox Handler with
// RecordIgnored, which stores it ignored.
func deliverIgnored(t *testing.T, f *fixture, ids ...string) {
	t.Helper()
	h, err := f.inbox.Handler(idempotency.Config{Secrets: []string{secret}, RecordIgnored: true, Now: f.clock.Now,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, id := range ids {
		ans := idempotencytest.Deliver(h, eventPayload(t, "invoice.payment_succeeded", id, "in_"+id), secret)
		require.Equal(t, idempotency.OutcomeIgnored, ans.Outcome, ans.Body)
	}
}
