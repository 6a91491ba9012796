package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

func TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }

const secret = "whsec_idemctl_test"

// customerEmail is in every seeded payload: output shows it only with
// show -payload.
const customerEmail = "jenny.rosen@example.com"

// result is what one idemctl run wrote and returned.
type result struct {
	code           int
	stdout, stderr string
}

// idemctl runs the CLI in-process against db's schema, with env as the
// environment (DATABASE_URL is db's URL unless env sets it).
func idemctl(t testing.TB, db *idempotencytest.Database, env map[string]string, args ...string) result {
	t.Helper()
	return idemctlCtx(t.Context(), db, env, args...)
}

func idemctlCtx(ctx context.Context, db *idempotencytest.Database, env map[string]string, args ...string) result {
	return idemctlAt(ctx, time.Now, db, env, args...)
}

// idemctlSkewed is idemctl on a machine whose clock is skew ahead of the
// database's (behind when negative).
func idemctlSkewed(t testing.TB, skew time.Duration, db *idempotencytest.Database, env map[string]string, args ...string) result {
	t.Helper()
	return idemctlAt(t.Context(), func() time.Time { return time.Now().Add(skew) }, db, env, args...)
}

// idemctlAt is idemctlCtx on a machine whose clock is now.
func idemctlAt(ctx context.Context, now func() time.Time, db *idempotencytest.Database, env map[string]string, args ...string) result {
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "DATABASE_URL" && db != nil {
			return db.URL
		}
		return ""
	}
	if db != nil {
		args = append([]string{"-schema", db.Schema}, args...)
	}
	var stdout, stderr bytes.Buffer
	code := runAt(ctx, args, &stdout, &stderr, getenv, now)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// service is a service's inbox on a test schema, for seeding the store
// through the library: invoice.paid succeeds and enqueues a send-receipt
// task, charge.failed always fails.
type service struct {
	db    *idempotencytest.Database
	store *idempotency.PgxStore
	inbox *idempotency.Inbox // MaxAttempts 2: a failure leaves the event failed
	dead  *idempotency.Inbox // MaxAttempts 1: a failure dead-letters it
	hook  *idempotency.Handler
	clock func() time.Time
}

func newService(t testing.TB, clock func() time.Time) *service {
	t.Helper()
	return newServiceOn(t, idempotencytest.Postgres(t), clock)
}

// newReplica is another process of s's service, on the same tables.
func newReplica(t testing.TB, s *service) *service {
	t.Helper()
	return newServiceOn(t, s.db, s.clock)
}

func newServiceOn(t testing.TB, db *idempotencytest.Database, clock func() time.Time) *service {
	t.Helper()
	store := db.NewStore(t, idempotency.PgxConfig{})
	hs := idempotency.NewHandlers()
	receipt := idempotency.NewTask(hs, "send-receipt", func(context.Context, idempotency.TaskRun[string]) error { return nil })
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
		if err != nil || !first {
			return err
		}
		_, err = receipt.Enqueue(ctx, tx, ev.Object.ID, customerEmail)
		return err
	})
	idempotency.On(hs, "charge.failed", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Charge]) error {
		return errors.New("downstream refused the charge")
	})
	if clock == nil {
		clock = time.Now
	}
	quiet := slog.New(slog.DiscardHandler)
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{MaxAttempts: 2, Now: clock, Logger: quiet})
	require.NoError(t, err)
	dead, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{MaxAttempts: 1, Now: clock, Logger: quiet})
	require.NoError(t, err)
	hook, err := inbox.Handler(idempotency.Config{Secrets: []string{secret}, RecordIgnored: true, Logger: quiet})
	require.NoError(t, err)
	return &service{db: db, store: store, inbox: inbox, dead: dead, hook: hook, clock: clock}
}

// deliver signs and delivers an event of typ about object, and returns
// the answer's outcome.
func (s *service) deliver(t testing.TB, id, typ, object string) idempotency.Outcome {
	t.Helper()
	return s.deliverRaw(t, eventPayload(t, id, typ, object, s.clock().Unix()))
}

// deliverRaw signs and delivers the event raw, and returns the answer's
// outcome.
func (s *service) deliverRaw(t testing.TB, raw []byte) idempotency.Outcome {
	t.Helper()
	a := idempotencytest.Deliver(s.hook, raw, secret)
	require.Equal(t, 200, a.Status, a.Body)
	return a.Outcome
}

// work applies what is due with the given inbox.
func (s *service) work(t testing.TB, in *idempotency.Inbox) {
	t.Helper()
	_, err := in.WorkDue(t.Context())
	require.NoError(t, err)
}

// lookup returns id's inbox record, failing the test when there is none.
func (s *service) lookup(t testing.TB, id string) idempotency.InboxRecord {
	t.Helper()
	rec, ok, err := s.inbox.Lookup(t.Context(), id)
	require.NoError(t, err)
	require.True(t, ok, "%s not in the inbox", id)
	return rec
}

// seed stores two processed events and their processed tasks, a dead
// letter, a failed event and a pending one, all received now.
func (s *service) seed(t testing.TB) {
	t.Helper()
	s.deliver(t, "evt_dead_1", "charge.failed", "ch_1")
	s.work(t, s.dead)
	s.deliver(t, "evt_paid_1", "invoice.paid", "in_1")
	s.deliver(t, "evt_paid_2", "invoice.paid", "in_2")
	s.deliver(t, "evt_failed_1", "charge.failed", "ch_2")
	s.work(t, s.inbox)
	s.deliver(t, "evt_pending_1", "invoice.paid", "in_3")
	require.Equal(t, idempotency.InboxDeadLetter, s.lookup(t, "evt_dead_1").State)
	require.Equal(t, idempotency.InboxFailed, s.lookup(t, "evt_failed_1").State)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "evt_paid_1").State)
	require.Equal(t, idempotency.InboxPending, s.lookup(t, "evt_pending_1").State)
	require.Equal(t, idempotency.InboxProcessed, s.lookup(t, "task:send-receipt:in_1").State)
}

// eventPayload is a snapshot event as Stripe sends it, with a customer's
// email in it.
func eventPayload(t testing.TB, id, typ, object string, created int64) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "api_version": stripe.APIVersion, "created": created,
		"livemode": false, "pending_webhooks": 1, "type": typ,
		"request": map[string]any{"id": nil, "idempotency_key": nil},
		"data": map[string]any{"object": map[string]any{
			"id": object, "object": strings.SplitN(typ, ".", 2)[0], "customer_email": customerEmail,
		}},
	})
	require.NoError(t, err)
	return b
}

// accountEventPayload is eventPayload of a connected account's event
// (account empty: the platform's own).
func accountEventPayload(t testing.TB, id, typ, object, account string, created int64) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(eventPayload(t, id, typ, object, created), &ev))
	ev["account"] = account
	raw, err := json.Marshal(ev)
	require.NoError(t, err)
	return raw
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// decode decodes a -json document, failing the test when stdout holds
// anything else.
func decode[T any](t testing.TB, r result) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v), r.stdout)
	_, err := dec.Token()
	require.ErrorIs(t, err, io.EOF, "one JSON document")
	return v
}
