package idempotency_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
)

// The environment of the process of TestPgxRecoverKilled: where the fake
// Events API is, and whether its Handler is an inbox's.
const (
	envHelperStripeURL    = "IDEMPOTENCY_TEST_HELPER_STRIPE_URL"
	envHelperRecoverInbox = "IDEMPOTENCY_TEST_HELPER_RECOVER_INBOX"
)

// recoverKilledAt is the index of the event the killed run is held at.
const recoverKilledAt = 25

// TestPgxRecoverKilled is TestPgxRecoverFault and TestPgxRecoverInboxFault
// with a SIGKILL: a process running Handler.Recover of the 60 events of
// recoverFaultEvents, 10 a page, is killed while it is held at the 26th.
// The checkpoint stands at the last event of the last page saved, before
// the 26th, and every event up to it is applied (stored). A second Recover
// of the checkpoint, in the test's process, lists the events after it:
// those the killed run handled after its checkpoint are duplicates, the
// others are processed (queued), and every event is applied exactly once.
//
// sync: the handler of the 26th hangs inside its transaction, after its
// writes; PostgreSQL rolls it back, so the killed run applied the first 25.
// inbox: the insert of the 26th into the inbox is held at the end of its
// statement (a trigger gate); it had reached the server whole, so it
// commits once the gate opens, although its process is dead: the killed
// run stored the first 26, and the second run finds the 26th a duplicate.
func TestPgxRecoverKilled(t *testing.T) {
	t.Parallel()
	t.Run("sync", func(t *testing.T) {
		t.Parallel()
		a, events, ids, opts, stripeURL := recoverKilledScene(t, false)
		w := startHelperProcess(t, "TestHelperRecover", helperWorkerEntered, a.db.URL, a.db.Schema, envHelperStripeURL+"="+stripeURL)
		w.await(t, "the handler of the 26th event")
		killInTransaction(t, a.admin, a.db.Schema, w)

		p := a.process(t, "parent", idempotency.InboxConfig{})
		store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
		require.NoError(t, err)
		applied := func(id string) bool {
			_, ok, err := store.LookupEvent(t.Context(), id)
			require.NoError(t, err)
			return ok
		}
		at := requireKilledCheckpoint(t, a, opts.Checkpoint, ids, recoverKilledAt, applied)

		h, err := idempotency.NewHandler(store, a.handlers("parent"), idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger})
		require.NoError(t, err)
		second, err := h.Recover(t.Context(), stripe.NewClient(fakeStripeKey, fakeBackends(stripeURL, nil)), opts)
		require.NoError(t, err)
		requireResumed(t, second, ids, ids[at])
		require.Equal(t, recoverKilledAt, second.Duplicate, "applied by the killed run, all within the overlap listed again: %+v", second)
		require.Equal(t, len(ids)-recoverKilledAt, second.Processed, "%+v", second)
		requireAppliedOnceSync(t, a, events)
		rows, err := a.db.Pool.Query(t.Context(), `SELECT event_id FROM applied WHERE proc = 'child' ORDER BY seq`)
		require.NoError(t, err)
		byChild, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, ids[:recoverKilledAt], byChild, "the killed run's writes: up to the held event's, which rolled back")
	})
	t.Run("inbox", func(t *testing.T) {
		t.Parallel()
		a, events, ids, opts, stripeURL := recoverKilledScene(t, true)
		g := newTriggerGate(t, a.db, "INSERT", "idempotency_inbox",
			"NOT DEFERRABLE FOR EACH ROW WHEN (NEW.event_id = '"+ids[recoverKilledAt]+"')")

		w := startHelperProcess(t, "TestHelperRecover", helperWorkerEntered, a.db.URL, a.db.Schema,
			envHelperStripeURL+"="+stripeURL, envHelperRecoverInbox+"=1")
		g.awaitHeld(t, a, a.db.Schema)
		w.kill(t)
		g.open(t)
		awaitNoTransaction(t, a.admin, a.db.Schema)

		p := a.process(t, "parent", idempotency.InboxConfig{PollInterval: 100 * time.Millisecond})
		stored := func(id string) bool {
			_, ok, err := a.observer.Lookup(t.Context(), id)
			require.NoError(t, err)
			return ok
		}
		at := requireKilledCheckpoint(t, a, opts.Checkpoint, ids, recoverKilledAt+1, stored)

		h, err := p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger})
		require.NoError(t, err)
		second, err := h.Recover(t.Context(), stripe.NewClient(fakeStripeKey, fakeBackends(stripeURL, nil)), opts)
		require.NoError(t, err)
		requireResumed(t, second, ids, ids[at])
		require.Equal(t, recoverKilledAt+1, second.Duplicate, "stored by the killed run, all within the overlap listed again: %+v", second)
		require.Equal(t, len(ids)-recoverKilledAt-1, second.Queued, "%+v", second)
		p.run(t)
		a.awaitDrained(t, len(events), 30*time.Second)
		p.stop()
		a.requireExactlyOnce(t, events)
	})
}

// recoverKilledScene is a subtest's service, events and options, with the
// URL of the fake Events API that lists the events.
func recoverKilledScene(t *testing.T, inbox bool) (a *faultApp, events []faultEvent, ids []string, opts idempotency.RecoverOptions, stripeURL string) {
	t.Helper()
	a = newFaultApp(t)
	events, ids, f, opts := recoverKilledEvents(a, inbox)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return a, events, ids, opts, srv.URL
}

// recoverKilledEvents are the recoverFaultEvents of the inbox's subtest of
// TestPgxRecoverKilled, or of the synchronous one's.
func recoverKilledEvents(a *faultApp, inbox bool) ([]faultEvent, []string, *fakeStripe, idempotency.RecoverOptions) {
	if inbox {
		return recoverFaultEvents(a, "ikrecover", "ikilled")
	}
	return recoverFaultEvents(a, "krecover", "killed")
}

// requireKilledCheckpoint requires the checkpoint of a killed run, as
// stored, before the event it was held at, and handled to hold for the
// first n events and no other; it returns the checkpoint's index in ids.
func requireKilledCheckpoint(t *testing.T, a *faultApp, checkpoint string, ids []string, n int, handled func(id string) bool) int {
	t.Helper()
	var stored string
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT last_event_id FROM idempotency_recovery WHERE name = $1`, checkpoint).Scan(&stored))
	at := slices.Index(ids, stored)
	require.Less(t, at, recoverKilledAt, "the stored checkpoint %q is at or after the held event", stored)
	requireCheckpointBehind(t, a, checkpoint, stored, ids, 9, handled)
	for i, id := range ids {
		require.Equal(t, i < n, handled(id), "event %d (%s) handled by the killed run", i, id)
	}
	return at
}

// TestHelperRecover is not a test: it is the process that
// TestPgxRecoverKilled starts and kills. It runs Handler.Recover of
// recoverFaultEvents, synchronous or an inbox's; the synchronous handler
// of the 26th event writes, says so, and hangs inside the transaction
// until the process is killed.
func TestHelperRecover(t *testing.T) {
	_, store := helperWorkerStore(t, "TestPgxRecoverKilled")
	a := &faultApp{runs: map[string]int{}, tmpl: faultTemplates(t)}
	inbox := os.Getenv(envHelperRecoverInbox) != ""
	events, _, _, opts := recoverKilledEvents(a, inbox)
	a.hook = func(_ context.Context, _ idempotency.Tx, _, eventID string) error {
		if eventID == events[recoverKilledAt].ID {
			fmt.Println(helperWorkerEntered)
			select {} // until SIGKILL
		}
		return nil
	}
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: time.Minute}
	h, err := idempotency.NewHandler(store, a.handlers("child"), cfg)
	if inbox {
		var in *idempotency.Inbox
		in, err = idempotency.NewInbox(store, a.handlers("child"), idempotency.InboxConfig{Logger: discardLogger()})
		require.NoError(t, err)
		h, err = in.Handler(cfg)
	}
	require.NoError(t, err)
	rep, err := h.Recover(context.Background(), stripe.NewClient(fakeStripeKey, fakeBackends(os.Getenv(envHelperStripeURL), nil)), opts)
	t.Fatalf("the run returned: %+v, %v", rep, err)
}
