package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/dashboard"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func TestMain(m *testing.M) {
	code := idempotencytest.Main(m)
	stopChromium()
	os.Exit(code)
}

const (
	secret = "whsec_dashboard_test"
	// mount is where the tests mount the dashboard, as a service would.
	mount = "/admin/webhooks/"
	// customerEmail is in every test payload: a page shows it only with
	// Config.ShowPayloads.
	customerEmail = "jenny.rosen@example.com"
)

// store is what the tests need of a store: the contract and the ledger.
type store interface {
	idempotency.Store
	dashboard.Ledger
}

// bothStores opens a new store of each kind, by name, for a test that
// runs against both.
var bothStores = map[string]func(*testing.T) store{
	"memory":   func(*testing.T) store { return idempotency.NewMemoryStore() },
	"postgres": func(t *testing.T) store { return idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{}) },
}

// fixture is a service in inbox mode whose invoice.paid handler fails
// while failing is set, enqueues a receipt task otherwise (which fails
// while failingTasks is set), and whose charge.refunded handler skips;
// MaxAttempts is 1, so a failure is dead-lettered at once. Its dashboard
// is served by srv under mount.
type fixture struct {
	store        store
	inbox        *idempotency.Inbox
	webhook      http.Handler
	clock        *idempotencytest.Clock
	failing      atomic.Bool
	failingTasks atomic.Bool
	logPath      string // the dashboard's log, a file: requests write it on the server's goroutines
	srv          *httptest.Server
}

func newFixture(t *testing.T, st store, cfg dashboard.Config) *fixture {
	t.Helper()
	return newFixtureOf(t, st, cfg, dashboard.New)
}

// newFixtureOf is newFixture with the dashboard newDashboard makes.
func newFixtureOf(t *testing.T, st store, cfg dashboard.Config, newDashboard func(dashboard.Config) (*dashboard.Dashboard, error)) *fixture {
	t.Helper()
	f := &fixture{store: st, clock: idempotencytest.NewClock(time.Now()), logPath: filepath.Join(t.TempDir(), "dashboard.log")}
	logFile, err := os.Create(f.logPath)
	require.NoError(t, err)
	t.Cleanup(func() { _ = logFile.Close() })
	quiet := slog.New(slog.DiscardHandler)
	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "send-receipt", func(_ context.Context, run idempotency.TaskRun[string]) error {
		if f.failingTasks.Load() {
			return errors.New("mailer refused the receipt of " + run.Key)
		}
		return nil
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if f.failing.Load() {
			return errors.New("ledger service refused invoice " + ev.Object.ID)
		}
		_, err := receipt.Enqueue(ctx, tx, ev.Object.ID, ev.Object.ID)
		return err
	})
	idempotency.On(hs, "charge.refunded", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Charge]) error {
		return idempotency.Skip("refunds are booked by hand")
	})
	f.inbox, err = idempotency.NewInbox(st, hs, idempotency.InboxConfig{MaxAttempts: 1, Now: f.clock.Now, Logger: quiet})
	require.NoError(t, err)
	f.webhook, err = f.inbox.Handler(idempotency.Config{Secrets: []string{secret}, Now: f.clock.Now, Logger: quiet})
	require.NoError(t, err)

	cfg.Inbox = f.inbox
	if cfg.Ledger == nil {
		cfg.Ledger = st
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logFile, nil))
	cfg.Now = f.clock.Now
	dash, err := newDashboard(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(mount, http.StripPrefix(strings.TrimSuffix(mount, "/"), dash))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// deliver stores the fixture event of type typ (testdata/stripe-events)
// with the event id and object id given, as Stripe would deliver it.
func (f *fixture) deliver(t *testing.T, typ, eventID, objectID string) {
	t.Helper()
	f.deliverOf(t, "", typ, eventID, objectID)
}

// deliverOf is deliver of connected account's event (the platform's own
// when account is empty).
func (f *fixture) deliverOf(t *testing.T, account, typ, eventID, objectID string) {
	t.Helper()
	ans := idempotencytest.Deliver(f.webhook, accountEventPayload(t, account, typ, eventID, objectID), secret)
	require.Equal(t, http.StatusOK, ans.Status, ans.Body)
	require.Equal(t, idempotency.OutcomeQueued, ans.Outcome)
}

// eventPayload is the fixture event of type typ (testdata/stripe-events)
// with the event id and object id given, as Stripe would send it.
func eventPayload(t *testing.T, typ, eventID, objectID string) []byte {
	t.Helper()
	return accountEventPayload(t, "", typ, eventID, objectID)
}

// accountEventPayload is eventPayload of connected account's event: the
// platform's own, as the fixture file has it, when account is empty.
func accountEventPayload(t *testing.T, account, typ, eventID, objectID string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../testdata/stripe-events/" + typ + ".json")
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(raw, &ev))
	ev["id"] = eventID
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	obj["id"] = objectID
	obj["metadata"] = map[string]any{"email": customerEmail}
	if account != "" {
		ev["account"] = account
	}
	payload, err := json.Marshal(ev)
	require.NoError(t, err)
	return payload
}

// work applies everything due.
func (f *fixture) work(t *testing.T) {
	t.Helper()
	_, err := f.inbox.WorkDue(t.Context())
	require.NoError(t, err)
}

// populate delivers and applies two paid invoices (each enqueues a
// receipt task, which runs too), one refund (skipped) and one paid
// invoice that fails and is dead-lettered, then one that waits, pending.
func (f *fixture) populate(t *testing.T) {
	t.Helper()
	f.deliver(t, "invoice.paid", "evt_paid_1", "in_paid_1")
	f.deliver(t, "invoice.paid", "evt_paid_2", "in_paid_2")
	f.deliver(t, "charge.refunded", "evt_refund_1", "ch_refund_1")
	f.work(t)
	f.failing.Store(true)
	f.deliver(t, "invoice.paid", "evt_dead_1", "in_dead_1")
	f.work(t)
	f.clock.Advance(90 * time.Second)
	f.deliver(t, "invoice.paid", "evt_waiting", "in_waiting")
	f.clock.Advance(4 * time.Minute)
}

// state is the inbox state of id.
func (f *fixture) state(t *testing.T, id string) idempotency.InboxState {
	t.Helper()
	return record(t, f.inbox, id).State
}

// record is the record of id in in, which has it.
func record(t *testing.T, in *idempotency.Inbox, id string) idempotency.InboxRecord {
	t.Helper()
	rec, ok, err := in.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok, id)
	return rec
}

// logs is what the dashboard logged so far.
func (f *fixture) logs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.logPath)
	require.NoError(t, err)
	return string(b)
}

// testTransport is the tests' own transport. http.DefaultTransport's idle
// connections are closed by every httptest.Server.Close, another test's
// too, and a request about to reuse one failed ("net/http: HTTP/1.x
// transport connection broken: http: CloseIdleConnections called").
// Without keep-alives it keeps no idle connection to close.
var testTransport = &http.Transport{DisableKeepAlives: true}

// plainClient is a client on testTransport.
var plainClient = &http.Client{Transport: testTransport}

// noRedirects is a client on testTransport that shows a redirect instead
// of following it.
var noRedirects = &http.Client{Transport: testTransport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get fetches the dashboard's page path (relative to the mount) and
// returns the status and body.
func (f *fixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+mount+path, nil)
	require.NoError(t, err)
	resp := f.do(t, req)
	return resp.StatusCode, resp.body
}

// post sends form to the action path with the headers a browser sends on
// a same-origin form submission, plus header, and returns the response.
func (f *fixture) post(t *testing.T, path, form string, header http.Header) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+mount+path, strings.NewReader(form))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", f.srv.URL)
	for k, v := range header {
		req.Header[k] = v
	}
	return f.do(t, req)
}

type response struct {
	*http.Response
	body string
}

func (f *fixture) do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{resp, string(b)}
}
