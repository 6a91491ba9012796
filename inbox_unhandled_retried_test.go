package idempotency_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxUnhandledTypeRetried: in a rolling deploy that adds a handler,
// a replica not yet updated can take an event that an updated one stored.
// Its attempt fails with ErrNoHandler and the event is retried with
// backoff, so that a process that has the handler applies it, once. It was
// recorded ignored at once, for good: the event was never applied. Only
// an event older than InboxConfig.RetryUnhandledFor (an hour by default)
// is recorded ignored, as one whose handler was removed on purpose.
func TestInboxUnhandledTypeRetried(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			var results []idempotency.Result
			cfg := idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger(),
				OnResult: func(r idempotency.Result) { results = append(results, r) }}
			applied := map[string]int{}
			newRelease, h, oldRelease := rollingReleases(t, store, cfg, applied)
			deliver := func(id string) {
				t.Helper()
				a := idempotencytest.Deliver(h, invoicePayload(t, id, "in_"+id, "acct_1"), testSecret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			}
			record := func(id string) idempotency.InboxRecord { return mustLookup(t, newRelease, id) }
			work := func(in *idempotency.Inbox, want int) { workDue(t, in, want) }

			deliver("evt_rolling")
			work(oldRelease, 1)
			rec := record("evt_rolling")
			require.Equal(t, idempotency.InboxFailed, rec.State, "retried, not ignored")
			require.Equal(t, 1, rec.Attempt)
			require.Contains(t, rec.LastError, "no handler")
			require.Contains(t, rec.LastError, "invoice.paid")
			require.Len(t, results, 1)
			require.Equal(t, idempotency.OutcomeFailed, results[0].Outcome)
			require.ErrorIs(t, results[0].Err, idempotency.ErrNoHandler)

			clock.Advance(2 * time.Second) // past the first backoff, 1 s ±10%
			work(newRelease, 1)
			require.Equal(t, idempotency.InboxProcessed, record("evt_rolling").State)
			require.Equal(t, map[string]int{"evt_rolling": 1}, applied)

			// An event that no process applied within the window: its
			// handler is gone for good, and it is recorded ignored.
			deliver("evt_removed")
			work(oldRelease, 1)
			require.Equal(t, idempotency.InboxFailed, record("evt_removed").State)
			clock.Advance(idempotency.DefaultRetryUnhandledFor)
			work(oldRelease, 1)
			rec = record("evt_removed")
			require.Equal(t, idempotency.InboxIgnored, rec.State)
			require.Equal(t, 2, rec.Attempt)
			require.Equal(t, map[string]int{"evt_rolling": 1}, applied)
		})
	}
}

// mustLookup is id's inbox record, failing the test when there is none.
func mustLookup(t *testing.T, in *idempotency.Inbox, id string) idempotency.InboxRecord {
	t.Helper()
	rec, ok, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok, id)
	return rec
}

// workDue runs in.WorkDue and requires it to make want attempts.
func workDue(t *testing.T, in *idempotency.Inbox, want int) {
	t.Helper()
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, n)
}

// rollingReleases are two inboxes of a rolling deploy on store, with cfg:
// the new release's, which has a handler of invoice.paid (counting the
// events it applies in applied) and the Handler that stores them, and the
// old release's, which has none.
func rollingReleases(t *testing.T, store idempotency.Store, cfg idempotency.InboxConfig, applied map[string]int) (newRelease *idempotency.Inbox, h *idempotency.Handler, oldRelease *idempotency.Inbox) {
	t.Helper()
	updated := idempotency.NewHandlers()
	idempotency.On(updated, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		applied[ev.ID]++
		return nil
	})
	newRelease, err := idempotency.NewInbox(store, updated, cfg)
	require.NoError(t, err)
	h, err = newRelease.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: cfg.Now})
	require.NoError(t, err)
	oldRelease, err = idempotency.NewInbox(store, idempotency.NewHandlers(), cfg)
	require.NoError(t, err)
	return newRelease, h, oldRelease
}
