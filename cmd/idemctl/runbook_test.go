package main

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRunbook runs every idemctl command line that README's "Operating it"
// and "Operator CLI" show, as they are written there (placeholders such as
// evt_... filled in), against a seeded store: each is in the README, is
// accepted, and does what the README says it does.
func TestRunbook(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	doc := strings.Join(strings.Fields(string(readme)), " ")

	s := newService(t, nil)
	s.seed(t)
	created := time.Now().Add(-time.Hour).Unix()
	api := &eventsAPI{
		events: [][]byte{eventPayload(t, "evt_paid_1", "invoice.paid", "in_1", created)},
		types:  []string{"invoice.paid"},
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	env := map[string]string{"STRIPE_SECRET_KEY": stripeKey}

	// run checks that the README shows line and runs it with args (line
	// with its placeholders filled in).
	run := func(line string, args ...string) result {
		t.Helper()
		require.Contains(t, doc, line, "the README shows this command")
		if args == nil {
			args = strings.Fields(strings.TrimPrefix(line, "idemctl "))
		}
		r := idemctl(t, s.db, env, args...)
		require.Equal(t, 0, r.code, "%s: %s", line, r.stderr)
		return r
	}
	count := func(r result, pattern string) {
		t.Helper()
		require.Regexp(t, regexp.MustCompile(pattern), r.stdout)
	}

	// Alerts: "a check that runs idemctl stats -json".
	r := run("idemctl stats -json")
	require.Equal(t, 1, decode[statsJSON](t, r).DeadLetters)

	// Retention: what a prune would delete, deleting nothing.
	r = run("idemctl prune -dry-run")
	count(r, `^would delete \d+ rows? \(dry run: nothing deleted\):\n`)

	// Events wait: what waits, and why.
	r = run("idemctl list -state pending,failed")
	count(r, `(?m)^evt_failed_1\s.*\sfailed\s.*downstream refused the charge`)
	count(r, `(?m)^evt_pending_1\s.*\spending\s`)
	require.NotContains(t, r.stdout, "evt_dead_1")

	// A handler has been failing for an hour.
	r = run("idemctl stats")
	count(r, `(?m)^failed\s+1\s+0$`)
	count(r, `(?m)^oldest pending: \S+ \(\d+s ago\)$`)
	r = run("idemctl list -state failed -since 2h")
	count(r, `(?m)^evt_failed_1 .*downstream refused the charge`)
	r = run("idemctl redrive -state failed -since 2h -dry-run")
	count(r, `^would redrive 1 event `)
	require.Equal(t, idempotency.InboxFailed, s.lookup(t, "evt_failed_1").State)
	r = run("idemctl redrive -state failed -since 2h", "redrive", "-state", "failed", "-since", "2h")
	count(r, `^redrove 1 event:`)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_failed_1").State)

	// Where to look, and an event is not applied: what the ledger
	// recorded of an object.
	for _, line := range []string{"idemctl ledger -object cus_... -since 1h", "idemctl ledger -object cus_... -since 2h"} {
		r = run(line, "ledger", "-object", "in_1", "-since", strings.Fields(line)[5])
		count(r, `(?m)^evt_paid_1\s+invoice\.paid\s+in_1\s+-\s+processed\s`)
	}

	// Stripe disabled the endpoint: recover from the start of the trouble.
	since := time.Now().UTC().Add(-48 * time.Hour).Format(time.DateOnly)
	require.Contains(t, doc, "STRIPE_SECRET_KEY=rk_... idemctl recover -since 2026-11-20 -types <the handled types, comma-separated> -checkpoint outage-1120")
	r = run("idemctl recover", "recover", "-since", since, "-types", "invoice.paid", "-checkpoint", "outage-1120", "-api-base", srv.URL)
	count(r, `(?m)^duplicate\s+1\s`)

	// Deliveries are refused: once the secret is fixed, recover what
	// was refused instead of waiting for Stripe's retries.
	require.Contains(t, doc, "STRIPE_SECRET_KEY=rk_... idemctl recover -since <the first refusal> -types <the handled types> -checkpoint refused-1206")
	r = run("idemctl recover", "recover", "-since", since, "-types", "invoice.paid", "-checkpoint", "refused-1206", "-api-base", srv.URL)
	count(r, `(?m)^duplicate\s+1\s`)

	// The database was restored from a backup: recover from 3 days before
	// it, under a checkpoint of its own; see what the inbox holds now.
	require.Contains(t, doc, "STRIPE_SECRET_KEY=rk_... idemctl recover -since <the backup's time less 3 days> -types <the handled types> -checkpoint restore-1120")
	r = run("idemctl recover", "recover", "-since", since, "-types", "invoice.paid", "-checkpoint", "restore-1120", "-api-base", srv.URL)
	count(r, `(?m)^duplicate\s+1\s`)
	r = run("idemctl list -state dead_letter,failed")
	count(r, `(?m)^evt_dead_1\s.*\sdead_letter\s`)

	// A bug dead-lettered a thousand events.
	require.Contains(t, doc, "idemctl list -state dead_letter -type charge.failed -since 8d`")
	r = run("idemctl list -state dead_letter -type charge.failed -since 8d",
		"list", "-state", "dead_letter", "-type", "charge.failed", "-since", "8d")
	count(r, `(?m)^evt_dead_1 .*downstream refused the charge`)
	r = run("idemctl show evt_...", "show", "evt_dead_1")
	count(r, `(?m)^  last error\s+.*downstream refused the charge`)
	r = run("idemctl redrive -type charge.failed -since 8d -dry-run")
	count(r, `^would redrive 1 event `)
	r = run("idemctl redrive -type charge.failed -since 8d", "redrive", "-type", "charge.failed", "-since", "8d")
	count(r, `^redrove 1 event:`)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_dead_1").State)

	// A connected account reconnected: its dead letters and its failed
	// events, no other account's (the seed's evt_dead_1 is pending now,
	// and is not).
	s.deliverRaw(t, accountEventPayload(t, "evt_conn_dead", "charge.failed", "ch_conn", "acct_1Conn", time.Now().Unix()))
	s.work(t, s.dead)
	s.deliverRaw(t, accountEventPayload(t, "evt_conn_failed", "charge.failed", "ch_conn_2", "acct_1Conn", time.Now().Unix()))
	s.work(t, s.inbox)
	require.Equal(t, idempotency.InboxFailed, s.lookup(t, "evt_conn_failed").State)
	s.deliver(t, "evt_dead_9", "charge.failed", "ch_dead_9")
	s.work(t, s.dead)
	r = run("idemctl list -state dead_letter,failed -account acct_... -since 8d", "list", "-state", "dead_letter,failed", "-account", "acct_1Conn", "-since", "8d")
	count(r, `(?m)^evt_conn_dead `)
	count(r, `(?m)^evt_conn_failed `)
	require.NotContains(t, r.stdout, "evt_dead_9")
	require.NotContains(t, r.stdout, "evt_failed_1", "the platform's own")
	r = run("idemctl redrive -account acct_... -state dead_letter,failed -since 8d -dry-run", "redrive", "-account", "acct_1Conn", "-state", "dead_letter,failed", "-since", "8d", "-dry-run")
	count(r, `^would redrive 2 events `)
	r = run("idemctl redrive -account acct_...", "redrive", "-account", "acct_1Conn", "-state", "dead_letter,failed", "-since", "8d")
	count(r, `^redrove 2 events:`)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_conn_dead").State)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_conn_failed").State)
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_9").State, "the platform's own")

	// A deploy applied events wrongly: forget them, recover them again.
	r = run("idemctl forget evt_... evt_...", "forget", "evt_paid_1", "evt_paid_2")
	count(r, `(?m)^evt_paid_1: forgotten`)
	count(r, `(?m)^evt_paid_2: forgotten`)
	r = run("idemctl recover", "recover", "-since", since, "-types", "invoice.paid", "-checkpoint", "after-forget", "-api-base", srv.URL)
	count(r, `(?m)^queued\s+1\s`)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_paid_1").State)

	// An event is not applied: it waits behind a failed event of its
	// object.
	s.deliver(t, "evt_fails_9", "charge.failed", "ch_9")
	s.work(t, s.inbox)
	s.deliver(t, "evt_waits_9", "invoice.paid", "ch_9")
	r = run("idemctl show evt_...", "show", "evt_waits_9")
	count(r, `(?m)^  held by\s+evt_fails_9 \(failed, attempt 1, `)
	r = run("idemctl redrive -id evt_... -state failed", "redrive", "-id", "evt_fails_9", "-state", "failed")
	count(r, `^redrove 1 event:`)
	r = run("idemctl show evt_...", "show", "evt_fails_9")
	count(r, `(?m)^  held by\s+- \(nothing: due at its next attempt\)$`)

	// Operator CLI.
	for _, line := range []string{
		"idemctl stats",
		"idemctl list -state dead_letter -since 2d",
		"idemctl redrive -type invoice.paid -dry-run",
		"idemctl prune -payloads 3d -dry-run",
		"idemctl prune -payloads 3d",
	} {
		run(line)
	}
	run("idemctl show evt_1Nq... # show -payload evt_1Nq... to see the body", "show", "-payload", "evt_pending_1")
	require.Contains(t, doc, "STRIPE_SECRET_KEY=rk_... go run github.com/seed-a84bb619/idempotency/cmd/idemctl recover -since 3d -types invoice.paid,invoice.payment_succeeded -checkpoint ops")
	run("idemctl recover -since 3d -types invoice.paid,invoice.payment_succeeded -checkpoint ops",
		"recover", "-since", "3d", "-types", "invoice.paid,invoice.payment_succeeded", "-checkpoint", "ops", "-api-base", srv.URL)

	// An event is not applied, and neither the inbox nor the ledger has
	// it: show says why that may be, as the runbook does. A replica
	// without a handler for its type answered it ignored and, without
	// RecordIgnored, stored nothing; an event applied longer ago than the
	// ids' window was pruned (last: the prune's clock runs 46 days ahead).
	require.Contains(t, doc, "Neither the inbox nor the ledger has it (`show` exits 3, and says why that may be)")
	require.Contains(t, doc, "answered it `ignored` (Stripe shows it delivered) and stored nothing")
	require.Contains(t, doc, "applied longer ago than the ids' window (`Retention.EventIDs`, 45 days) and pruned since")
	unrecorded, err := s.inbox.Handler(idempotency.Config{Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	unhandled := eventPayload(t, "evt_unhandled_1", "customer.created", "cus_1", time.Now().Unix())
	require.Equal(t, idempotency.OutcomeIgnored, idempotencytest.Deliver(unrecorded, unhandled, secret).Outcome)
	r = idemctl(t, s.db, env, "show", "evt_unhandled_1")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Contains(t, r.stderr, "answered ignored (a type without a handler, stored only with Config.RecordIgnored)")
	s.deliver(t, "evt_paid_old", "invoice.paid", "in_old")
	s.work(t, s.inbox)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_paid_old").State)
	_, err = s.store.Prune(t.Context(), idempotency.Retention{Now: func() time.Time { return time.Now().Add(46 * 24 * time.Hour) }})
	require.NoError(t, err)
	r = idemctl(t, s.db, env, "show", "evt_paid_old")
	require.Equal(t, exitNotFound, r.code, r.stderr)
	require.Contains(t, r.stderr, "its claim was pruned (kept Retention.EventIDs, 45 days by default)")
}
