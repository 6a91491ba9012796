package dashboard_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestForgetConfirmationLooksTheEventUp: the page that asks to confirm a
// forget shows what will be forgotten (type, inbox state, received, the
// ledger's claim) and offers the button only when the forget would act:
// an id known nowhere is 404, an event still to be applied and a task are
// 409 with the reason, neither with a button. The page showed the id
// alone, and its button for any id, whose forget then found nothing or
// was refused. The forget, sent after the event changed, checks again.
func TestForgetConfirmationLooksTheEventUp(t *testing.T) {
	t.Parallel()
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, open(t), dashboard.Config{AllowForget: true, AllowRedrive: true})
			f.populate(t)
			f.claimSynchronously(t, "evt_sync_1", "in_sync_1")
			received := func(id string) string {
				t.Helper()
				claim, ok, err := f.store.LookupEvent(t.Context(), id)
				require.NoError(t, err)
				require.True(t, ok, id)
				return claim.ReceivedAt.UTC().Format("2006-01-02 15:04:05 UTC")
			}
			const button = `id="confirm-forget"`

			status, body := f.get(t, "forget?id=evt_paid_1")
			require.Equal(t, http.StatusOK, status, body)
			contains(t, body, "<h1>Forget evt_paid_1?</h1>")
			contains(t, body, `id="forget-type">invoice.paid<`)
			contains(t, body, `id="forget-state">processed<`)
			contains(t, body, `id="forget-received">`+received("evt_paid_1")+`<`)
			contains(t, body, `id="forget-claim">claimed: processed`)
			contains(t, body, button)

			status, body = f.get(t, "forget?id=evt_dead_1")
			require.Equal(t, http.StatusOK, status, body)
			contains(t, body, `id="forget-state">dead_letter<`)
			contains(t, body, `id="forget-claim">not claimed<`)
			contains(t, body, button, "a dead-lettered event is forgotten")

			status, body = f.get(t, "forget?id=evt_sync_1")
			require.Equal(t, http.StatusOK, status, body)
			contains(t, body, `id="forget-type">invoice.paid<`)
			contains(t, body, `id="forget-state">not in the inbox<`)
			contains(t, body, `id="forget-received">`+received("evt_sync_1")+`<`)
			contains(t, body, `id="forget-claim">claimed: processed`)
			contains(t, body, button, "a claim alone (synchronous mode) is forgotten")

			status, body = f.get(t, "forget?id=evt_nope")
			require.Equal(t, http.StatusNotFound, status, body)
			contains(t, body, `id="forget-refused">Nothing to forget: no event with this id in the inbox or the ledger. (Guards`)
			notContains(t, body, button)
			notContains(t, body, `action="forget"`)

			status, body = f.get(t, "forget?id=evt_waiting")
			require.Equal(t, http.StatusConflict, status, body)
			contains(t, body, `id="forget-state">pending<`)
			contains(t, body, `id="forget-refused">Not forgotten now: the event is still to be applied`)
			notContains(t, body, button)

			status, body = f.get(t, "forget?id=task:send-receipt:in_paid_1")
			require.Equal(t, http.StatusConflict, status, body)
			contains(t, body, `id="forget-refused">Not forgotten: this is a task`)
			notContains(t, body, button)

			// The page showed the button; the event was redriven before
			// the click: the forget checks again, and refuses it.
			_, body = f.get(t, "forget?id=evt_dead_1")
			contains(t, body, button)
			n, err := f.inbox.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_dead_1"}})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			resp := f.post(t, "forget", "confirm=yes&id=evt_dead_1", nil)
			require.Equal(t, http.StatusSeeOther, resp.StatusCode)
			require.Equal(t, "./event?id=evt_dead_1&msg=forget-unfinished", resp.Header.Get("Location"))
			require.Equal(t, idempotency.InboxPending, f.state(t, "evt_dead_1"))
		})
	}
}

// TestForgetConfirmationWithoutLedger: a dashboard without a Ledger
// shows the inbox's record, says the claim was not looked up, and
// answers an id the inbox does not have 404, naming where it looked.
func TestForgetConfirmationWithoutLedger(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	d, err := dashboard.New(dashboard.Config{Inbox: f.inbox, AllowForget: true, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		d.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	status, body := get("/forget?id=evt_paid_1")
	require.Equal(t, http.StatusOK, status, body)
	contains(t, body, `id="forget-state">processed<`)
	contains(t, body, `id="forget-claim">not looked up: this dashboard has no ledger (Config.Ledger)<`)
	contains(t, body, `id="confirm-forget"`)

	status, body = get("/forget?id=evt_nope")
	require.Equal(t, http.StatusNotFound, status, body)
	contains(t, body, `id="forget-refused">Nothing to forget: no event with this id in the inbox (this dashboard has no ledger to look in).<`)
	notContains(t, body, `id="confirm-forget"`)
}

// claimSynchronously applies the invoice.paid event eventID in
// synchronous mode, on the fixture's store: a claim in the ledger, no row
// in the inbox.
func (f *fixture) claimSynchronously(t *testing.T, eventID, objectID string) {
	t.Helper()
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	h, err := idempotency.NewHandler(f.store, hs, idempotency.Config{Secrets: []string{secret}, Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ans := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", eventID, objectID), secret)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	require.Equal(t, idempotency.OutcomeProcessed, ans.Outcome)
}
