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
)

// Handler.Recover of an inbox Handler on a real PostgreSQL, with faults,
// as TestPgxRecoverFault is for a synchronous one: 60 events recovered 10 a
// page into the inbox of faultApp's service. When the run asks for its
// third page (the first two stored and the checkpoint saved), the
// process's sessions end (pg_terminate_backend) or the database stops.
// The checkpoint, as stored and as reported, stands at an event up to
// which every event is in the inbox; the checkpoint's next run stores the
// rest, and the workers apply every event exactly once.

// TestPgxRecoverInboxFault: see above, the database restarted (not
// parallel: it stops the shared server).
func TestPgxRecoverInboxFault(t *testing.T) { recoverRestartFault(t, recoverInboxFault) }

// TestPgxRecoverInboxFaultSessionsTerminated: see above, the process's
// sessions terminated; parallel, apart from TestPgxRecoverInboxFault
// (see TestPgxRecoverFaultSessionsTerminated).
func TestPgxRecoverInboxFaultSessionsTerminated(t *testing.T) {
	t.Parallel()
	recoverSessionsFault(t, recoverInboxFault)
}

// recoverInboxFault is the scenario (a recoverFaultScenario); fault
// strikes as the third page is asked for (the second request with a
// cursor).
func recoverInboxFault(t *testing.T, a *faultApp, url string, fault func(t *testing.T, p *faultProc) (back func())) {
	p := a.processOn(t, "recover", url, idempotency.InboxConfig{PollInterval: 100 * time.Millisecond})
	// Each event's insert must end within Timeout, or the run fails with
	// ErrTimeout, not the fault's ErrStoreUnavailable: 30 s, for the
	// inserts around the database's restart on a loaded machine.
	h, err := p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger, Timeout: 30 * time.Second})
	require.NoError(t, err)

	events, ids, f, opts := recoverFaultEvents(a, "irecover", "ifault")
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
	saved := requireCheckpointBehind(t, a, opts.Checkpoint, first.LastEventID, ids, cursor, stored)

	second, err := h.Recover(t.Context(), client, opts)
	require.NoError(t, err)
	requireResumed(t, second, ids, saved)

	p.run(t)
	a.awaitDrained(t, len(events), time.Minute)
	p.stop()
	a.requireExactlyOnce(t, events)
}
