package idempotency_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/pgtest"
	"github.com/seed-a84bb619/idempotency/internal/race"
)

// The inbox's promises on a real PostgreSQL, with faults: events come in
// through the inbox's HTTP handler, Run's workers apply them in
// transactions that write business rows, and afterwards the database
// itself is checked: every distinct event claimed and applied once, one
// credit per invoice, every inbox row finished.

// faultApp is a service in inbox mode on one schema. invoice.paid and
// invoice.payment_succeeded record the event in applied (seq: the order
// the handlers wrote in; proc: the process) and credit the invoice's
// account 100, once per invoice (a guard), all in the event's transaction;
// with tasks set they enqueue tasks too. Processes (faultProc) are replicas of it, each with a pool of its own.
type faultApp struct {
	db       *pgtest.DB
	observer *idempotency.Inbox // on db.Pool, which no fault touches: stats and lists
	admin    *pgxpool.Pool      // the server's, outside the schema: pg_stat_activity, pg_terminate_backend
	logs     *syncBuffer        // warnings and errors of every process, shown when a test fails
	logger   *slog.Logger
	tmpl     map[string]faultTemplate // event type → payload template

	mu      sync.Mutex
	runs    map[string]int                  // handler calls per event id, every attempt
	results map[string][]idempotency.Result // the attempts' results per event id, every process
	hook    func(ctx context.Context, tx idempotency.Tx, proc, eventID string) error

	// tasks, when set, registers the service's tasks in the handlers of
	// process proc and returns what the handlers then call in the event's
	// transaction, after the guard and before the hook: the enqueues.
	tasks func(hs *idempotency.Handlers, proc string) func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[faultInvoice]) error
}

// faultEvent is one event a scenario sends.
type faultEvent struct {
	ID, Type, Invoice, Account string
	Created                    int64 // seconds after faultCreated
}

const faultCreated = 1756742400 // 2025-09-01T16:00:00Z

// faultInvoice is what the handlers read of an invoice.
type faultInvoice struct {
	ID       string            `json:"id"`
	Metadata map[string]string `json:"metadata"`
}

func newFaultApp(t *testing.T) *faultApp {
	t.Helper()
	a := &faultApp{db: newPgDB(t), admin: pgtest.AdminPool(t), runs: map[string]int{}, results: map[string][]idempotency.Result{},
		logs: &syncBuffer{}}
	a.logger = slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("inbox logs (warnings and errors):\n%s", a.logs.String())
		}
	})
	ctx := t.Context()
	store, err := idempotency.NewPgxStore(a.db.Pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	for _, q := range []string{
		`CREATE TABLE accounts (id text PRIMARY KEY, credits bigint NOT NULL)`,
		`CREATE TABLE applied (seq bigserial PRIMARY KEY, event_id text NOT NULL, object_id text NOT NULL, proc text NOT NULL)`,
	} {
		_, err := a.db.Pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	a.observer, err = idempotency.NewInbox(store, idempotency.NewHandlers(), idempotency.InboxConfig{Logger: discardLogger()})
	require.NoError(t, err)
	a.tmpl = faultTemplates(t)
	return a
}

// faultTemplates are the templates of the event types the handlers handle.
func faultTemplates(t *testing.T) map[string]faultTemplate {
	t.Helper()
	tmpl := map[string]faultTemplate{}
	for _, typ := range []string{"invoice.paid", "invoice.payment_succeeded"} {
		tmpl[typ] = newFaultTemplate(t, typ)
	}
	return tmpl
}

// handlers are the service's handlers as process proc registers them.
func (a *faultApp) handlers(proc string) *idempotency.Handlers {
	hs := idempotency.NewHandlers()
	var enqueue func(context.Context, idempotency.Tx, idempotency.Event[faultInvoice]) error
	if a.tasks != nil {
		enqueue = a.tasks(hs, proc)
	}
	apply := func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[faultInvoice]) error {
		a.mu.Lock()
		a.runs[ev.ID]++
		hook := a.hook
		a.mu.Unlock()
		q := idempotency.PgxTx(tx)
		if _, err := q.Exec(ctx, `INSERT INTO applied (event_id, object_id, proc) VALUES ($1, $2, $3)`, ev.ID, ev.Object.ID, proc); err != nil {
			return err
		}
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil {
			return err
		}
		if enqueue != nil {
			if err := enqueue(ctx, tx, ev); err != nil {
				return err
			}
		}
		// The hook runs before the credit: a transaction it holds open
		// then locks rows of its own event only, not its account's, which
		// other events credit too.
		if hook != nil {
			if err := hook(ctx, tx, proc, ev.ID); err != nil {
				return err
			}
		}
		if first {
			_, err = q.Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ($1, 100)
ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + 100`, ev.Object.Metadata["account_id"])
		}
		return err
	}
	idempotency.On(hs, "invoice.paid", apply)
	idempotency.On(hs, "invoice.payment_succeeded", apply)
	return hs
}

func (a *faultApp) handlerRuns(eventID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runs[eventID]
}

// faultProc is one process of the service: a pool of its own, whose
// sessions carry the application name appName, a store, an inbox and its
// HTTP handler.
type faultProc struct {
	name, appName string
	pool          *pgxpool.Pool
	inbox         *idempotency.Inbox
	handler       http.Handler
	attempts      atomic.Int64 // inbox attempts reported

	stop func() // stops Run and waits for it; set by run
}

// process starts a process on the schema's unix socket.
func (a *faultApp) process(t *testing.T, name string, cfg idempotency.InboxConfig) *faultProc {
	t.Helper()
	return a.processOn(t, name, a.db.URL, cfg)
}

// processOn starts a process connecting with url (db.URL, or its TCP form).
func (a *faultApp) processOn(t *testing.T, name, url string, cfg idempotency.InboxConfig) *faultProc {
	t.Helper()
	p := &faultProc{name: name, appName: a.db.Schema + "_" + name}
	poolCfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	poolCfg.ConnConfig.RuntimeParams["application_name"] = p.appName
	poolCfg.MaxConns = 24
	p.pool, err = pgxpool.NewWithConfig(t.Context(), poolCfg)
	require.NoError(t, err)
	t.Cleanup(p.pool.Close)
	store, err := idempotency.NewPgxStore(p.pool, idempotency.PgxConfig{Schema: a.db.Schema})
	require.NoError(t, err)
	cfg.Logger = a.logger
	observeResults(&cfg, func(r idempotency.Result) {
		p.attempts.Add(1)
		a.mu.Lock()
		defer a.mu.Unlock()
		a.results[r.EventID] = append(a.results[r.EventID], r)
	})
	p.inbox, err = idempotency.NewInbox(store, a.handlers(name), cfg)
	require.NoError(t, err)
	// The deliveries' inserts run under faultIngestTimeout.
	p.handler, err = p.inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: a.logger, Timeout: faultIngestTimeout})
	require.NoError(t, err)
	return p
}

// faultIngestTimeout is the Config.Timeout of a process's HTTP handler:
// a delivery's insert waits for the batch it shares with the deliveries
// in flight, which a loaded machine, many senders at once, took more
// than the default 10 s to store; refused with 503, it failed the burst,
// and held the scenarios' handlers back from the gate.
const faultIngestTimeout = 30 * time.Second

// run starts the process's workers until the test ends or p.stop.
func (p *faultProc) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.inbox.Run(ctx) }()
	p.stop = sync.OnceFunc(func() {
		cancel()
		assert.NoError(t, <-done, "Run of %s", p.name)
	})
	t.Cleanup(p.stop) // before the pool closes: cleanups run last in, first out
}

// faultTemplate is an event type's fixture encoded once with placeholders
// and cut around them, so that a payload costs one copy, not a JSON
// round trip: the burst sends thousands.
type faultTemplate [][]byte // text, placeholder, text, placeholder, ..., text

// faultMarks are the placeholders in the order payload takes their values.
var faultMarks = []string{`"evt_TEMPLATE"`, `"in_TEMPLATE"`, `"acct_TEMPLATE"`, `4102444800`}

func newFaultTemplate(t *testing.T, typ string) faultTemplate {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(fixture(t, typ), &ev))
	ev["id"] = "evt_TEMPLATE"
	ev["created"] = 4102444800
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	obj["id"] = "in_TEMPLATE"
	obj["metadata"] = map[string]any{"account_id": "acct_TEMPLATE"}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	type at struct{ pos, mark int }
	var found []at
	for i, m := range faultMarks {
		require.Equal(t, 1, bytes.Count(b, []byte(m)), "placeholder %s in the %s template", m, typ)
		found = append(found, at{bytes.Index(b, []byte(m)), i})
	}
	slices.SortFunc(found, func(x, y at) int { return x.pos - y.pos })
	var tp faultTemplate
	prev := 0
	for _, f := range found {
		tp = append(tp, b[prev:f.pos], []byte{byte(f.mark)})
		prev = f.pos + len(faultMarks[f.mark])
	}
	return append(tp, b[prev:])
}

// payload is the signed body of ev.
func (a *faultApp) payload(ev faultEvent) []byte {
	vals := []string{strconv.Quote(ev.ID), strconv.Quote(ev.Invoice), strconv.Quote(ev.Account), strconv.FormatInt(faultCreated+ev.Created, 10)}
	tp := a.tmpl[ev.Type]
	out := make([]byte, 0, 6<<10)
	for i, part := range tp {
		if i%2 == 0 {
			out = append(out, part...)
		} else {
			out = append(out, vals[part[0]]...)
		}
	}
	return out
}

// faultEvents are n events of prefix about n - n/twinEvery invoices of 16
// accounts: every twinEvery-th event (when twinEvery > 0) is a twin, an
// invoice.payment_succeeded one second after the invoice.paid of the
// invoice before it, as Stripe sends both for one payment.
func faultEvents(prefix string, n, twinEvery int) []faultEvent {
	evs := make([]faultEvent, n)
	for k := range evs {
		evs[k] = faultStreamEvent(prefix, 0, k, twinEvery)
	}
	return evs
}

// faultStreamEvent is event k of a sender's stream; see faultEvents.
func faultStreamEvent(prefix string, sender, k, twinEvery int) faultEvent {
	inv, typ, created := k, "invoice.paid", int64(0)
	if twinEvery > 0 && k%twinEvery == twinEvery-1 {
		inv, typ, created = k-1, "invoice.payment_succeeded", 1
	}
	return faultEvent{
		ID:      fmt.Sprintf("evt_%s_%d_%d", prefix, sender, k),
		Type:    typ,
		Invoice: fmt.Sprintf("in_%s_%d_%d", prefix, sender, inv),
		Account: fmt.Sprintf("acct_%s_%d", prefix, (sender*7+inv)%16),
		Created: created,
	}
}

// faultTraffic is Stripe's side of a scenario: senders that each deliver
// their events one after another, every event again after a non-2xx
// answer until it is answered 2xx.
type faultTraffic struct {
	a  *faultApp
	hs []http.Handler // sender i sends to hs[i%len(hs)]

	enough chan struct{} // closed: senders finish the event in hand and stop
	wg     sync.WaitGroup

	accepted atomic.Int64 // events answered 2xx
	mu       sync.Mutex
	sent     []faultEvent // the events answered 2xx
	statuses map[int]int  // every answer
	outcomes map[idempotency.Outcome]int
	refused  []int // per sender: non-2xx answers
}

// faultResendPause is how long a sender waits before it sends an event
// again: Stripe waits too, and a tight loop against a stopped database
// would only burn the CPU the restart needs.
const faultResendPause = 10 * time.Millisecond

// startTraffic starts senders senders; sender s sends next(s, 0), next(s,
// 1), ... until next says there is no more, or until tr.stop.
func (a *faultApp) startTraffic(t *testing.T, hs []http.Handler, senders int, next func(sender, k int) (faultEvent, bool)) *faultTraffic {
	tr := &faultTraffic{a: a, hs: hs, enough: make(chan struct{}), statuses: map[int]int{}, outcomes: map[idempotency.Outcome]int{}, refused: make([]int, senders)}
	for s := range senders {
		tr.wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-tr.enough:
					return
				default:
				}
				ev, ok := next(s, k)
				if !ok || !tr.deliver(t, s, ev) {
					return
				}
			}
		})
	}
	t.Cleanup(tr.stop)
	return tr
}

// startAll starts senders senders that send events between them, each
// event until it is accepted.
func (a *faultApp) startAll(t *testing.T, hs []http.Handler, events []faultEvent, senders int) *faultTraffic {
	return a.startTraffic(t, hs, senders, func(s, k int) (faultEvent, bool) {
		i := s + k*senders
		if i >= len(events) {
			return faultEvent{}, false
		}
		return events[i], true
	})
}

// deliver sends ev until it is answered 2xx; any answer but 200 and 503 is
// a failure. It reports whether ev was accepted.
func (tr *faultTraffic) deliver(t *testing.T, sender int, ev faultEvent) bool {
	payload := tr.a.payload(ev)
	h := tr.hs[sender%len(tr.hs)]
	deadline := time.Now().Add(3 * time.Minute) // refusals of faultIngestTimeout each, on a loaded machine
	for {
		ans := idempotencytest.Deliver(h, payload, testSecret)
		tr.mu.Lock()
		tr.statuses[ans.Status]++
		if ans.Status == http.StatusOK {
			tr.outcomes[ans.Outcome]++
			tr.sent = append(tr.sent, ev)
		} else {
			tr.refused[sender]++
		}
		tr.mu.Unlock()
		if ans.Status == http.StatusOK {
			tr.accepted.Add(1)
			return true
		}
		if !assert.Equal(t, http.StatusServiceUnavailable, ans.Status, "event %s: %s", ev.ID, ans.Body) ||
			!assert.True(t, time.Now().Before(deadline), "event %s still refused after 3 minutes: %s", ev.ID, ans.Body) {
			return false
		}
		time.Sleep(faultResendPause)
	}
}

// stop lets every sender finish the event in hand, and waits for them.
func (tr *faultTraffic) stop() {
	select {
	case <-tr.enough:
	default:
		close(tr.enough)
	}
	tr.wg.Wait()
}

// awaitInbox polls the inbox's counts until done accepts them, and returns
// them; it fails the test after within.
func (a *faultApp) awaitInbox(t *testing.T, within time.Duration, what string, done func(idempotency.InboxStats) bool) idempotency.InboxStats {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := a.observer.Stats(t.Context())
		if err == nil && done(st) {
			return st
		}
		if time.Now().After(deadline) {
			require.FailNowf(t, "inbox not as awaited", "%s: not after %s: counts %v, error %v\n%s", what, within, st.Counts, err, a.diagnosis(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// diagnosis is what a failure message of a wait that ran out adds: the
// inbox's records (no payload), the test's sessions on the server with
// what they wait on, and the library's goroutines in this process.
func (a *faultApp) diagnosis(t *testing.T) string {
	var b strings.Builder
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
	defer cancel()
	recs, err := a.observer.List(ctx, idempotency.InboxFilter{})
	fmt.Fprintf(&b, "the inbox's records (error %v):\n", err)
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s %s attempt %d, attempted %s, next %s, lease until %s, last error %q\n", r.EventID, r.State, r.Attempt,
			r.AttemptedAt.Format(time.RFC3339Nano), r.NextAttemptAt.Format(time.RFC3339Nano), r.LeaseUntil.Format(time.RFC3339Nano), r.LastError)
	}
	rows, err := a.admin.Query(ctx, `SELECT format('%s pid %s: %s, waiting %s %s, blocked by %s, transaction %s old: %s',
  application_name, pid, state, wait_event_type, wait_event, pg_blocking_pids(pid), now() - xact_start, regexp_replace(left(query, 120), '\s+', ' ', 'g'))
FROM pg_stat_activity WHERE application_name LIKE $1 ORDER BY application_name, pid`, a.db.Schema+"%")
	var sessions []string
	if err == nil {
		sessions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	fmt.Fprintf(&b, "the test's sessions (error %v):\n  %s\n", err, strings.Join(sessions, "\n  "))
	fmt.Fprintf(&b, "the library's goroutines:\n%s", libraryStacks())
	return b.String()
}

// awaitDrained waits until want events are processed and none is left to
// apply.
func (a *faultApp) awaitDrained(t *testing.T, want int, within time.Duration) idempotency.InboxStats {
	t.Helper()
	return a.awaitInbox(t, within, fmt.Sprintf("%d events processed, none left", want), func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxProcessed] >= want &&
			st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed] == 0
	})
}

// requireExactlyOnce checks the database after a scenario in which events
// were sent (copies included): each distinct event claimed in the ledger
// and its handler's writes committed exactly once, no other event, one
// credit of 100 per distinct invoice to its account (requireAppliedOnce),
// every event of the inbox processed (its tasks are the caller's to
// check).
func (a *faultApp) requireExactlyOnce(t *testing.T, events []faultEvent) {
	t.Helper()
	ids := a.requireAppliedOnce(t, events)
	st, err := a.observer.Stats(t.Context())
	require.NoError(t, err)
	for state, n := range st.Counts {
		n -= st.TaskCounts[state]
		if state == idempotency.InboxProcessed {
			require.Equal(t, ids, n, "inbox events processed")
		} else {
			require.Zero(t, n, "inbox events %s", state)
		}
	}
	require.True(t, st.OldestPending.IsZero(), "nothing left to apply")
}

// requireAppliedOnce is requireExactlyOnce without the inbox, whose
// finished events a prune may have deleted: the ledger, the handlers'
// writes, the guards and the credits. It returns how many distinct events
// were sent.
func (a *faultApp) requireAppliedOnce(t *testing.T, events []faultEvent) int {
	t.Helper()
	ctx := t.Context()
	ids := map[string]bool{}
	invoices := map[string]string{}
	for _, ev := range events {
		ids[ev.ID] = true
		invoices[ev.Invoice] = ev.Account
	}
	idList := make([]string, 0, len(ids))
	for id := range ids {
		idList = append(idList, id)
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		require.NoError(t, a.db.Pool.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}
	require.Equal(t, len(ids), count(`SELECT count(*) FROM idempotency_events`), "ledger rows")
	require.Equal(t, len(ids), count(`SELECT count(*) FROM idempotency_events WHERE event_id = ANY ($1) AND outcome = 'processed'`, idList),
		"events sent that the ledger has as processed")
	require.Equal(t, len(ids), count(`SELECT count(*) FROM applied`), "handler writes committed")
	require.Equal(t, len(ids), count(`SELECT count(DISTINCT event_id) FROM applied WHERE event_id = ANY ($1)`, idList),
		"events sent whose handler's writes committed")
	require.Equal(t, len(invoices), count(`SELECT count(*) FROM idempotency_guards WHERE scope = 'invoice-credit'`), "invoices credited")

	want := map[string]int{}
	for _, acct := range invoices {
		want[acct] += 100
	}
	rows, err := a.db.Pool.Query(ctx, `SELECT id, credits FROM accounts`)
	require.NoError(t, err)
	got := map[string]int{}
	var acct string
	var credits int
	_, err = pgx.ForEachRow(rows, []any{&acct, &credits}, func() error {
		got[acct] = credits
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, want, got, "credits per account: 100 per distinct invoice")
	return len(ids)
}

// record is the inbox's record of ev.
func (a *faultApp) record(t *testing.T, eventID string) idempotency.InboxRecord {
	t.Helper()
	r, ok, err := a.observer.Lookup(t.Context(), eventID)
	require.NoError(t, err)
	require.True(t, ok, "event %s is not in the inbox", eventID)
	return r
}

// requireRetried requires each held event (inside its transaction when the
// fault struck) to have been applied by a later attempt.
func (a *faultApp) requireRetried(t *testing.T, held []string, fault string) {
	t.Helper()
	for _, id := range held {
		require.GreaterOrEqual(t, a.record(t, id).Attempt, 2, "%s was inside its transaction when %s", id, fault)
	}
}

// TestPgxInboxFaultConcurrentCopies: 50 concurrent copies of one event at
// ingest store it once; it is applied once, and later copies change
// nothing.
func TestPgxInboxFaultConcurrentCopies(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	p := a.process(t, "main", idempotency.InboxConfig{})
	p.run(t)
	ev := faultEvent{ID: "evt_copies", Type: "invoice.paid", Invoice: "in_copies", Account: "acct_copies"}

	answers := idempotencytest.Replay(p.handler, a.payload(ev), testSecret, 50)
	require.Equal(t, map[int]int{http.StatusOK: 50}, answers.Statuses())
	require.Equal(t, 1, answers.Count(idempotency.OutcomeQueued))
	require.Equal(t, 49, answers.Count(idempotency.OutcomeDuplicate))
	a.awaitDrained(t, 1, 30*time.Second)

	answers = idempotencytest.Replay(p.handler, a.payload(ev), testSecret, 50)
	require.Equal(t, 50, answers.Count(idempotency.OutcomeDuplicate), "copies of an applied event")
	p.stop()
	a.requireExactlyOnce(t, []faultEvent{ev})
	require.Equal(t, 1, a.handlerRuns(ev.ID))
	require.Equal(t, 1, a.record(t, ev.ID).Attempt)
}

// TestPgxInboxFaultTwins: invoice.paid and invoice.payment_succeeded for
// one invoice, each sent in copies, all at once, credit it once; both events
// are applied (the earlier created first, so it holds the credit).
func TestPgxInboxFaultTwins(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	p := a.process(t, "main", idempotency.InboxConfig{})
	paid := faultEvent{ID: "evt_twin_paid", Type: "invoice.paid", Invoice: "in_twin", Account: "acct_twin"}
	succeeded := faultEvent{ID: "evt_twin_succeeded", Type: "invoice.payment_succeeded", Invoice: "in_twin", Account: "acct_twin", Created: 1}

	const copies = 10
	answers := idempotencytest.ReplayAll(p.handler, [][]byte{a.payload(succeeded), a.payload(paid)}, testSecret, copies)
	for i := 0; i < len(answers); i += copies {
		of := answers[i : i+copies]
		require.Equal(t, 1, of.Count(idempotency.OutcomeQueued), of[0].EventID)
		require.Equal(t, copies-1, of.Count(idempotency.OutcomeDuplicate), of[0].EventID)
	}
	p.run(t)
	a.awaitDrained(t, 2, 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, []faultEvent{paid, succeeded})
	var holder string
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT event_id FROM idempotency_guards WHERE scope = 'invoice-credit' AND key = 'in_twin'`).Scan(&holder))
	require.Equal(t, paid.ID, holder, "the earlier created event of the invoice went first")
}

// TestPgxInboxFaultTwoProcesses runs two processes on one schema, each with
// a pool and handlers of its own: both ingest (every fourth event reaches
// both, at the same time) and both run workers. Every event is stored once
// and applied once, in one attempt, and both processes applied events.
func TestPgxInboxFaultTwoProcesses(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	cfg := idempotency.InboxConfig{Workers: 4, PollInterval: 100 * time.Millisecond}
	one, two := a.process(t, "one", cfg), a.process(t, "two", cfg)
	one.run(t)
	two.run(t)
	events := faultEvents("two", 600, 5)
	var copies []faultEvent
	for i := 0; i < len(events); i += 4 {
		copies = append(copies, events[i])
	}
	// Sender i sends to process i%2; copies go to the other one.
	originals := a.startAll(t, []http.Handler{one.handler, two.handler}, events, 16)
	again := a.startAll(t, []http.Handler{two.handler, one.handler}, copies, 4)
	originals.wg.Wait()
	again.wg.Wait()
	require.Equal(t, len(events), originals.outcomes[idempotency.OutcomeQueued]+again.outcomes[idempotency.OutcomeQueued], "stored once")
	require.Equal(t, len(copies), originals.outcomes[idempotency.OutcomeDuplicate]+again.outcomes[idempotency.OutcomeDuplicate])

	a.awaitDrained(t, len(events), 5*time.Minute)
	one.stop()
	two.stop()
	a.requireExactlyOnce(t, events)
	require.Equal(t, int64(len(events)), one.attempts.Load()+two.attempts.Load(), "one attempt per event")
	rows, err := a.db.Pool.Query(t.Context(), `SELECT proc, count(*) FROM applied GROUP BY proc`)
	require.NoError(t, err)
	byProc := map[string]int{}
	var proc string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&proc, &n}, func() error {
		byProc[proc] = n
		return nil
	})
	require.NoError(t, err)
	t.Logf("events applied by process: %v", byProc)
	require.NotZero(t, byProc["one"], "process one applied nothing")
	require.NotZero(t, byProc["two"], "process two applied nothing")
}

// setHook sets what the handlers call inside the transaction, after the
// event's own writes (applied, the guard) and before the credit.
func (a *faultApp) setHook(hook func(ctx context.Context, tx idempotency.Tx, proc, eventID string) error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hook = hook
}

// sendAll is startAll, returning when every event is accepted.
func (a *faultApp) sendAll(t *testing.T, hs []http.Handler, events []faultEvent, senders int) *faultTraffic {
	tr := a.startAll(t, hs, events, senders)
	tr.wg.Wait()
	return tr
}

// attemptResults are the results of eventID's attempts so far.
func (a *faultApp) attemptResults(eventID string) []idempotency.Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.results[eventID])
}

// faultGate holds the next n handler attempts inside their transactions,
// after their own writes, until it is opened.
type faultGate struct {
	left    atomic.Int32
	entered chan string // event ids
	release chan struct{}
	open    func()
}

func newFaultGate(n int) *faultGate {
	g := &faultGate{entered: make(chan string, n), release: make(chan struct{})}
	g.left.Store(int32(n))
	g.open = sync.OnceFunc(func() { close(g.release) })
	return g
}

func (g *faultGate) hook(ctx context.Context, _ idempotency.Tx, _, eventID string) error {
	if g.left.Add(-1) < 0 {
		return nil
	}
	g.entered <- eventID
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await returns the ids of the n events held.
func (g *faultGate) await(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		select {
		case id := <-g.entered:
			ids = append(ids, id)
		case <-time.After(time.Minute): // the deliveries stored, leased and claimed, of a loaded machine
			require.FailNow(t, "handlers did not reach the gate")
		}
	}
	return ids
}

// faultBackoff retries a failed attempt soon: these tests are about
// exactly once, not about the schedule.
func faultBackoff(int) time.Duration { return 50 * time.Millisecond }

// faultTimeout and faultLease are the attempt's Timeout and Lease of the
// processes whose sessions a scenario ends or whose server it stops. An
// attempt runs its statements under faultTimeout, which a loaded machine,
// its statements taking seconds, must not run out of: each attempt that
// timed out for nothing was tried again, up to MaxAttempts, and then
// dead-lettered (2 s did so). An attempt the fault left processing, its
// failure not recorded, is taken again once its lease expires, faultLease
// after it was leased.
const (
	faultTimeout = 10 * time.Second
	faultLease   = faultTimeout + 2*time.Second
)

// leapClock is the real time plus a lead that a scenario moves forward:
// an inbox on it (InboxConfig.Now) runs in real time, and once the
// scenario has seen its held attempts end unrecorded, leapPastLease
// expires their leases at once instead of waiting faultLease for them.
// The attempts in flight then have expired leases too, and may be taken
// over while they run: the store's claim still applies each event once.
type leapClock struct{ lead atomic.Int64 }

// Now is the clock's time.
func (c *leapClock) Now() time.Time { return time.Now().Add(time.Duration(c.lead.Load())) }

// leapPastLease moves the clock past every lease taken so far.
func (c *leapClock) leapPastLease() { c.lead.Add(int64(faultLease)) }

// TestPgxInboxFaultPoisonEvent: an event whose handler always fails is
// dead-lettered after MaxAttempts with its last error, without holding the
// others back; once the cause is fixed, Redrive applies it once.
func TestPgxInboxFaultPoisonEvent(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	p := a.process(t, "main", idempotency.InboxConfig{MaxAttempts: 3, Backoff: faultBackoff, PollInterval: 100 * time.Millisecond})
	poison := faultEvent{ID: "evt_poison", Type: "invoice.paid", Invoice: "in_poison", Account: "acct_poison"}
	const cause = "accounting API: 422 invoice in_poison has no tax rate"
	var poisoned atomic.Bool
	poisoned.Store(true)
	a.setHook(func(_ context.Context, _ idempotency.Tx, _, eventID string) error {
		if eventID == poison.ID && poisoned.Load() {
			return errors.New(cause)
		}
		return nil
	})
	events := append(faultEvents("poison", 20, 0), poison)
	p.run(t)
	a.sendAll(t, []http.Handler{p.handler}, events, 4)
	a.awaitInbox(t, 30*time.Second, "the poison dead-lettered, the others processed", func(st idempotency.InboxStats) bool {
		return st.Counts[idempotency.InboxDeadLetter] == 1 && st.Counts[idempotency.InboxProcessed] == len(events)-1 &&
			st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed] == 0
	})
	r := a.record(t, poison.ID)
	require.Equal(t, idempotency.InboxDeadLetter, r.State)
	require.Equal(t, 3, r.Attempt)
	require.Contains(t, r.LastError, cause)
	require.False(t, r.FinishedAt.IsZero())
	require.Equal(t, 3, a.handlerRuns(poison.ID))
	// Each attempt reported once, failed with the cause. Not necessarily in
	// attempt order: OnResult runs after the attempt's failure is recorded,
	// when the next attempt may already be leased by another worker and be
	// over before it. Nor by the time the dead letter shows: the last one
	// is reported after it is recorded.
	faultAwait(t, 10*time.Second, "the poison's three attempts reported", func() bool { return len(a.attemptResults(poison.ID)) >= 3 })
	results := a.attemptResults(poison.ID)
	slices.SortFunc(results, func(x, y idempotency.Result) int { return x.Attempt - y.Attempt })
	require.Len(t, results, 3)
	for i, res := range results {
		require.Equal(t, i+1, res.Attempt)
		require.ErrorContains(t, res.Err, cause)
	}
	var n int
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM applied WHERE event_id = $1`, poison.ID).Scan(&n))
	require.Zero(t, n, "the failed attempts' writes rolled back")
	require.NoError(t, a.db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM accounts WHERE id = $1`, poison.Account).Scan(&n))
	require.Zero(t, n, "nor credited")

	poisoned.Store(false) // the cause is fixed
	n, err := p.inbox.Redrive(t.Context(), idempotency.RedriveFilter{DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = p.inbox.Redrive(t.Context(), idempotency.RedriveFilter{})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	a.awaitDrained(t, len(events), 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, events)
	r = a.record(t, poison.ID)
	require.Equal(t, 1, r.Attempt, "a fresh attempt budget")
	require.Equal(t, 4, a.handlerRuns(poison.ID))
}

// TestPgxInboxFaultOrderUnderBusyWorkers: while every worker is busy with
// slow events of other objects and as many more are leased ahead for them,
// events of three objects arrive newest
// first; once workers are free, each object's events are applied one at a
// time, oldest created first (ties by event id), as the handler's serial
// column records. PostgreSQL watches the "one at a time": a unique index
// allows one processing event per object, so a lease that broke the rule
// would fail.
func TestPgxInboxFaultOrderUnderBusyWorkers(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	_, err := a.db.Pool.Exec(t.Context(), `CREATE UNIQUE INDEX one_processing_per_object ON idempotency_inbox (object_id)
WHERE state = 'processing' AND object_id <> ''`)
	require.NoError(t, err)
	const workers = 4
	// The held attempts wait at the gate under Timeout while the queue is
	// awaited and the ordered events are sent: 30 s, the default, a
	// loaded machine may use up.
	p := a.process(t, "main", idempotency.InboxConfig{Workers: workers, Timeout: 2 * time.Minute, Lease: 4 * time.Minute})
	g := newFaultGate(workers)
	a.setHook(func(ctx context.Context, tx idempotency.Tx, proc, eventID string) error {
		if strings.HasPrefix(eventID, "evt_slow_") {
			return g.hook(ctx, tx, proc, eventID)
		}
		return nil
	})
	var slow, ordered []faultEvent
	for i := range 3 * workers { // the busy workers' events and the queue's (twice as long)
		slow = append(slow, faultEvent{ID: fmt.Sprintf("evt_slow_%d", i), Type: "invoice.paid", Invoice: fmt.Sprintf("in_slow_%d", i), Account: "acct_slow"})
	}
	// Event k of object o is evt_order_o_k; k = 1..6 are created 5, 4, 3,
	// 2, 1 and 1 seconds in, and sent newest first (the tie: 6, then 5).
	created := []int64{0, 5, 4, 3, 2, 1, 1}
	for _, k := range []int{1, 2, 3, 4, 6, 5} {
		for o := range 3 {
			ordered = append(ordered, faultEvent{ID: fmt.Sprintf("evt_order_%d_%d", o, k), Type: "invoice.paid",
				Invoice: fmt.Sprintf("in_order_%d", o), Account: "acct_order", Created: created[k]})
		}
	}
	p.run(t)
	t.Cleanup(g.open)
	a.sendAll(t, []http.Handler{p.handler}, slow, workers)
	g.await(t, workers)
	// Workers lease ahead while at least half their queue (twice as long
	// as the workers) is free: with more than half of its places taken
	// they lease nothing more.
	var busy int
	faultAwait(t, time.Minute, "the queue leased ahead", func() bool {
		st, err := a.observer.Stats(t.Context())
		busy = st.Counts[idempotency.InboxProcessing]
		return err == nil && busy >= workers+workers+1
	})
	a.sendAll(t, []http.Handler{p.handler}, ordered, 1) // one sender: in this order
	st, err := a.observer.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, busy, st.Counts[idempotency.InboxProcessing], "every worker busy and the queue full: nothing more taken")
	require.Equal(t, len(ordered)+len(slow)-busy, st.Counts[idempotency.InboxPending], "every worker busy and the queue full: nothing more taken")
	g.open()
	a.awaitDrained(t, len(slow)+len(ordered), 30*time.Second)
	p.stop()

	require.NotContains(t, a.logs.String(), "cannot take due events", "a lease failed: two events of one object at once?")
	for o := range 3 {
		rows, err := a.db.Pool.Query(t.Context(), `SELECT event_id FROM applied WHERE object_id = $1 ORDER BY seq`, fmt.Sprintf("in_order_%d", o))
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		var want []string
		for _, k := range []int{5, 6, 4, 3, 2, 1} {
			want = append(want, fmt.Sprintf("evt_order_%d_%d", o, k))
		}
		require.Equal(t, want, got, "object in_order_%d in created order", o)
	}
	a.requireExactlyOnce(t, append(slow, ordered...))
}

func (tr *faultTraffic) refusedBy(sender int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.refused[sender]
}

// awaitEveryRefused waits until every sender has been refused at least
// once.
func (tr *faultTraffic) awaitEveryRefused(t *testing.T) {
	t.Helper()
	faultAwait(t, 30*time.Second, "every sender refused", func() bool {
		for s := range tr.refused {
			if tr.refusedBy(s) == 0 {
				return false
			}
		}
		return true
	})
}

// faultAwait polls cond until it holds; it fails the test after within.
func faultAwait(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNowf(t, "condition not reached", "%s: not after %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listener is the pid of p's listening session, awaited until there is
// exactly one and it is not old.
func (a *faultApp) listener(t *testing.T, p *faultProc, old int32) int32 {
	t.Helper()
	var pid int32
	faultAwait(t, 30*time.Second, p.name+" listening", func() bool {
		rows, err := a.admin.Query(t.Context(), `SELECT pid FROM pg_stat_activity
WHERE application_name = $1 AND state = 'idle' AND query LIKE 'LISTEN %'`, p.appName)
		if err != nil {
			return false // the admin pool's connection may have gone with a restart
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil || len(pids) != 1 || pids[0] == old {
			return false
		}
		pid = pids[0]
		return true
	})
	return pid
}

// terminateSessions ends every session of p, as an operator's
// pg_terminate_backend or a failover would, and returns how many.
func (a *faultApp) terminateSessions(t *testing.T, p *faultProc) int {
	t.Helper()
	n, err := a.tryTerminateSessions(t.Context(), p)
	require.NoError(t, err)
	return n
}

// tryTerminateSessions is terminateSessions for a goroutine of the test, or
// while the server may be down: it returns the error.
func (a *faultApp) tryTerminateSessions(ctx context.Context, p *faultProc) (int, error) {
	var n int
	err := a.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
FROM pg_stat_activity WHERE application_name = $1`, p.appName).Scan(&n)
	return n, err
}

// TestPgxInboxFaultDatabaseRestart stops PostgreSQL while 8 senders ingest
// and workers are inside transactions, and starts it again: every answer
// is 200 or 503, each refused event is sent again until accepted, the
// workers drain on their own (listening again), and every event is applied
// exactly once. The server goes down in a fast shutdown, and in a crash
// (immediate shutdown; the start runs crash recovery).
func TestPgxInboxFaultDatabaseRestart(t *testing.T) {
	// Not parallel: it stops the shared server.
	t.Run("fast-shutdown", func(t *testing.T) { faultRestart(t, (*pgtest.Cluster).Stop) })
	t.Run("crash", func(t *testing.T) { faultRestart(t, (*pgtest.Cluster).Kill) })
}

// faultRestart is the restart scenario; down takes the server down.
func faultRestart(t *testing.T, down func(*pgtest.Cluster, testing.TB)) {
	cluster := pgtest.Server(t)
	a := newFaultApp(t)
	clock := new(leapClock)
	// Over TCP, as in production: the pool's connections die with the
	// server and are found stale afterwards.
	p := a.processOn(t, "main", cluster.TCP(t, a.db.URL), idempotency.InboxConfig{
		Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
		Now: clock.Now,
	})
	g := newFaultGate(4)
	a.setHook(g.hook)
	p.run(t)
	t.Cleanup(g.open)
	listening := a.listener(t, p, 0)

	const senders = 8
	tr := a.startTraffic(t, []http.Handler{p.handler}, senders, func(s, k int) (faultEvent, bool) {
		return faultStreamEvent("restart", s, k, 5), k < 500
	})
	held := g.await(t, 4) // four workers inside their transactions
	faultAwait(t, 30*time.Second, "100 events accepted", func() bool { return tr.accepted.Load() >= 100 })

	down(cluster, t)
	g.open()
	// Every sender is refused at least once while the database is down.
	tr.awaitEveryRefused(t)
	// The held attempts end while the database is down: their commits
	// fail, and so does recording the failure; only their leases' expiry
	// brings them back.
	for _, id := range held {
		faultAwait(t, 30*time.Second, "the held attempt of "+id+" reported", func() bool { return len(a.attemptResults(id)) > 0 })
		require.Error(t, a.attemptResults(id)[0].Err, "%s committed with the database down", id)
	}
	before := tr.accepted.Load()
	cluster.Start(t)
	clock.leapPastLease()
	faultAwait(t, 30*time.Second, "100 events accepted after the restart", func() bool { return tr.accepted.Load() >= before+100 })
	tr.stop()

	a.listener(t, p, listening)
	sent := len(tr.sent)
	a.awaitDrained(t, sent, 2*time.Minute)
	p.stop()

	statuses := tr.statuses // the senders are done
	t.Logf("%d events accepted, answers by status %v, outcomes %v", sent, statuses, tr.outcomes)
	for status := range statuses {
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable}, status, "answers %v", statuses)
	}
	require.GreaterOrEqual(t, statuses[http.StatusServiceUnavailable], senders)
	require.Equal(t, sent, tr.outcomes[idempotency.OutcomeQueued]+tr.outcomes[idempotency.OutcomeDuplicate])
	a.requireExactlyOnce(t, tr.sent)
	a.requireRetried(t, held, "the database stopped")
}

// TestPgxInboxFaultBackendsTerminated ends every session of the process
// (its pool's connections and its listening one) with
// pg_terminate_backend while 8 senders ingest and the workers apply: first
// while four workers are inside their transactions, then again each time
// the workers have made progress. Every event is applied exactly once, the
// inbox drains, and the process listens again.
func TestPgxInboxFaultBackendsTerminated(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	p := a.process(t, "main", idempotency.InboxConfig{
		Lease: faultLease, Timeout: faultTimeout, PollInterval: 100 * time.Millisecond, Backoff: faultBackoff,
	})
	g := newFaultGate(4)
	a.setHook(g.hook)
	p.run(t)
	t.Cleanup(g.open)
	listening := a.listener(t, p, 0)
	events := faultEvents("term", 400, 5)
	tr := a.startAll(t, []http.Handler{p.handler}, events, 8)

	held := g.await(t, 4)
	require.GreaterOrEqual(t, a.terminateSessions(t, p), len(held)+1, "the held transactions' sessions and the listening one")
	g.open()
	for _, id := range held {
		faultAwait(t, 30*time.Second, "the held attempt of "+id+" reported", func() bool { return len(a.attemptResults(id)) > 0 })
		require.Error(t, a.attemptResults(id)[0].Err, "%s committed on a terminated session", id)
	}
	processed := func() int {
		st, err := a.observer.Stats(t.Context())
		require.NoError(t, err)
		return st.Counts[idempotency.InboxProcessed]
	}
	rounds := 0
	for range 8 {
		last := processed()
		if last == len(events) {
			break
		}
		faultAwait(t, time.Minute, "progress since the last termination", func() bool { return processed() > last })
		a.terminateSessions(t, p)
		rounds++
	}
	tr.wg.Wait()
	a.listener(t, p, listening)
	a.awaitDrained(t, len(events), 2*time.Minute)
	p.stop()

	t.Logf("%d rounds of terminations after the first; answers by status %v", rounds, tr.statuses)
	require.Len(t, tr.sent, len(events))
	a.requireExactlyOnce(t, events)
	a.requireRetried(t, held, "its session ended")
}

// TestPgxInboxFaultSettleAfterFailover: an attempt that fails because the
// process's sessions ended (a failover, an operator's
// pg_terminate_backend) is recorded as failed, with its error and its
// backoff, although the pool's idle connections ended with it: it does not
// wait for its lease to expire. Then it is applied once.
func TestPgxInboxFaultSettleAfterFailover(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	p := a.process(t, "main", idempotency.InboxConfig{Backoff: faultBackoff})
	ev := faultEvent{ID: "evt_failover", Type: "invoice.paid", Invoice: "in_failover", Account: "acct_failover"}
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{ev}, 1)
	// Idle connections used a moment ago: the pool hands them out without
	// a ping.
	conns := make([]*pgxpool.Conn, 4)
	for i := range conns {
		var err error
		conns[i], err = p.pool.Acquire(t.Context())
		require.NoError(t, err)
	}
	for _, c := range conns {
		c.Release()
	}
	leased, err := idempotency.LeaseInbox(t.Context(), p.inbox, 1)
	require.NoError(t, err)
	require.Len(t, leased, 1)
	const cause = "downstream failed"
	a.setHook(func(context.Context, idempotency.Tx, string, string) error {
		a.terminateSessions(t, p)
		return errors.New(cause)
	})
	idempotency.ApplyLeased(t.Context(), p.inbox, leased[0])
	r := a.record(t, ev.ID)
	require.Equal(t, idempotency.InboxFailed, r.State, "due again after its backoff, not after its lease: %s", a.logs.String())
	require.Equal(t, 1, r.Attempt)
	require.Equal(t, cause, r.LastError)

	a.setHook(nil)
	p.run(t)
	a.awaitDrained(t, 1, 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, []faultEvent{ev})
	require.Equal(t, 2, a.record(t, ev.ID).Attempt)
}

// The worker processes of TestPgxInboxFaultWorkerKilled,
// TestPgxTaskWorkerKilled, TestPgxBouncerKilled, TestPgxPruneKilled and
// TestPgxRecoverKilled: the environment tells them where to connect, and
// they say on stdout when they have reached the point where they hang.
const (
	envHelperWorkerURL    = "IDEMPOTENCY_TEST_HELPER_WORKER_URL"
	envHelperWorkerSchema = "IDEMPOTENCY_TEST_HELPER_WORKER_SCHEMA"
	envHelperWorkers      = "IDEMPOTENCY_TEST_HELPER_WORKERS" // TestHelperInboxWorker's InboxConfig.Workers, when set
	helperWorkerEntered   = "helper worker: inside the transaction"
)

// pastHelperLease is how far a test moves the inbox clock of the process
// that takes over the events of a killed worker process: past that
// worker's lease, InboxConfig's default minute, which nobody then waits
// for. A worker process's attempt runs under the default Timeout too: with
// a lease of 2 s and a Timeout of 1 s, a loaded machine's worker ran out of
// its Timeout before its handler hung (and hung in attempt 2), or had its
// own expired lease taken over by another of its workers before the test
// killed it.
const pastHelperLease = 10 * time.Minute

// helperWorkerStore is, in a worker process that startHelperProcess
// started, the store on the parent's schema, with its pool. Run on its own,
// the helper test skips: it is not a test.
func helperWorkerStore(t *testing.T, parent string) (*pgxpool.Pool, *idempotency.PgxStore) {
	t.Helper()
	url := os.Getenv(envHelperWorkerURL)
	if url == "" {
		t.Skipf("the worker process of %s; it runs only as that test's child", parent)
	}
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	store, err := idempotency.NewPgxStore(pool, idempotency.PgxConfig{Schema: os.Getenv(envHelperWorkerSchema)})
	require.NoError(t, err)
	return pool, store
}

// TestHelperInboxWorker is not a test: it is the worker process that
// TestPgxInboxFaultWorkerKilled starts and kills. It runs an Inbox whose
// handler writes, says so, and then blocks inside the transaction until the
// process is killed. Its lease is the default minute: the parent takes it
// over by its clock (pastHelperLease).
func TestHelperInboxWorker(t *testing.T) {
	_, store := helperWorkerStore(t, "TestPgxInboxFaultWorkerKilled")
	a := &faultApp{runs: map[string]int{}}
	a.hook = func(context.Context, idempotency.Tx, string, string) error {
		fmt.Println(helperWorkerEntered)
		select {} // until SIGKILL, whatever the attempt's timeout: a worker that hangs, then dies
	}
	var workers int
	if s := os.Getenv(envHelperWorkers); s != "" {
		var err error
		workers, err = strconv.Atoi(s)
		require.NoError(t, err, envHelperWorkers)
	}
	in, err := idempotency.NewInbox(store, a.handlers("child"), idempotency.InboxConfig{
		Workers: workers, PollInterval: 100 * time.Millisecond, Logger: discardLogger(),
	})
	require.NoError(t, err)
	require.NoError(t, in.Run(context.Background()))
}

// helperWorker is the test binary run again as a worker process of a's
// service: it runs one TestHelper... function, which hangs at some point
// and says so on stdout, to be killed there.
type helperWorker struct {
	cmd     *exec.Cmd
	stderr  *syncBuffer
	said    chan struct{} // closed once the worker printed its line
	exited  chan struct{} // closed once the worker ended
	waitErr error         // how it ended; set before exited is closed
}

// startHelperWorker starts the worker process that runs test on a's schema
// and says line when it hangs. It is killed when the test ends.
func (a *faultApp) startHelperWorker(t *testing.T, test, line string) *helperWorker {
	t.Helper()
	return startHelperProcess(t, test, line, a.db.URL, a.db.Schema)
}

// startHelperProcess starts the worker process that runs test, connecting
// with url to schema, with env (KEY=value) added to its environment, and
// says line when it hangs. It is killed when the test ends.
func startHelperProcess(t *testing.T, test, line, url, schema string, env ...string) *helperWorker {
	t.Helper()
	w := &helperWorker{stderr: &syncBuffer{}, said: make(chan struct{}), exited: make(chan struct{})}
	w.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.timeout=2m")
	w.cmd.Env = append(append(os.Environ(), envHelperWorkerURL+"="+url, envHelperWorkerSchema+"="+schema), env...)
	w.cmd.Stderr = w.stderr
	stdout, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	go func() {
		defer close(w.exited)
		said := sync.OnceFunc(func() { close(w.said) })
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == line {
				said()
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		w.waitErr = w.cmd.Wait() // after the last read from stdout, as os/exec requires
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.exited
	})
	return w
}

// await waits until the worker says its line: it reached where, and hangs.
func (w *helperWorker) await(t *testing.T, where string) {
	t.Helper()
	select {
	case <-w.said:
	case <-w.exited:
		require.FailNowf(t, "the worker process ended early", "%v\n%s", w.waitErr, w.stderr.String())
	case <-time.After(time.Minute):
		require.FailNowf(t, "the worker process did not reach "+where, "stderr:\n%s", w.stderr.String())
	}
}

// kill kills the worker with SIGKILL, and returns once it is dead.
func (w *helperWorker) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, w.cmd.Process.Kill()) // SIGKILL
	<-w.exited
	require.Equal(t, -1, w.cmd.ProcessState.ExitCode(), "killed by a signal: %v", w.waitErr)
	require.Equal(t, syscall.SIGKILL.String(), strings.TrimPrefix(w.waitErr.Error(), "signal: "))
}

// TestPgxInboxFaultWorkerKilled kills a worker process with SIGKILL while
// its handler is inside the event's transaction, after its writes.
// PostgreSQL rolls the transaction back; once the lease expires (the
// other process's clock past it) that process applies the event, as
// attempt 2, exactly once. That attempt
// reports the killed one as it starts, once, to OnResult and the
// Observer (failed, State failed, ErrLeaseExpired): nobody else can, and
// nobody did, before the last attempt.
func TestPgxInboxFaultWorkerKilled(t *testing.T) {
	t.Parallel()
	a := newFaultApp(t)
	// The parent's attempt has a generous Timeout: on a loaded machine a
	// second was too little for it, and a timed-out attempt counts. When it
	// may start depends on the killed worker's lease alone, which the
	// parent's clock passes.
	var onResult misuseResults
	clock := idempotencytest.NewClock(time.Now())
	p := a.process(t, "parent", idempotency.InboxConfig{Lease: 12 * time.Second, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond,
		OnResult: onResult.add, Now: clock.Now})
	ev := faultEvent{ID: "evt_killed", Type: "invoice.paid", Invoice: "in_killed", Account: "acct_killed"}
	a.sendAll(t, []http.Handler{p.handler}, []faultEvent{ev}, 1)

	w := a.startHelperWorker(t, "TestHelperInboxWorker", helperWorkerEntered)
	w.await(t, "its handler")
	r := a.record(t, ev.ID)
	require.Equal(t, idempotency.InboxProcessing, r.State)
	require.Equal(t, 1, r.Attempt)
	w.kill(t)

	clock.Advance(pastHelperLease)
	p.run(t)
	a.awaitDrained(t, 1, 30*time.Second)
	p.stop()
	a.requireExactlyOnce(t, []faultEvent{ev})
	require.Equal(t, 2, a.record(t, ev.ID).Attempt, "the killed worker's attempt counts")
	var procs []string
	rows, err := a.db.Pool.Query(t.Context(), `SELECT proc FROM applied`)
	require.NoError(t, err)
	procs, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"parent"}, procs, "the killed worker's write was rolled back")
	onResult.mu.Lock()
	reported := slices.Clone(onResult.all)
	onResult.mu.Unlock()
	for name, results := range map[string][]idempotency.Result{"OnResult": reported, "Observer": a.attemptResults(ev.ID)} {
		require.Len(t, results, 2, "%s: the killed attempt, reported by the one that took it over, then that one: %v", name, results)
		killed := results[0]
		require.Equal(t, ev.ID, killed.EventID, name)
		require.Equal(t, 1, killed.Attempt, name)
		require.Equal(t, idempotency.OutcomeFailed, killed.Outcome, name)
		require.Equal(t, idempotency.InboxFailed, killed.State, name)
		require.ErrorIs(t, killed.Err, idempotency.ErrLeaseExpired, name)
		require.Equal(t, idempotency.OutcomeProcessed, results[1].Outcome, name)
		require.Equal(t, 2, results[1].Attempt, name)
	}
}

// faultBurstSize is how many events TestPgxInboxFaultBurst sends:
// IDEMPOTENCY_BURST when set (IDEMPOTENCY_BURST=20000 for the full burst:
// about 40 s on its own with -race on 2 cores, 70 s beside the package's
// other tests, too long for CI), else 5,000, or 2,000 under -race (where
// CI runs it: each of the 64 senders still sends about 30 events, and the
// workers drain them in many leases), 1,000 with -short.
func faultBurstSize(t *testing.T) int {
	if s := os.Getenv("IDEMPOTENCY_BURST"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "IDEMPOTENCY_BURST")
		require.Positive(t, n, "IDEMPOTENCY_BURST")
		return n
	}
	if testing.Short() {
		return 1000
	}
	if race.Enabled {
		return 2000
	}
	return 5000
}

// TestPgxInboxFaultBurst ingests a burst of distinct events from 64
// concurrent senders through a loopback HTTP server, then drains it with
// Run: every event applied once, in one attempt. It logs the ingest rate
// and the drain time.
func TestPgxInboxFaultBurst(t *testing.T) {
	t.Parallel()
	n := faultBurstSize(t)
	const senders = 64
	a := newFaultApp(t)
	p := a.process(t, "main", idempotency.InboxConfig{})
	srv := httptest.NewServer(p.handler)
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}, Timeout: 2 * time.Minute} // past faultIngestTimeout
	t.Cleanup(client.CloseIdleConnections)
	events := faultEvents("burst", n, 10)

	var (
		next     atomic.Int64
		mu       sync.Mutex
		statuses = map[int]int{}
		outcomes = map[idempotency.Outcome]int{}
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range senders {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(events) {
					return
				}
				payload := a.payload(events[i])
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, bytes.NewReader(payload))
				if !assert.NoError(t, err) {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Stripe-Signature", idempotencytest.SignatureHeader(payload, testSecret, time.Now()))
				resp, err := client.Do(req)
				if !assert.NoError(t, err) {
					return
				}
				var body struct {
					Outcome idempotency.Outcome `json:"outcome"`
				}
				err = json.NewDecoder(resp.Body).Decode(&body)
				_ = resp.Body.Close()
				assert.NoError(t, err)
				mu.Lock()
				statuses[resp.StatusCode]++
				outcomes[body.Outcome]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	ingest := time.Since(start)
	require.Equal(t, map[int]int{http.StatusOK: n}, statuses)
	require.Equal(t, map[idempotency.Outcome]int{idempotency.OutcomeQueued: n}, outcomes)

	start = time.Now()
	p.run(t)
	a.awaitDrained(t, n, 5*time.Minute)
	drain := time.Since(start)
	p.stop()
	t.Logf("burst of %d events: ingested by %d senders in %s (%.0f events/s); drained by %d workers in %s (%.0f events/s)",
		n, senders, ingest.Round(time.Millisecond), float64(n)/ingest.Seconds(),
		idempotency.DefaultWorkers, drain.Round(time.Millisecond), float64(n)/drain.Seconds())
	a.requireExactlyOnce(t, events)
	require.Equal(t, int64(n), p.attempts.Load(), "one attempt per event")
}
