package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"runtime"
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
//
// An event whose worker died (its lease expired, its transaction rolled
// back) waits, once an earlier event of its object came in meanwhile,
// behind that one: its page lists it, and says, below, that the event's
// own lease expired and what the next lease does with it. (A worker
// applying an event is held back by nothing: only an expired lease's event
// can be processing and held back, on either store.)
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
	idempotency.On(hs, "payment_intent.succeeded", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[json.RawMessage]) error {
		if ev.ID == "evt_worker_died" {
			runtime.Goexit() // the worker dies mid-attempt, as under kill -9
		}
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
	// The page writes the lease's words as a value, its apostrophe escaped.
	contains(t, expired, `<p class="muted" id="held-by-none">Nothing holds it back: its worker&#39;s lease expired at `+until+
		` (30s ago); the next lease retries it, or dead-letters it after its last attempt.</p>`)
	contains(t, held, `<td>lease expired at `+until+`</td>`)
	require.Equal(t, idempotency.InboxProcessed, f.state(t, ev.ID), "the worker committed in its transaction")

	// A worker dies applying an event; an earlier event of its object
	// comes in once its lease expired.
	a = idempotencytest.Deliver(hook, eventPayload(t, "payment_intent.succeeded", "evt_worker_died", "pi_died"), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	died := make(chan struct{})
	go func() {
		defer close(died)
		_, _ = inbox.WorkDue(context.Background())
	}()
	<-died
	dead, ok, err := inbox.Lookup(t.Context(), "evt_worker_died")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.InboxProcessing, dead.State)
	f.clock.Advance(2 * time.Minute) // past its lease (a minute)
	earlier := bytes.Replace(eventPayload(t, "payment_intent.succeeded", "evt_before_death", "pi_died"),
		[]byte(`"created":1756746001`), []byte(`"created":1756746000`), 1)
	a = idempotencytest.Deliver(hook, earlier, secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	_, waits := f.get(t, "event?id=evt_worker_died")
	contains(t, waits, `<tr data-id="evt_before_death" data-state="pending">`, "the earlier event holds it back")
	deadUntil := dead.LeaseUntil.UTC().Format("2006-01-02 15:04:05 UTC")
	contains(t, waits, `<p class="muted" id="lease">It is processing: its worker&#39;s lease expired at `+deadUntil+
		` (1m 0s ago); the next lease retries it once nothing holds it back, or dead-letters it after its last attempt without waiting.</p>`)
	notContains(t, waits, `id="held-by-none"`)
}
