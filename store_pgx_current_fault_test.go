package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
)

// OnCurrent on a real PostgreSQL, with faults: the service of the inbox's
// fault tests (faultApp) with an OnCurrent handler of subscriptions, whose
// fetch reads a fake Stripe API where the test changes each subscription
// (a version it bumps) and holds fetches with a faultGate. While handlers
// hold their objects' lock rows and fetch, the process's sessions end or
// the database restarts. Afterwards the database is checked: every event
// claimed once and processed, no handler's writes committed twice, no lock
// row left held (the next event of each object is applied, with the state
// fetched for it), and, per object, the states written never go back and
// idempotency_objects.fetch_seq is the number of the last committed fetch.

// currentObject is a subscription as the fake API answers it.
type currentObject struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
}

// currentAPI fakes GET /v1/subscriptions/{id}: the version of each
// subscription, read when the request arrives; hold, when set, then holds
// the request as it holds handlers (its ids are the subscriptions').
type currentAPI struct {
	mu       sync.Mutex
	versions map[string]int
	hold     *faultGate
}

func (api *currentAPI) fetch(ctx context.Context, id, _ string) (currentObject, error) {
	api.mu.Lock()
	v, hold := api.versions[id], api.hold
	api.mu.Unlock()
	if hold != nil {
		if err := hold.hook(ctx, nil, "", id); err != nil {
			return currentObject{}, err
		}
	}
	return currentObject{ID: id, Version: v}, nil
}

// change changes each subscription at the API: its version goes up by one.
func (api *currentAPI) change(ids []string) {
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, id := range ids {
		api.versions[id]++
	}
}

func (api *currentAPI) version(id string) int {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.versions[id]
}

// currentTables are where the handler writes: each run with the version
// it was given and the fetch number its transaction recorded, and the
// subscriptions' state, overwritten as the README's example does.
var currentTables = []string{
	`CREATE TABLE current_applied (seq bigserial PRIMARY KEY, event_id text NOT NULL, object_id text NOT NULL,
    version int NOT NULL, fetch_seq bigint NOT NULL)`,
	`CREATE TABLE subscriptions (id text PRIMARY KEY, version int NOT NULL)`,
}

const currentType = "customer.subscription.updated"

// newCurrentApp is a faultApp with the handler's tables and the fake API,
// each of subs at version 1.
func newCurrentApp(t *testing.T, subs []string) (*faultApp, *currentAPI) {
	t.Helper()
	a := newFaultApp(t)
	for _, q := range currentTables {
		_, err := a.db.Pool.Exec(t.Context(), q)
		require.NoError(t, err, q)
	}
	api := &currentAPI{versions: map[string]int{}}
	api.change(subs)
	return a, api
}

// registerCurrent registers the OnCurrent handler of subscriptions.
func registerCurrent(hs *idempotency.Handlers, api *currentAPI) {
	idempotency.OnCurrent(hs, []string{currentType}, api.fetch,
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[currentObject]) error {
			q := idempotency.PgxTx(tx)
			var fetchSeq int64
			if err := q.QueryRow(ctx, `SELECT fetch_seq FROM idempotency_objects WHERE object_id = $1`, ev.ObjectID).Scan(&fetchSeq); err != nil {
				return err
			}
			if _, err := q.Exec(ctx, `INSERT INTO current_applied (event_id, object_id, version, fetch_seq) VALUES ($1, $2, $3, $4)`,
				ev.ID, ev.ObjectID, ev.Object.Version, fetchSeq); err != nil {
				return err
			}
			_, err := q.Exec(ctx, `INSERT INTO subscriptions (id, version) VALUES ($1, $2)
ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`, ev.ObjectID, ev.Object.Version)
			return err
		})
}

// currentPayload is an update of subscription sub, created seconds after
// faultCreated.
func currentPayload(id, sub string, created int64) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":%q,"created":%d,"data":{"object":{"id":%q,"object":"subscription"}}}`,
		id, currentType, faultCreated+created, sub)
}

// currentSent is an event the test sent, and the version its
// subscription was at when it was sent: the change it reports.
type currentSent struct {
	id, sub string
	version int
}

// requireCurrentConsistent checks the database after a scenario: see the
// top of the file. When seqs is set (inbox mode: each event's number on
// the store's counter), each event is covered by a committed fetch that
// took its number after the event's, and saw the event's change.
func requireCurrentConsistent(t *testing.T, a *faultApp, api *currentAPI, sent []currentSent, seqs map[string]int64) {
	t.Helper()
	ctx := t.Context()
	ids := make([]string, len(sent))
	for i, s := range sent {
		ids[i] = s.id
	}
	var ledger, processed int
	require.NoError(t, a.db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE event_id = ANY ($1) AND outcome = 'processed')
FROM idempotency_events`, ids).Scan(&ledger, &processed))
	require.Equal(t, len(sent), ledger, "ledger rows")
	require.Equal(t, len(sent), processed, "events sent that the ledger has as processed")

	type run struct {
		event    string
		version  int
		fetchSeq int64
	}
	rows, err := a.db.Pool.Query(ctx, `SELECT object_id, event_id, version, fetch_seq FROM current_applied ORDER BY seq`)
	require.NoError(t, err)
	runs := map[string][]run{}
	ran := map[string]bool{}
	var obj string
	var r run
	_, err = pgx.ForEachRow(rows, []any{&obj, &r.event, &r.version, &r.fetchSeq}, func() error {
		require.False(t, ran[r.event], "the writes of %s committed twice", r.event)
		ran[r.event] = true
		runs[obj] = append(runs[obj], r)
		return nil
	})
	require.NoError(t, err)
	for _, s := range sent {
		objRuns := runs[s.sub]
		require.NotEmpty(t, objRuns, "%s: never written", s.sub)
		if seqs != nil {
			seq, ok := seqs[s.id]
			require.True(t, ok, "%s has no number", s.id)
			covered := false
			for _, r := range objRuns {
				covered = covered || r.fetchSeq > seq && r.version >= s.version
			}
			require.True(t, covered, "%s (number %d, version %d) is covered by no later fetch of its change: %+v", s.id, seq, s.version, objRuns)
		}
	}
	for sub, objRuns := range runs {
		for i := 1; i < len(objRuns); i++ {
			require.GreaterOrEqual(t, objRuns[i].version, objRuns[i-1].version, "%s: an older state written over a newer one: %+v", sub, objRuns)
			require.Greater(t, objRuns[i].fetchSeq, objRuns[i-1].fetchSeq, "%s: fetch numbers out of order: %+v", sub, objRuns)
		}
		last := objRuns[len(objRuns)-1]
		var version int
		var fetchSeq int64
		require.NoError(t, a.db.Pool.QueryRow(ctx, `SELECT s.version, o.fetch_seq FROM subscriptions AS s
JOIN idempotency_objects AS o ON o.object_id = s.id WHERE s.id = $1`, sub).Scan(&version, &fetchSeq))
		require.Equal(t, api.version(sub), version, "%s: the state is the API's", sub)
		require.Equal(t, last.version, version, sub)
		require.Equal(t, last.fetchSeq, fetchSeq, "%s: the lock row's number is the last committed fetch's", sub)
	}
}

// currentSubs are the subscriptions s_0 ... s_n-1 of prefix.
func currentSubs(prefix string, n int) []string {
	subs := make([]string, n)
	for i := range subs {
		subs[i] = fmt.Sprintf("sub_%s_%d", prefix, i)
	}
	return subs
}

// currentFault strikes while handlers hold their lock rows and fetch; the
// function it returns, called once the held handlers are released, brings
// the database back.
type currentFault func(t *testing.T, a *faultApp, p *faultProc) (back func())

func terminateCurrent(t *testing.T, a *faultApp, p *faultProc) func() {
	require.Positive(t, a.terminateSessions(t, p))
	return func() {}
}

func stopCurrent(cluster *pgtest.Cluster) currentFault {
	return func(t *testing.T, _ *faultApp, _ *faultProc) func() {
		cluster.Stop(t)
		return func() { cluster.Start(t) }
	}
}

// TestPgxCurrentFaultSync: synchronous deliveries of three subscriptions
// hold their lock rows while their fetches are held, and a second event of
// each waits for the lock; the process's sessions end
// (pg_terminate_backend, TestPgxCurrentFaultSyncSessionsTerminated), or
// the database stops and starts again (not parallel). Every delivery
// answered 2xx is claimed, every other is not and is sent again until
// 2xx; then each subscription changes again and its next event is
// applied with the new state.
func TestPgxCurrentFaultSync(t *testing.T) {
	t.Run("database-restart", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		a, api := newCurrentApp(t, currentSubs("restart", 3))
		currentSyncFault(t, a, api, "restart", cluster.TCP(t, a.db.URL), stopCurrent(cluster))
	})
}

// TestPgxCurrentFaultSyncSessionsTerminated is TestPgxCurrentFaultSync
// with the process's sessions ended. Apart from it, which is not
// parallel, so that it runs beside the other parallel tests: go test runs
// the tests that are not parallel, and their subtests, first, one after
// another.
func TestPgxCurrentFaultSyncSessionsTerminated(t *testing.T) {
	t.Parallel()
	a, api := newCurrentApp(t, currentSubs("term", 3))
	currentSyncFault(t, a, api, "term", a.db.URL, terminateCurrent)
}

func currentSyncFault(t *testing.T, a *faultApp, api *currentAPI, prefix, url string, fault currentFault) {
	subs := currentSubs(prefix, 3)
	p := a.processOn(t, "sync", url, idempotency.InboxConfig{})
	store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	hs := idempotency.NewHandlers()
	registerCurrent(hs, api)
	// The held deliveries wait for the fault within Timeout: a loaded
	// machine's second deliveries took more than 5 s to reach the lock
	// rows, the held ones had run out by then, and the lock rows were
	// free. The fault ends them, not Timeout.
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger, Timeout: 30 * time.Second})
	require.NoError(t, err)
	g := newFaultGate(len(subs))
	api.hold = g
	t.Cleanup(g.open)

	type answer struct {
		ev currentSent
		a  idempotencytest.Answer
	}
	answers := make(chan answer, 2*len(subs))
	deliver := func(ev currentSent) {
		answers <- answer{ev, idempotencytest.Deliver(h, currentPayload(ev.id, ev.sub, 0), testSecret)}
	}
	var sent []currentSent
	for i, sub := range subs {
		ev := currentSent{fmt.Sprintf("evt_%s_held_%d", prefix, i), sub, 1}
		sent = append(sent, ev)
		go deliver(ev)
	}
	g.await(t, len(subs)) // each subscription's lock row held, its fetch held
	for i, sub := range subs {
		ev := currentSent{fmt.Sprintf("evt_%s_waiting_%d", prefix, i), sub, 1}
		sent = append(sent, ev)
		go deliver(ev)
	}
	faultAwait(t, time.Minute, "the second events waiting for the lock rows", func() bool {
		var n int
		err := a.admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
			p.appName).Scan(&n)
		return err == nil && n == len(subs)
	})
	api.change(subs) // the held fetches read the state before this change

	back := fault(t, a, p)
	g.open()
	got := make([]answer, len(sent))
	for i := range got {
		got[i] = recv(t, answers, "an answer after the fault")
	}
	back()
	var again []currentSent
	for _, ans := range got {
		_, claimed, err := store.LookupEvent(t.Context(), ans.ev.id)
		require.NoError(t, err)
		if ans.a.Status == http.StatusOK {
			require.True(t, claimed, "%s answered 2xx and not claimed", ans.ev.id)
			continue
		}
		require.GreaterOrEqual(t, ans.a.Status, 500, "%s: %+v", ans.ev.id, ans.a)
		require.False(t, claimed, "%s answered %d and claimed", ans.ev.id, ans.a.Status)
		again = append(again, ans.ev)
	}
	t.Logf("%d of %d deliveries refused by the fault", len(again), len(sent))
	for _, ev := range again { // Stripe sends them again
		faultAwait(t, 30*time.Second, ev.id+" answered 2xx", func() bool {
			return idempotencytest.Deliver(h, currentPayload(ev.id, ev.sub, 0), testSecret).Status == http.StatusOK
		})
	}

	// Each subscription changes again: its next event finds its lock row
	// free and writes the new state.
	api.change(subs)
	for i, sub := range subs {
		ev := currentSent{fmt.Sprintf("evt_%s_next_%d", prefix, i), sub, api.version(sub)}
		sent = append(sent, ev)
		ans := idempotencytest.Deliver(h, currentPayload(ev.id, ev.sub, 1), testSecret)
		require.Equal(t, idempotency.OutcomeProcessed, ans.Outcome, "%s: %s", ev.id, ans.Body)
	}
	requireCurrentConsistent(t, a, api, sent, nil)
}

// TestPgxCurrentFaultInbox: in inbox mode, with three events of each of
// four subscriptions stored, the workers' first attempts hold the
// subscriptions' lock rows while their fetches are held; the process's
// sessions end, or the database stops and starts again (not parallel).
// The inbox drains on its own, each held event applied by a later
// attempt; each event is covered by a committed fetch numbered after it
// that saw its change, and the next event of each subscription is applied
// with the new state.
func TestPgxCurrentFaultInbox(t *testing.T) {
	t.Run("database-restart", func(t *testing.T) {
		cluster := pgtest.Server(t) // not parallel: it stops the shared server
		a, api := newCurrentApp(t, currentSubs("irestart", 4))
		currentInboxFault(t, a, api, "irestart", cluster.TCP(t, a.db.URL), stopCurrent(cluster))
	})
}

// TestPgxCurrentFaultInboxSessionsTerminated is TestPgxCurrentFaultInbox
// with the process's sessions ended; parallel, apart from it (see
// TestPgxCurrentFaultSyncSessionsTerminated).
func TestPgxCurrentFaultInboxSessionsTerminated(t *testing.T) {
	t.Parallel()
	a, api := newCurrentApp(t, currentSubs("iterm", 4))
	currentInboxFault(t, a, api, "iterm", a.db.URL, terminateCurrent)
}

func currentInboxFault(t *testing.T, a *faultApp, api *currentAPI, prefix, url string, fault currentFault) {
	subs := currentSubs(prefix, 4)
	// The service's handlers, as each process registers them, include
	// the OnCurrent handler (no task: no enqueue).
	a.tasks = func(hs *idempotency.Handlers, _ string) func(context.Context, idempotency.Tx, idempotency.Event[faultInvoice]) error {
		registerCurrent(hs, api)
		return nil
	}
	clock := new(leapClock)
	p := a.processOn(t, "inbox", url, idempotency.InboxConfig{
		Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
		Now: clock.Now,
	})
	var sent []currentSent
	send := func(ev currentSent, created int64) {
		t.Helper()
		sent = append(sent, ev)
		ans := idempotencytest.Deliver(p.handler, currentPayload(ev.id, ev.sub, created), testSecret)
		require.Equal(t, idempotency.OutcomeQueued, ans.Outcome, "%s: %s", ev.id, ans.Body)
	}
	var held []string // the events whose attempts the gate holds: each subscription's oldest
	for k := range 3 {
		for i, sub := range subs {
			ev := currentSent{fmt.Sprintf("evt_%s_%d_%d", prefix, i, k), sub, 1}
			send(ev, int64(k))
			if k == 0 {
				held = append(held, ev.id)
			}
		}
	}
	g := newFaultGate(len(subs))
	api.hold = g
	t.Cleanup(g.open)
	p.run(t)
	g.await(t, len(subs)) // each subscription's lock row held, its fetch held
	api.change(subs)      // the held fetches read the state before this change

	back := fault(t, a, p)
	g.open()
	for _, id := range held {
		faultAwait(t, 30*time.Second, "the held attempt of "+id+" reported", func() bool { return len(a.attemptResults(id)) > 0 })
		require.Error(t, a.attemptResults(id)[0].Err, "%s committed through the fault", id)
	}
	back()
	clock.leapPastLease() // the held attempts' leases, and their lock rows'
	a.awaitDrained(t, len(sent), 2*time.Minute)

	// Each subscription changes again: its next event finds its lock row
	// free and writes the new state.
	api.change(subs)
	for i, sub := range subs {
		send(currentSent{fmt.Sprintf("evt_%s_%d_next", prefix, i), sub, api.version(sub)}, 3)
	}
	a.awaitDrained(t, len(sent), time.Minute)
	p.stop()

	rows, err := a.db.Pool.Query(t.Context(), `SELECT event_id, seq FROM idempotency_inbox`)
	require.NoError(t, err)
	seqs := map[string]int64{}
	var id string
	var seq int64
	_, err = pgx.ForEachRow(rows, []any{&id, &seq}, func() error {
		seqs[id] = seq
		return nil
	})
	require.NoError(t, err)
	requireCurrentConsistent(t, a, api, sent, seqs)
	a.requireRetried(t, held, "the fault struck")
}
