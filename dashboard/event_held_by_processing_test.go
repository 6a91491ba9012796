package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestEventHeldByProcessing: the page of an event a worker holds, which
// nothing else holds back, says a worker holds it under a lease, until
// when, not that it is due at its next attempt, which it has none of
// while processing; once the lease's end is past by the dashboard's
// clock, it says the lease expired, not that a worker holds it, and so
// does the page of a later event of its object that it holds back.
func TestEventHeldByProcessing(t *testing.T) {
	t.Parallel()
	f := memoryFixture(t, dashboard.Config{})
	hs := idempotency.NewHandlers()
	started, release := make(chan struct{}), make(chan struct{})
	idempotency.On(hs, "payout.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		close(started)
		<-release
		return nil
	})
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(f.store, hs, idempotency.InboxConfig{Now: f.clock.Now, Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, Logger: quiet})
	require.NoError(t, err)
	payload, err := os.ReadFile("../testdata/stripe-events/payout.paid.json")
	require.NoError(t, err)
	a := idempotencytest.Deliver(hook, payload, secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	var ev struct{ ID string }
	require.NoError(t, json.Unmarshal(payload, &ev))
	worked := make(chan error, 1)
	go func() {
		_, err := inbox.WorkDue(context.Background())
		worked <- err
	}()
	<-started
	rec, ok, err := inbox.Lookup(t.Context(), ev.ID)
	require.NoError(t, err)
	require.True(t, ok)
	until := rec.LeaseUntil.UTC().Format("2006-01-02 15:04:05 UTC")
	status, body := f.get(t, "event?id="+ev.ID)
	f.clock.Advance(time.Minute + 30*time.Second) // past the lease (a minute)
	_, expired := f.get(t, "event?id="+ev.ID)
	// A later event of its payout waits behind it.
	next := bytes.Replace(bytes.Replace(payload, []byte(ev.ID), []byte(ev.ID+"next"), 1),
		[]byte(`"created": 1756828800`), []byte(`"created": 1756828801`), 1)
	a = idempotencytest.Deliver(hook, next, secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	_, held := f.get(t, "event?id="+ev.ID+"next")
	close(release)
	require.NoError(t, <-worked)

	require.Equal(t, http.StatusOK, status, body)
	// The lease's end is kept to the microsecond: a minute from the
	// clock's now, less the fraction cut, "in 59s".
	require.Regexp(t, `<p class="muted" id="held-by-none">Nothing holds it back: a worker holds it under a lease until `+
		regexp.QuoteMeta(until)+` \(in (59s|1m 0s)\)\.</p>`, body)
	contains(t, expired, `<p class="muted" id="held-by-none">Nothing holds it back: its worker's lease expired at `+until+
		` (30s ago); the next lease retries it, or dead-letters it after its last attempt.</p>`)
	contains(t, held, `<td>lease expired at `+until+`</td>`)
	require.Equal(t, idempotency.InboxProcessed, f.state(t, ev.ID), "the worker committed in its transaction")
}
