package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Mailer sends an email once per key, as providers that take an idempotency key do.
type Mailer interface {
	Send(ctx context.Context, customer, template, key string) error
}

type Dunning struct {
	Customer string `json:"customer"`
	Invoice  string `json:"invoice"`
	Attempt  int64  `json:"attempt"`
}

func registerSaaS(hs *idempotency.Handlers, db *pgxpool.Pool, fetch idempotency.FetchFunc[*stripe.Subscription], mailer Mailer) {
	dunning := idempotency.NewTask(hs, "dunning-email", func(ctx context.Context, run idempotency.TaskRun[Dunning]) error {
		var paid bool // invoice.paid applied since the failure was stored: nothing to ask for
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM paid_periods WHERE invoice = $1)`, run.Args.Invoice).Scan(&paid); err != nil {
			return err
		}
		if paid {
			return idempotency.Skip("invoice paid")
		}
		return mailer.Send(ctx, run.Args.Customer, "payment-failed", run.IdempotencyKey) // the same key on every attempt
	})
	reminder := idempotency.NewTask(hs, "trial-reminder", func(ctx context.Context, run idempotency.TaskRun[string]) error {
		return mailer.Send(ctx, run.Args, "trial-ends", run.IdempotencyKey)
	})
	idempotency.OnCurrent(hs, []string{"customer.subscription.created", "customer.subscription.updated",
		"customer.subscription.deleted", "customer.subscription.paused", "customer.subscription.resumed"}, fetch,
		func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
			sub := ev.Object // as the API has it now
			if sub.Customer == nil || sub.Items == nil || len(sub.Items.Data) == 0 {
				return idempotency.Skip("subscription without a customer or an item")
			}
			item := sub.Items.Data[0]
			_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO subscriptions VALUES ($1, $2, $3, to_timestamp($4), to_timestamp($5))
ON CONFLICT (id) DO UPDATE SET status = $3, period_start = to_timestamp($4), period_end = to_timestamp($5)`,
				sub.ID, sub.Customer.ID, sub.Status, item.CurrentPeriodStart, item.CurrentPeriodEnd)
			return err
		})
	idempotency.On(hs, "customer.subscription.trial_will_end", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Subscription]) error {
		sub := ev.Object
		if sub.Customer == nil {
			return idempotency.Skip("subscription without a customer")
		}
		_, err := reminder.Enqueue(ctx, tx, fmt.Sprintf("%s/%d", sub.ID, sub.TrialEnd), sub.Customer.ID) // once per trial
		return err
	})
	idempotency.On(hs, "invoice.payment_failed", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		inv := ev.Object
		if inv.Customer == nil {
			return idempotency.Skip("invoice without a customer")
		}
		_, err := dunning.Enqueue(ctx, tx, fmt.Sprintf("%s/%d", inv.ID, inv.AttemptCount), // once per attempt
			Dunning{Customer: inv.Customer.ID, Invoice: inv.ID, Attempt: inv.AttemptCount})
		return err
	})
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		inv := ev.Object
		if inv.Parent == nil || inv.Parent.SubscriptionDetails == nil || inv.Parent.SubscriptionDetails.Subscription == nil ||
			inv.Lines == nil || len(inv.Lines.Data) == 0 || inv.Lines.Data[0].Period == nil {
			return idempotency.Skip("invoice of no subscription")
		}
		_, err := idempotency.PgxTx(tx).Exec(ctx, `INSERT INTO paid_periods VALUES ($1, $2, to_timestamp($3)) ON CONFLICT (invoice) DO NOTHING`,
			inv.ID, inv.Parent.SubscriptionDetails.Subscription.ID, inv.Lines.Data[0].Period.End)
		return err
	})
}

// saasMailer sends once per key, as a provider that honours idempotency
// keys does, and loses its answer to the first call of the keys in lose
// after sending.
type saasMailer struct {
	mu    sync.Mutex
	sent  map[string]string // template by key
	calls int
	lose  map[string]bool
}

func (m *saasMailer) Send(_ context.Context, customer, template, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if _, ok := m.sent[key]; !ok {
		m.sent[key] = template
	}
	if m.lose[template] {
		delete(m.lose, template)
		return fmt.Errorf("the answer to sending %s to %s was lost", template, customer)
	}
	return nil
}

func (m *saasMailer) count(template string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, tp := range m.sent {
		if tp == template {
			n++
		}
	}
	return n
}

// readmeSaaSSection returns the README's section "A SaaS on
// subscriptions", its Go declarations after the imports, and its SQL:
// the tables, and the query of access.
func readmeSaaSSection(t *testing.T) (decls, tables, access string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n### A SaaS on subscriptions: access, trials, dunning\n")
	require.True(t, ok, "the README has the SaaS recipe")
	section, _, _ = strings.Cut(section, "\n## ")
	_, sql, ok := strings.Cut(section, "\n```sql\n")
	require.True(t, ok, "the recipe has its SQL")
	sql, _, _ = strings.Cut(sql, "\n```\n")
	tables, access, ok = strings.Cut(sql, "-- access")
	require.True(t, ok, "the recipe's SQL has the query of access")
	_, access, _ = strings.Cut(access, "\n")
	for _, block := range readmeGoBlocks(string(readme)) {
		if block.name == "### A SaaS on subscriptions: access, trials, dunning #1" {
			_, decls, _ = strings.Cut(block.src, "\n)\n")
		}
	}
	require.NotEmpty(t, decls, "the recipe has its Go")
	return decls, tables, access
}

// TestReadmeSaaSSubscriptions holds the README's SaaS recipe to
// PostgreSQL, its code and SQL as they are there, each event delivered
// twice at once and again until answered 200, as Stripe does. Access
// follows the state the API has now: a subscription's created (trialing)
// and updated (active) of one second, the update first, leave it active;
// a late past_due update after the active one leaves it active; a late
// active update after the cancellation leaves it canceled, without
// access. past_due keeps access 7 days from the start of its period, and
// no longer. trial_will_end sends one reminder, delivered again and
// under another event id too (in inbox mode stored with the updates
// that one fetch covers);
// invoice.payment_failed one dunning email per attempt, newest attempt
// first, though the provider's answer to the first was lost, and none for
// an invoice whose invoice.paid was applied before the task ran (in
// synchronous mode, where the task runs after both); invoice.paid,
// before any event of its subscription, records its line's period end.
func TestReadmeSaaSSubscriptions(t *testing.T) {
	t.Parallel()
	decls, tables, access := readmeSaaSSection(t)
	self, err := os.ReadFile("readme_saas_subscriptions_test.go")
	require.NoError(t, err)
	require.True(t, strings.Contains(string(self), strings.Replace(decls, "\nfunc Register(", "\nfunc registerSaaS(", 1)),
		"the declarations here differ from the README's (Writing handlers, A SaaS on subscriptions): copy the README's here, Register as registerSaaS")

	for _, inboxMode := range []bool{false, true} {
		t.Run(map[bool]string{false: "synchronous", true: "inbox"}[inboxMode], func(t *testing.T) {
			t.Parallel()
			testReadmeSaaS(t, tables, access, inboxMode)
		})
	}
}

// testReadmeSaaS is TestReadmeSaaSSubscriptions in one mode: in inbox
// mode every event is stored before the first is applied, so that the
// first fetch of a subscription covers its later events, trial_will_end's
// among them.
func testReadmeSaaS(t *testing.T, tables, access string, inboxMode bool) {
	ctx := t.Context()
	b := newPgBackend(t, idempotency.PgxConfig{})
	_, err := b.db.Pool.Exec(ctx, tables)
	require.NoError(t, err)

	var mu sync.Mutex
	api := map[string]*stripe.Subscription{} // the API's state now
	now := time.Now()
	day := int64(24 * time.Hour / time.Second)
	setSub := func(id string, status stripe.SubscriptionStatus, start int64) {
		mu.Lock()
		defer mu.Unlock()
		api[id] = &stripe.Subscription{ID: id, Status: status, Customer: &stripe.Customer{ID: "cus_" + id},
			Items: &stripe.SubscriptionItemList{Data: []*stripe.SubscriptionItem{{CurrentPeriodStart: start, CurrentPeriodEnd: start + 30*day}}}}
	}
	mailer := &saasMailer{sent: map[string]string{}, lose: map[string]bool{"payment-failed": true}}
	hs := idempotency.NewHandlers()
	registerSaaS(hs, b.db.Pool, func(ctx context.Context, id, account string) (*stripe.Subscription, error) {
		mu.Lock()
		defer mu.Unlock()
		if sub, ok := api[id]; ok {
			return sub, nil
		}
		return nil, idempotency.ErrObjectNotFound
	}, mailer)
	clock := idempotencytest.NewClock(now)
	inbox, err := idempotency.NewInbox(b.store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	cfg := idempotency.Config{Secrets: []string{testSecret}, Now: clock.Now, Logger: discardLogger()}
	var h http.Handler
	if inboxMode {
		h, err = inbox.Handler(cfg)
	} else {
		h, err = idempotency.NewHandler(b.store, hs, cfg)
	}
	require.NoError(t, err)
	deliver := func(payload []byte) {
		t.Helper()
		if idempotencytest.Replay(h, payload, testSecret, 2).Statuses()[http.StatusOK] == 0 {
			require.Equal(t, http.StatusOK, idempotencytest.Deliver(h, payload, testSecret).Status)
		}
	}
	subEvent := func(id, typ, sub string, status stripe.SubscriptionStatus, created int64) []byte {
		return idempotencytest.Derive(fixture(t, typ), map[string]any{ // testdata/stripe-events has each type
			"id": id, "type": typ, "created": created, "data.object.id": sub, "data.object.status": status,
			"data.object.customer": "cus_" + sub, "data.object.trial_end": now.Unix() + 3*day,
		})
	}
	at := now.Unix() - 10*day
	period := at - 6*day

	setSub("sub_trial", stripe.SubscriptionStatusActive, period)
	deliver(subEvent("evt_trial_updated", "customer.subscription.updated", "sub_trial", "active", at))
	deliver(subEvent("evt_trial_created", "customer.subscription.created", "sub_trial", "trialing", at))
	willEnd := subEvent("evt_trial_will_end", "customer.subscription.trial_will_end", "sub_trial", "trialing", at)
	deliver(willEnd)
	deliver(willEnd)
	deliver(subEvent("evt_trial_will_end_2", "customer.subscription.trial_will_end", "sub_trial", "trialing", at)) // the same trial_end

	setSub("sub_late", stripe.SubscriptionStatusActive, period)
	deliver(subEvent("evt_late_active", "customer.subscription.updated", "sub_late", "active", at+60))
	deliver(subEvent("evt_late_past_due", "customer.subscription.updated", "sub_late", "past_due", at))

	setSub("sub_canceled", stripe.SubscriptionStatusCanceled, period)
	deliver(subEvent("evt_canceled_deleted", "customer.subscription.deleted", "sub_canceled", "canceled", at+60))
	deliver(subEvent("evt_canceled_late", "customer.subscription.updated", "sub_canceled", "active", at))

	setSub("sub_grace", stripe.SubscriptionStatusPastDue, now.Unix()-6*day)
	deliver(subEvent("evt_grace", "customer.subscription.updated", "sub_grace", "past_due", at))
	setSub("sub_grace_over", stripe.SubscriptionStatusPastDue, now.Unix()-8*day)
	deliver(subEvent("evt_grace_over", "customer.subscription.updated", "sub_grace_over", "past_due", at))

	invoice := func(id, typ, invoice string, fields map[string]any) []byte {
		set := map[string]any{"id": id, "type": typ, "created": at, "data.object.id": invoice}
		for k, v := range fields {
			set["data.object."+k] = v
		}
		return idempotencytest.Derive(fixture(t, typ), set) // invoice.payment_failed's at its first attempt
	}
	for attempt := int64(2); attempt >= 1; attempt-- {
		deliver(invoice(fmt.Sprintf("evt_failed_%d", attempt), "invoice.payment_failed", "in_dunned", map[string]any{
			"attempt_count": attempt}))
	}
	deliver(invoice("evt_paid", "invoice.paid", "in_unknown_sub", map[string]any{
		"parent.subscription_details.subscription": "sub_not_seen", "lines.data.0.period.end": at + 30*day}))
	if !inboxMode { // the task runs after both are applied; in inbox mode it may run between them
		deliver(invoice("evt_paid_late_failed", "invoice.payment_failed", "in_paid_late", nil))
		deliver(invoice("evt_paid_late_paid", "invoice.paid", "in_paid_late", map[string]any{
			"parent.subscription_details.subscription": "sub_trial", "lines.data.0.period.end": at + 30*day}))
	}

	for range 3 { // the events in inbox mode, the tasks; the provider's lost answer retried after its backoff
		_, err := inbox.WorkDue(ctx)
		require.NoError(t, err)
		clock.Advance(2 * time.Second)
	}
	require.Equal(t, 1, mailer.count("trial-ends"))
	require.Equal(t, 2, mailer.count("payment-failed"), "none for in_paid_late, paid before its task ran")
	require.Equal(t, 4, mailer.calls, "2 dunning emails, one sent again with its key after the lost answer, and the reminder")

	for sub, want := range map[string]struct {
		status string
		access bool
	}{
		"sub_trial":      {"active", true},
		"sub_late":       {"active", true},
		"sub_canceled":   {"canceled", false},
		"sub_grace":      {"past_due", true},
		"sub_grace_over": {"past_due", false},
	} {
		var status string
		var ok bool
		require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT status FROM subscriptions WHERE id = $1`, sub).Scan(&status))
		require.NoError(t, b.db.Pool.QueryRow(ctx, access, sub).Scan(&ok))
		require.Equal(t, want.status, status, sub)
		require.Equal(t, want.access, ok, sub)
	}
	var end time.Time
	require.NoError(t, b.db.Pool.QueryRow(ctx, `SELECT period_end FROM paid_periods WHERE invoice = 'in_unknown_sub' AND subscription = 'sub_not_seen'`).Scan(&end))
	require.Equal(t, at+30*day, end.Unix())
}
