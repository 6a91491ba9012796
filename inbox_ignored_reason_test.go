package idempotency_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxIgnoredByWorkerSaysWhy: a worker that records an event ignored
// (no handler for its type, received longer than RetryUnhandledFor ago)
// keeps why in its LastError, worded as its failed attempts' ErrNoHandler,
// in the same words on both stores, as Lookup and List read it, never the
// payload, gives it to OnResult in Result.IgnoredReason, and logs it at
// Warn once; Result.Err stays nil, as for every ignored outcome.
// Redriven, it keeps that error while pending, as any redriven event
// keeps its last; applied, it has none.
func TestInboxIgnoredByWorkerSaysWhy(t *testing.T) {
	t.Parallel()
	const why = "idempotency: no handler for the event's type in this process: invoice.paid " +
		"(recorded ignored: not applied within RetryUnhandledFor, 1h0m0s, after it was received)"
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			logger, logs := testLogger()
			var results []idempotency.Result
			cfg := idempotency.InboxConfig{Now: clock.Now, Logger: logger,
				OnResult: func(r idempotency.Result) { results = append(results, r) }}
			applied := map[string]int{}
			newRelease, h, oldRelease := rollingReleases(t, store, cfg, applied)
			a := idempotencytest.Deliver(h, invoicePayload(t, "evt_ign_why", "in_ign_why", "acct_1"), testSecret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
			record := func() idempotency.InboxRecord { return mustLookup(t, newRelease, "evt_ign_why") }
			work := func(in *idempotency.Inbox, want int) { workDue(t, in, want) }

			work(oldRelease, 1)
			require.Equal(t, idempotency.InboxFailed, record().State)
			clock.Advance(idempotency.DefaultRetryUnhandledFor)
			work(oldRelease, 1)
			rec := record()
			require.Equal(t, idempotency.InboxIgnored, rec.State)
			require.Equal(t, why, rec.LastError)
			listed, err := newRelease.List(t.Context(), idempotency.InboxFilter{States: []idempotency.InboxState{idempotency.InboxIgnored}})
			require.NoError(t, err)
			require.Len(t, listed, 1)
			require.Equal(t, why, listed[0].LastError, "as List reads it")
			require.Len(t, results, 2)
			require.Equal(t, idempotency.OutcomeIgnored, results[1].Outcome)
			require.Equal(t, idempotency.InboxIgnored, results[1].State)
			require.NoError(t, results[1].Err, "an ignored outcome is no failure")
			require.Equal(t, why, results[1].IgnoredReason)
			require.Empty(t, results[0].IgnoredReason, "a failed attempt's")
			work(oldRelease, 0)

			var warns []string
			for line := range strings.Lines(logs.String()) {
				if strings.Contains(line, `"level":"WARN"`) {
					warns = append(warns, line)
				}
			}
			require.Len(t, warns, 1, logs.String())
			require.Contains(t, warns[0], `"outcome":"ignored"`)
			require.Contains(t, warns[0], `"event_id":"evt_ign_why"`)
			require.Contains(t, warns[0], `"ignored_reason":"`+why+`"`)
			require.NotContains(t, logs.String(), "jenny.rosen@example.com", "no payload")

			n, err := newRelease.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_ign_why"},
				States: []idempotency.InboxState{idempotency.InboxIgnored}})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			rec = record()
			require.Equal(t, idempotency.InboxPending, rec.State)
			require.Equal(t, why, rec.LastError, "kept until its next attempt ends, as a redriven dead letter's")
			work(newRelease, 1)
			rec = record()
			require.Equal(t, idempotency.InboxProcessed, rec.State)
			require.Empty(t, rec.LastError)
			require.Equal(t, map[string]int{"evt_ign_why": 1}, applied)
		})
	}
}
