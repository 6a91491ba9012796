package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// fixtureEnvelope is what a fixture's bytes say of the columns a delivery
// stores, read with encoding/json: the reference the stores are held to.
type fixtureEnvelope struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Created    int64  `json:"created"`
	Account    string `json:"account"`
	Livemode   bool   `json:"livemode"`
	APIVersion string `json:"api_version"`
	Data       struct {
		Object struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"object"`
	} `json:"data"`
}

// allFixtures returns every event of testdata/stripe-events, by file name
// without .json.
func allFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "stripe-events", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), 20)
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = b
	}
	return out
}

func parseFixture(t *testing.T, b []byte) fixtureEnvelope {
	t.Helper()
	var env fixtureEnvelope
	require.NoError(t, json.Unmarshal(b, &env))
	return env
}

// decodedObject is what a handler was given: data.object's id and object,
// read from the decoded value's ID and Object fields (stripe-go's), or
// from the raw bytes for an untyped handler.
type decodedObject struct {
	id, object string
	raw        json.RawMessage
}

// payloadRecorder keeps what each event's handler was given, by event id.
type payloadRecorder struct {
	mu  sync.Mutex
	got map[string]decodedObject
}

func (r *payloadRecorder) put(eventID string, d decodedObject) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[string]decodedObject{}
	}
	r.got[eventID] = d
}

func (r *payloadRecorder) get(eventID string) (decodedObject, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.got[eventID]
	return d, ok
}

// onTyped registers eventType with the stripe-go type T, and records the
// decoded value's ID and Object fields.
func onTyped[T any](hs *idempotency.Handlers, eventType string, rec *payloadRecorder) {
	idempotency.On(hs, eventType, func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[T]) error {
		v := reflect.ValueOf(ev.Object)
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return fmt.Errorf("%s decoded into a nil %T", ev.ID, ev.Object)
			}
			v = v.Elem()
		}
		var d decodedObject
		if f := v.FieldByName("ID"); f.IsValid() {
			d.id = f.String()
		}
		if f := v.FieldByName("Object"); f.IsValid() {
			d.object = f.String()
		}
		rec.put(ev.ID, d)
		return nil
	})
}

// onRaw registers eventType untyped: data.object as json.RawMessage.
func onRaw(hs *idempotency.Handlers, eventType string, rec *payloadRecorder) {
	idempotency.On(hs, eventType, func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[json.RawMessage]) error {
		rec.put(ev.ID, decodedObject{raw: append(json.RawMessage(nil), ev.Object...)})
		return nil
	})
}

// typedRegistrations registers every fixture's event type with the
// stripe-go type of its data.object.
func typedRegistrations(hs *idempotency.Handlers, rec *payloadRecorder) {
	onTyped[*stripe.Account](hs, "account.updated", rec)
	onTyped[*stripe.Application](hs, "account.application.authorized", rec)
	onTyped[*stripe.Balance](hs, "balance.available", rec)
	onTyped[*stripe.Capability](hs, "capability.updated", rec)
	onTyped[*stripe.Charge](hs, "charge.refunded", rec)
	onTyped[*stripe.CheckoutSession](hs, "checkout.session.completed", rec)
	onTyped[*stripe.Customer](hs, "customer.deleted", rec)
	onTyped[*stripe.Discount](hs, "customer.discount.created", rec)
	onTyped[*stripe.Discount](hs, "customer.discount.deleted", rec)
	onTyped[*stripe.Subscription](hs, "customer.subscription.created", rec)
	onTyped[*stripe.Subscription](hs, "customer.subscription.deleted", rec)
	onTyped[*stripe.Subscription](hs, "customer.subscription.trial_will_end", rec)
	onTyped[*stripe.Subscription](hs, "customer.subscription.updated", rec)
	onTyped[*stripe.InvoiceItem](hs, "invoiceitem.created", rec)
	onTyped[*stripe.Invoice](hs, "invoice.paid", rec)
	onTyped[*stripe.Invoice](hs, "invoice.payment_failed", rec)
	onTyped[*stripe.Invoice](hs, "invoice.payment_succeeded", rec)
	onTyped[*stripe.PaymentIntent](hs, "payment_intent.succeeded", rec)
	onTyped[*stripe.Payout](hs, "payout.paid", rec)
	onTyped[*stripe.TestHelpersTestClock](hs, "test_helpers.test_clock.ready", rec)
}

// Every fixture, of every event type, goes through the synchronous Handler
// and through the inbox's Handler and workers, on both stores, with its
// handler registered with the stripe-go type of its data.object and
// untyped (json.RawMessage): each is answered, stores the envelope's
// columns as the fixture has them (data.object.id empty for an object with
// no id, such as balance.available's balance), and its handler is given
// data.object decoded.
func TestEveryFixtureTypeBothModes(t *testing.T) {
	t.Parallel()
	fixtures := allFixtures(t)
	names := make([]string, 0, len(fixtures))
	for n := range fixtures {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, typed := range []bool{true, false} {
		for storeName, store := range bothStores(t) {
			t.Run(fmt.Sprintf("%s/typed=%v", storeName, typed), func(t *testing.T) {
				t.Parallel()
				rec := &payloadRecorder{}
				hs := idempotency.NewHandlers()
				if typed {
					typedRegistrations(hs, rec)
				} else {
					types := map[string]bool{}
					for _, n := range names {
						types[parseFixture(t, fixtures[n]).Type] = true
					}
					for typ := range types {
						onRaw(hs, typ, rec)
					}
				}
				clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
				syncH, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger(), Now: clock.Now})
				require.NoError(t, err)
				inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
				require.NoError(t, err)
				inboxH, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
				require.NoError(t, err)
				lookup := store.(idempotencytest.LookupStore)

				// checkDecoded holds what the handler of the event in b was
				// given to the fixture's data.object.
				checkDecoded := func(t *testing.T, name string, env fixtureEnvelope, b []byte) {
					t.Helper()
					d, ok := rec.get(env.ID)
					require.True(t, ok, "%s: the handler did not run", name)
					if typed {
						require.Equal(t, env.Data.Object.ID, d.id, name)
						require.Equal(t, env.Data.Object.Object, d.object, name)
						return
					}
					var whole struct {
						Data struct {
							Object json.RawMessage `json:"object"`
						} `json:"data"`
					}
					require.NoError(t, json.Unmarshal(b, &whole))
					require.JSONEq(t, string(whole.Data.Object), string(d.raw), name)
				}

				// Synchronously: each fixture is processed, and the ledger
				// has its columns.
				for _, name := range names {
					b := fixtures[name]
					env := parseFixture(t, b)
					a := idempotencytest.Deliver(syncH, b, testSecret)
					require.Equal(t, http.StatusOK, a.Status, "%s: %s", name, a.Body)
					require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, name)
					r, found, err := lookup.LookupEvent(t.Context(), env.ID)
					require.NoError(t, err)
					require.True(t, found, name)
					require.Equal(t, idempotency.EventRecord{
						EventID: env.ID, EventType: env.Type, ObjectID: env.Data.Object.ID,
						Account: env.Account, Livemode: env.Livemode, Outcome: idempotency.OutcomeProcessed,
						ReceivedAt: r.ReceivedAt, ProcessedAt: r.ProcessedAt,
					}, r, name)
					checkDecoded(t, name, env, b)
				}

				// Through the inbox, under other event ids: queued with every
				// envelope column, then applied by WorkDue.
				rec.mu.Lock()
				rec.got = nil
				rec.mu.Unlock()
				sent := map[string]fixtureEnvelope{}
				bodies := map[string][]byte{}
				for _, name := range names {
					b := bytes.Replace(fixtures[name], []byte(`"id": "evt_`), []byte(`"id": "evt_inbox_`), 1)
					env := parseFixture(t, b)
					require.True(t, strings.HasPrefix(env.ID, "evt_inbox_"), name)
					a := idempotencytest.Deliver(inboxH, b, testSecret)
					require.Equal(t, idempotency.OutcomeQueued, a.Outcome, "%s: %s", name, a.Body)
					got, found, err := inbox.Lookup(t.Context(), env.ID)
					require.NoError(t, err)
					require.True(t, found, name)
					require.Equal(t, env.Type, got.EventType, name)
					require.Equal(t, env.Data.Object.ID, got.ObjectID, name)
					require.Equal(t, env.Account, got.Account, name)
					require.Equal(t, env.Livemode, got.Livemode, name)
					require.Equal(t, env.APIVersion, got.APIVersion, name)
					require.True(t, time.Unix(env.Created, 0).Equal(got.Created), "%s: created %s", name, got.Created)
					require.Equal(t, idempotency.InboxPending, got.State, name)
					sent[name], bodies[name] = env, b
				}
				// Events of one object wait for each other: drain in rounds.
				for range len(names) {
					n, err := inbox.WorkDue(t.Context())
					require.NoError(t, err)
					if n == 0 {
						break
					}
				}
				for _, name := range names {
					env := sent[name]
					got, _, err := inbox.Lookup(t.Context(), env.ID)
					require.NoError(t, err)
					require.Equal(t, idempotency.InboxProcessed, got.State, "%s: %s", name, got.LastError)
					require.Equal(t, 1, got.Attempt, name)
					checkDecoded(t, name, env, bodies[name])
				}
			})
		}
	}
}

// queueFixtures is an inbox on store with hs, on a fake clock at
// 2026-03-01 12:00 UTC, to which the named fixtures are delivered and
// queued, in that order.
func queueFixtures(t *testing.T, store idempotency.Store, hs *idempotency.Handlers, names ...string) *idempotency.Inbox {
	t.Helper()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Now: clock.Now, Logger: discardLogger()})
	require.NoError(t, err)
	h, err := inbox.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	for _, name := range names {
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, fixture(t, name), testSecret).Outcome, name)
	}
	return inbox
}
