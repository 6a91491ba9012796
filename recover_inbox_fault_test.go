package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// Handler.Recover of an inbox Handler on a real PostgreSQL, with faults,
// as TestPgxRecoverFault is for a synchronous one: 60 events recovered 10 a
// page into the inbox of faultApp's service. When the run asks for its
// third page (the first two stored and the checkpoint saved), the
// process's sessions end (pg_terminate_backend) or the database stops.
// The checkpoint, as stored and as reported, stands at an event up to
// which every event is in the inbox; the checkpoint's next run stores the
// rest, and the workers apply every event exactly once.

// TestPgxRecoverInboxFault: see above; the restart's subtest is not
// parallel.
func TestPgxRecoverInboxFault(t *testing.T) {
	t.Run("sessions-terminated", func(t *testing.T) {
		t.Parallel()
		a := newFaultApp(t)
		recoverInboxFault(t, a, a.db.URL, func(t *testing.T, p *faultProc) func() {
			require.Positive(t, a.terminateSessions(t, p))
			return func() {}
		})
	})
	t.Run("database-restart", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		a := newFaultApp(t)
		recoverInboxFault(t, a, cluster.TCP(t, a.db.URL), func(t *testing.T, _ *faultProc) func() {
			cluster.Stop(t)
			return func() { cluster.Start(t) }
		})
	})
}

// recoverInboxFault is the scenario; fault strikes as the third page is
// asked for (the second request with a cursor), and the function it returns brings the database back.
func recoverInboxFault(t *testing.T, a *faultApp, url string, fault func(t *testing.T, p *faultProc) (back func())) {
	p := a.processOn(t, "recover", url, idempotency.InboxConfig{PollInterval: 100 * time.Millisecond})
	h, err := p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger, Timeout: 5 * time.Second})
	require.NoError(t, err)

	events := faultEvents("irecover", 60, 5)
	f := newFakeStripe()
	for k := range events {
		events[k].Created = int64(k) // one a second, in order; twins after their invoice.paid
		f.add(a.payload(events[k]))
	}
	ids := make([]string, len(events))
	for k, ev := range events {
		ids[k] = ev.ID
	}
	var (
		mu     sync.Mutex
		pages  int    // requests with a cursor: the pages after the oldest
		cursor = -1   // the event the third page is asked after
		back   func() // set when the fault struck
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if before := r.URL.Query().Get("ending_before"); before != "" {
			mu.Lock()
			if pages++; pages == 2 {
				cursor, back = slices.Index(ids, before), fault(t, p)
			}
			mu.Unlock()
		}
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))
	opts := idempotency.RecoverOptions{
		Since: time.Unix(faultCreated, 0), Now: func() time.Time { return time.Unix(faultCreated+3600, 0) },
		Checkpoint: "ifault", PageSize: 10, RequestsPerSecond: 100,
	}

	first, err := h.Recover(t.Context(), client, opts)
	mu.Lock()
	require.NotNil(t, back, "the third page was asked for")
	mu.Unlock()
	back()
	if err != nil {
		require.ErrorIs(t, err, idempotency.ErrStoreUnavailable)
	}
	t.Logf("the interrupted run: %+v: %v", first, err)

	// The checkpoint, stored and reported, is never ahead of what was
	// stored: every event up to it is in the inbox.
	stored := func(id string) bool {
		_, ok, err := a.observer.Lookup(t.Context(), id)
		require.NoError(t, err)
		return ok
	}
	var saved string
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT last_event_id FROM idempotency_recovery WHERE name = 'ifault'`).Scan(&saved),
		"the first pages' checkpoint")
	for what, last := range map[string]string{"stored": saved, "reported": first.LastEventID} {
		at := slices.Index(ids, last)
		require.GreaterOrEqual(t, at, cursor, "the %s checkpoint %q: the first two pages were handled", what, last)
		for _, id := range ids[:at+1] {
			require.True(t, stored(id), "the %s checkpoint %q is ahead of %s, not in the inbox", what, last, id)
		}
	}

	second, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	require.True(t, second.Resumed)
	require.Equal(t, ids[len(ids)-1], second.LastEventID)
	require.Zero(t, second.Failed, "%+v", second)
	require.Equal(t, second.Listed, second.Queued+second.Duplicate, "%+v", second)
	require.Equal(t, len(ids)-1-slices.Index(ids, saved), second.Listed, "the run continues after the stored checkpoint: %+v", second)

	p.run(t)
	a.awaitDrained(t, len(events), time.Minute)
	p.stop()
	a.requireExactlyOnce(t, events)
}
