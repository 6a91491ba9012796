package idempotency_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// Misuse is refused when the handler is built, never at request time.

func TestNewHandlerRefusesNilStores(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	cfg := idempotency.Config{Secrets: []string{testSecret}}
	for _, store := range []idempotency.Store{nil, (*idempotency.MemoryStore)(nil), (*idempotency.PgxStore)(nil)} {
		_, err := idempotency.NewHandler(store, hs, cfg)
		require.ErrorContains(t, err, "nil Store", "%T", store)
	}
}

// The zero MemoryStore is an empty store: it processes, remembers and
// makes copies wait like one from NewMemoryStore.
func TestZeroMemoryStoreIsUsable(t *testing.T) {
	t.Parallel()
	var runs int
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		runs++ // the copies wait for one another, so this is not racy
		_, err := tx.Guard(ctx, "invoice", ev.Object.ID)
		return err
	})
	h, err := idempotency.NewHandler(&idempotency.MemoryStore{}, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(t, err)
	answers := idempotencytest.Replay(h, eventPayload(t, "invoice.paid", "evt_zero_store", paid), testSecret, 20)
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	require.Equal(t, 19, answers.Count(idempotency.OutcomeDuplicate))
	require.Equal(t, 1, runs)
}

func TestNewHandlerRefusesAPIKeysAsSecrets(t *testing.T) {
	t.Parallel()
	for _, key := range []string{
		"sk_live_51HxY0123456789abcdef", "sk_test_51HxY0123456789abcdef",
		"rk_live_51HxY0123456789abcdef", "rk_test_51HxY0123456789abcdef",
		"pk_live_51HxY0123456789abcdef", "pk_test_51HxY0123456789abcdef",
	} {
		_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
			idempotency.Config{Secrets: []string{testSecret, key}})
		require.ErrorContains(t, err, "Config.Secrets[1]")
		require.ErrorContains(t, err, "whsec_", "the error says what a signing secret looks like")
		require.NotContains(t, err.Error(), key, "the error never quotes the key")
	}
}

func TestConfigAPIVersion(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"basil", "2025-08-27", "2025-13-01.basil", "2025-08-27.", "2025-08-27.basil extra",
		stripe.APIVersion + "\n", stripe.APIVersion + "\r\n", "\n" + stripe.APIVersion, stripe.APIVersion + "\x00", stripe.APIVersion + "\xff",
		stripe.APIVersion + "\u00a0", "2025-08-27.basil.preview"} {
		_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
			idempotency.Config{Secrets: []string{testSecret}, APIVersion: bad})
		require.ErrorContains(t, err, "Config.APIVersion", bad)
	}

	// An account on the clover train whose handlers follow it: clover events
	// pass strict mode without a warning, and basil ones are the mismatch.
	b := newBench(t, idempotency.Config{APIVersion: "2025-09-30.clover", StrictAPIVersion: true}, nil)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", fixture(t, "invoice.paid.api_version-clover"), testSecret)), 200, `{"outcome":"skipped"}`)
	require.Equal(t, idempotency.OutcomeSkipped, b.lastResult(t).Outcome)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", fixture(t, "invoice.paid"), testSecret)), 400, `{"error":"invalid_event"}`)
	err := b.lastResult(t).Err
	require.ErrorIs(t, err, idempotency.ErrAPIVersionMismatch)
	require.ErrorContains(t, err, "2025-09-30.clover")
	require.NotContains(t, b.logs.String(), "best-effort", "no warning for the configured train")
	// The train is compared, not the version: another clover version passes.
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", withAPIVersion(t, "evt_later_clover", "2025-10-29.clover"), testSecret)),
		200, `{"outcome":"processed"}`)
	// A type no handler decodes is not refused: without a handler, a basil
	// event is answered ignored, and not warned of.
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", fixture(t, "checkout.session.completed"), testSecret)),
		200, `{"outcome":"ignored"}`)
	require.NotContains(t, b.logs.String(), "best-effort", "no warning for an event no handler decodes")

	// Lenient, the stripe-go default: one warning naming both versions.
	b = newBench(t, idempotency.Config{}, nil)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", fixture(t, "invoice.paid.api_version-clover"), testSecret)), 200, `{"outcome":"skipped"}`)
	require.Contains(t, b.logs.String(), `"api_version":"2025-09-30.clover"`)
	require.Contains(t, b.logs.String(), `"config_api_version":"`+stripe.APIVersion+`"`)
}

// withField returns the invoice.paid payload with one envelope field (a
// JSON path of two keys at most) set to value.
func withField(t *testing.T, eventID string, set func(ev, obj map[string]any)) []byte {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(invoicePayload(t, eventID, "in_text", "acct_42"), &ev))
	set(ev, ev["data"].(map[string]any)["object"].(map[string]any))
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

// An id, type, object id, account, API version or created time PostgreSQL
// cannot store is refused with 400 on both stores and in both modes,
// instead of a 500 (synchronous) or a 503 (inbox) on every retry on
// PostgreSQL and a success on the memory store.
func TestHandlerRefusesEnvelopeNoStoreKeeps(t *testing.T) {
	t.Parallel()
	cases := map[string]func(ev, obj map[string]any){
		"event id":   func(ev, _ map[string]any) { ev["id"] = "evt_nul\x00" },
		"event type": func(ev, _ map[string]any) { ev["type"] = "invoice.paid\x00" },
		"object id":  func(_, obj map[string]any) { obj["id"] = "in_\x00nul" },
		"account":    func(ev, _ map[string]any) { ev["account"] = "acct_\x00" },
		// Longer than a PostgreSQL index entry holds (2704 bytes), and not
		// compressible.
		"long event id":  func(ev, _ map[string]any) { ev["id"] = "evt_" + strings.Repeat("x", 4000) },
		"long object id": func(_, obj map[string]any) { obj["id"] = "in_" + strings.Repeat("x", 4000) },
		"long type":      func(ev, _ map[string]any) { ev["type"] = "invoice." + strings.Repeat("x", 4000) },
		"api version":    func(ev, _ map[string]any) { ev["api_version"] = stripe.APIVersion + "\x00" },
		"created late":   func(ev, _ map[string]any) { ev["created"] = int64(253402300800) }, // year 10000
		"created early": func(ev, _ map[string]any) {
			ev["created"] = int64(-62135596801) // 1 second before the year 1
		},
	}
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var runs int
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				runs++
				return nil
			})
			inbox, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: discardLogger()})
			require.NoError(t, err)
			var results []idempotency.Result
			cfg := idempotency.Config{
				Secrets: []string{testSecret}, Logger: discardLogger(),
				OnResult: func(r idempotency.Result) { results = append(results, r) },
			}
			syncHandler, err := idempotency.NewHandler(store, hs, cfg)
			require.NoError(t, err)
			inboxHandler, err := inbox.Handler(cfg)
			require.NoError(t, err)
			for mode, h := range map[string]http.Handler{"synchronous": syncHandler, "inbox": inboxHandler} {
				for field, set := range cases {
					payload := withField(t, "evt_text_"+strings.ReplaceAll(field, " ", "_"), set)
					a := idempotencytest.Deliver(h, payload, testSecret)
					require.Equal(t, 400, a.Status, "%s: %s", mode, field)
					require.JSONEq(t, `{"error":"invalid_event"}`, a.Body, "%s: %s", mode, field)
					require.ErrorIs(t, results[len(results)-1].Err, idempotency.ErrMalformedEvent, "%s: %s", mode, field)
				}
			}
			require.Zero(t, runs)
			list, err := store.(interface {
				ListEvents(context.Context, idempotency.EventFilter) ([]idempotency.EventRecord, error)
			}).ListEvents(t.Context(), idempotency.EventFilter{})
			require.NoError(t, err)
			require.Empty(t, list, "nothing stored")
			stored, err := inbox.List(t.Context(), idempotency.InboxFilter{})
			require.NoError(t, err)
			require.Empty(t, stored, "nothing stored in the inbox")
		})
	}
}

// An AfterCommit func that panics cannot undo the commit: the delivery is
// answered 200 processed, Result.Err stays nil, and the panic is in the
// result and in an Error log line with its stack.
func TestHandlerAfterCommitPanicIsReportedNotAnError(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
			tx.AfterCommit(func(context.Context) { panic("mailer down") })
			return b.creditInvoice(ctx, tx, ev)
		})
	})
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_ac_panic", paid), testSecret)),
		200, `{"outcome":"processed"}`)
	res := b.lastResult(t)
	require.Equal(t, idempotency.OutcomeProcessed, res.Outcome)
	require.NoError(t, res.Err)
	require.Len(t, res.AfterCommitPanics, 1)
	require.Equal(t, "mailer down", res.AfterCommitPanics[0].Value)
	require.Equal(t, 100, b.credits.get(t, "acct_42"), "the commit stands")
	logs := b.logs.String()
	require.Contains(t, logs, `"level":"ERROR"`)
	require.Contains(t, logs, `"after_commit_panic":"mailer down"`)
	require.Contains(t, logs, "misuse_test.go", "the log carries the panic's stack")
}

// An event whose data.object has no id (balance.available) handled by an
// event type that owns an action keyed by the object id: the action's
// early guard has no key to claim, and the event is processed.
func TestHandlerObjectWithoutIDAndEarlyGuard(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"id":"evt_balance_1","object":"event","type":"balance.available","api_version":"` + stripe.APIVersion + `",
		"created":1756742403,"livemode":false,"data":{"object":{"object":"balance","livemode":false,
		"available":[{"amount":2217713,"currency":"usd","source_types":{"card":2217713}}],
		"pending":[{"amount":0,"currency":"usd","source_types":{"card":0}}]}}}`)
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			hs := idempotency.NewHandlers()
			// No Owners: every event type with a handler owns it, balance.available too.
			notify := idempotency.NewAction(hs, idempotency.ActionSpec{Name: "notify", Key: "object id", KeyIsObjectID: true},
				func(context.Context, idempotency.Tx, string, struct{}) error { return nil })
			var available int64
			idempotency.On(hs, "balance.available", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Balance]) error {
				available = ev.Object.Available[0].Amount
				_, err := notify.Do(ctx, tx, "balance:"+ev.ID, struct{}{})
				return err
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, payload, testSecret)
			require.Equal(t, 200, a.Status, a.Body)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome)
			require.EqualValues(t, 2217713, available)
		})
	}
}

// bothStores returns a memory store and a migrated PgxStore in a schema of
// the test's own, by name.
func bothStores(t *testing.T) map[string]idempotency.Store {
	t.Helper()
	return map[string]idempotency.Store{
		"memory":   idempotency.NewMemoryStore(),
		"postgres": newPgBackend(t, idempotency.PgxConfig{}).store,
	}
}

// prunerStore is a Store that prunes, as both of the package's are.
type prunerStore interface {
	idempotency.Store
	idempotency.Pruner
}

// bothPruners is bothStores, for tests of Prune.
func bothPruners(t *testing.T) map[string]prunerStore {
	t.Helper()
	return map[string]prunerStore{
		"memory":   idempotency.NewMemoryStore(),
		"postgres": newPgBackend(t, idempotency.PgxConfig{}).store,
	}
}

// TestNewPgxStoreRefusesATypedNilDB: a nil *pgxpool.Pool (the result of a
// pgxpool.New whose error was ignored), *pgx.Conn or pgx.Tx is refused
// when the store is made, as an untyped nil is. (It was taken, and the
// store panicked at its first query.)
func TestNewPgxStoreRefusesATypedNilDB(t *testing.T) {
	t.Parallel()
	for _, db := range []idempotency.PgxBeginner{nil, (*pgxpool.Pool)(nil), (*pgx.Conn)(nil)} {
		_, err := idempotency.NewPgxStore(db, idempotency.PgxConfig{})
		require.ErrorContains(t, err, "NewPgxStore: nil db", "%T", db)
	}
}
