package idempotency_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// accountEvent is snapshotEvent's invoice.paid event of account ("" for
// the platform's own), as the Events API lists it under that account.
func accountEvent(t *testing.T, id, account string, created int64) []byte {
	t.Helper()
	raw := snapshotEvent(t, id, "invoice.paid", "in_"+id, created)
	if account == "" {
		return raw
	}
	return eventWith(t, raw, "account", account)
}

// eventWith is the event raw with its top-level key set to value.
func eventWith(t *testing.T, raw []byte, key string, value any) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev[key] = value
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// addAccountEvents adds, one a second from an hour before now, n events of
// each account in turn, and returns their ids by account.
func addAccountEvents(t *testing.T, f *fakeStripe, now time.Time, n int, accounts ...string) map[string][]string {
	t.Helper()
	ids := map[string][]string{}
	created := now.Add(-time.Hour).Unix()
	for i := range n {
		for _, acct := range accounts {
			id := fmt.Sprintf("evt_%s_%02d", strings.TrimPrefix(acct, "acct_"), i)
			if acct == "" {
				id = fmt.Sprintf("evt_platform_%02d", i)
			}
			f.add(accountEvent(t, id, acct, created))
			ids[acct] = append(ids[acct], id)
			created++
		}
	}
	return ids
}

// TestRecoverConnectedAccount: with Account, every request lists as that
// connected account (Stripe-Account, also on the request asked again
// after a 503), and only its events are applied, each once, with its
// Account; the checkpoint keeps the account, and continuing it as another
// account, or as the platform, is refused with ErrCheckpointMismatch
// before any request. Before, Recover sent no Stripe-Account and applied
// the platform's own events.
func TestRecoverConnectedAccount(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		now := time.Now()
		ids := addAccountEvents(t, f, now, 7, "", "acct_A", "acct_B")
		f.fail = func(n int, _ *http.Request) int {
			if n == 2 {
				return http.StatusServiceUnavailable
			}
			return 0
		}
		h := app.handler(t)
		opts := idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Account: "acct_A", Checkpoint: "acct_A", PageSize: 3, RequestsPerSecond: 100}
		rep, err := idempotency.RecoverWithBackoff(t.Context(), h, client, opts, time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, 7, rep.Processed)
		require.Equal(t, ids["acct_A"][6], rep.LastEventID)
		app.requireAppliedOnce(t, ids["acct_A"])
		for _, id := range ids["acct_A"] {
			require.Equal(t, "acct_A", app.account[id], id)
		}
		calls := f.calls()
		require.Equal(t, http.StatusServiceUnavailable, calls[1].Status)
		require.Equal(t, calls[1].Query, calls[2].Query, "asked again")
		for i, c := range calls {
			require.Equal(t, []string{"acct_A"}, c.Header.Values("Stripe-Account"), "request %d", i+1)
		}

		for _, other := range []string{"acct_B", ""} {
			o := opts
			o.Account = other
			rep, err := h.Recover(t.Context(), client, o)
			require.ErrorIs(t, err, idempotency.ErrCheckpointMismatch, other)
			require.ErrorContains(t, err, `checkpoint "acct_A" has RecoverOptions.Account "acct_A", not `)
			require.Zero(t, rep.Requests)
		}
		require.Len(t, f.calls(), len(calls), "no request made")

		// The checkpoint continues as its account.
		rep, err = h.Recover(t.Context(), client, opts)
		require.NoError(t, err)
		require.True(t, rep.Resumed)
		require.Zero(t, rep.Processed)
		app.requireAppliedOnce(t, ids["acct_A"])
	})
}

// TestRecoverRefusesAnotherAccountsEvents: an Events API (a proxy, a fake)
// that lists events of another account than the one asked for, the
// platform's own under Account or a connected account's without it, stops
// the run with ErrStripeAPI at the first page that holds one, and nothing
// of that page is handed to the Handler. Before, they were applied.
func TestRecoverRefusesAnotherAccountsEvents(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		f.ignoreAccount = true // drops Stripe-Account
		client := f.serve(t)
		now := time.Now()
		addAccountEvents(t, f, now, 2, "acct_A", "")
		h := app.handler(t)
		for _, c := range []struct{ account, says string }{
			{"acct_A", `listing the events of connected account "acct_A": event evt_platform_01 is the platform's own (no account)`},
			{"", `listing the platform's own events: event evt_A_01 is of connected account "acct_A"`},
		} {
			rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Account: c.account})
			require.ErrorIs(t, err, idempotency.ErrStripeAPI, c.account)
			require.ErrorContains(t, err, c.says)
			require.Equal(t, idempotency.RecoverReport{Requests: 1}, rep)
		}
		require.Empty(t, app.appliedCounts(t))
	})
}

// TestRecoverSummaryNamesTheAccount: the summary a run of a connected
// account logs names it, so that the lines of a loop over accounts tell
// which account each run was; a run of the platform's own events names
// none. Before, the summaries of every account read alike.
func TestRecoverSummaryNamesTheAccount(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	f := newFakeStripe()
	now := time.Now()
	addAccountEvents(t, f, now, 1, "acct_A", "")
	log, buf := testLogger()
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: log})
	require.NoError(t, err)
	for _, account := range []string{"acct_A", ""} {
		_, err = h.Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour), Account: account})
		require.NoError(t, err)
	}
	var summaries []map[string]any
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec["msg"] == "stripe recovery: done" {
			summaries = append(summaries, rec)
		}
	}
	require.Len(t, summaries, 2)
	require.Equal(t, "acct_A", summaries[0]["account"])
	require.NotContains(t, summaries[1], "account")
}

// TestRecoverRefusedListedEventNotQuotedWhole: the listed event that stops
// a run, of another account or mode, is named in the run's error by its id
// and account only when they are identifiers, as Stripe's are: an Events
// API that is not Stripe's (a proxy, a fake) may put anything there, a
// payload or a megabyte, which would reach the logs whole.
func TestRecoverRefusedListedEventNotQuotedWhole(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	app := newService(t, "memory")
	now := time.Now()
	created := now.Add(-time.Hour).Unix()
	requireBounded := func(t *testing.T, err error) {
		t.Helper()
		require.NotContains(t, err.Error(), "xxxxxxxx")
		require.Less(t, len(err.Error()), 1000, err.Error())
		require.ErrorContains(t, err, "(not an identifier, not quoted)")
	}

	t.Run("another account", func(t *testing.T) {
		f := newFakeStripe()
		f.ignoreAccount = true
		f.add(accountEvent(t, "evt_"+long, "acct_"+long, created))
		_, err := app.handler(t).Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
		require.ErrorIs(t, err, idempotency.ErrStripeAPI)
		requireBounded(t, err)
	})
	t.Run("another mode", func(t *testing.T) {
		f := newFakeStripe()
		f.key = "sk_org_fake_0123456789" // a prefix that names no mode
		f.add(liveEvent(t, "evt_"+long, false, created))
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Mode: idempotency.ModeLive})
		require.NoError(t, err)
		_, err = h.Recover(t.Context(), f.inProcess(), idempotency.RecoverOptions{Since: now.Add(-2 * time.Hour)})
		require.ErrorIs(t, err, idempotency.ErrModeMismatch)
		requireBounded(t, err)
	})
	require.Empty(t, app.appliedCounts(t))
}
