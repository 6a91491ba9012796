package idempotencytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

const (
	meterErrorType = "v1.billing.meter.error_report_triggered"
	thinKey        = "sk_test_idempotencytest"
)

// onBothStores runs fn on a MemoryStore and on a PgxStore of a schema of
// its own, as parallel subtests.
func onBothStores(t *testing.T, fn func(t *testing.T, store idempotency.Store)) {
	t.Run("Memory", func(t *testing.T) {
		t.Parallel()
		fn(t, idempotency.NewMemoryStore())
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{}))
	})
}

// meterErrors registers a handler of meterErrorType on hs that keeps the
// events it committed, and fails each of its first fails runs.
func meterErrors(hs *idempotency.Handlers, fails int) func() []idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData] {
	var mu sync.Mutex
	var got []idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]
	runs := 0
	idempotency.On(hs, meterErrorType, func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
		mu.Lock()
		defer mu.Unlock()
		if runs++; runs <= fails {
			return errors.New("failing as told")
		}
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev)
		})
		return nil
	})
	return func() []idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData] {
		mu.Lock()
		defer mu.Unlock()
		return append([]idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData](nil), got...)
	}
}

// meterError is a thin event about meter mtr_1 of context, created at
// created.
func meterError(id, context string, created time.Time) idempotencytest.ThinEvent {
	return idempotencytest.ThinEvent{
		ID: id, Type: meterErrorType, Context: context, Created: created,
		RelatedObject: &stripe.RelatedObject{ID: "mtr_1", Type: "billing.meter", URL: "/v1/billing/meters/mtr_1"},
		Data: stripe.V1BillingMeterErrorReportTriggeredEventData{
			DeveloperMessageSummary: "There is 1 invalid event",
			Reason:                  &stripe.V1BillingMeterErrorReportTriggeredEventDataReason{ErrorCount: 1},
		},
	}
}

// TestV2EventsThinEvent: a notification V2Events.Add returns, delivered
// to a synchronous Handler whose StripeClient is NewStripeClient on the
// V2Events, is verified, fetched as its context and applied once, on both
// stores: the handler is given the event's id, type, context, created,
// related object and data, and Raw is the event the fake answered; the
// first delivery fetches the event, its duplicate and a type without a
// handler none.
func TestV2EventsThinEvent(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store idempotency.Store) {
		hs := idempotency.NewHandlers()
		received := meterErrors(hs, 0)
		api := idempotencytest.NewV2Events()
		h, err := idempotency.NewHandler(store, hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler),
			StripeClient: idempotencytest.NewStripeClient(thinKey, api),
		})
		require.NoError(t, err)

		created := time.Date(2026, 3, 1, 8, 0, 0, 123e6, time.UTC)
		contexts := []string{"acct_1", "", "acct_1/acct_2"}
		for i, context := range contexts {
			id := fmt.Sprint("evt_thin_", i)
			notification := api.Add(meterError(id, context, created))
			a := idempotencytest.Deliver(h, notification, testSecret)
			require.Equal(t, idempotency.OutcomeProcessed, a.Outcome, "context %q: %s", context, a.Body)
			a = idempotencytest.Deliver(h, notification, testSecret)
			require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome, "context %q: %s", context, a.Body)
			require.Equal(t, 1, api.Fetches(id), "context %q: the first delivery fetches the event, its duplicate does not", context)
		}

		evs := received()
		require.Len(t, evs, 3)
		for i, context := range contexts {
			ev := evs[i]
			require.Equal(t, []any{fmt.Sprint("evt_thin_", i), meterErrorType, context, "", "mtr_1"},
				[]any{ev.ID, ev.Type, ev.Account, ev.APIVersion, ev.ObjectID})
			require.Equal(t, created.Truncate(time.Second), ev.Created.UTC())
			require.Equal(t, "There is 1 invalid event", ev.Object.DeveloperMessageSummary)
			require.Equal(t, int64(1), ev.Object.Reason.ErrorCount)
			require.Nil(t, ev.Previous)
			var raw map[string]any
			require.NoError(t, json.Unmarshal(ev.Raw, &raw))
			require.Equal(t, "v2.core.event", raw["object"])
			require.Equal(t, "2026-03-01T08:00:00.123Z", raw["created"])
			require.Equal(t, map[string]any{"id": "mtr_1", "type": "billing.meter", "url": "/v1/billing/meters/mtr_1"}, raw["related_object"])
		}

		n := api.Add(idempotencytest.ThinEvent{ID: "evt_unhandled", Type: "v1.billing.meter.no_meter_found"})
		a := idempotencytest.Deliver(h, n, testSecret)
		require.Equal(t, idempotency.OutcomeIgnored, a.Outcome, a.Body)
		require.Zero(t, api.Fetches("evt_unhandled"), "a type without a handler is answered without a fetch")
	})
}

// TestV2EventsThinEventInbox: in inbox mode the Handler fetches the event
// from the V2Events as it stores it, and the workers apply what was
// stored: an attempt that fails is retried at its backoff, reached with
// the fake clock, without another fetch. On both stores.
func TestV2EventsThinEventInbox(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store idempotency.Store) {
		hs := idempotency.NewHandlers()
		received := meterErrors(hs, 1)
		clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC))
		in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
			Now: clock.Now, Logger: slog.New(slog.DiscardHandler), Backoff: func(int) time.Duration { return time.Minute },
		})
		require.NoError(t, err)
		api := idempotencytest.NewV2Events()
		h, err := in.Handler(idempotency.Config{
			Secrets: []string{testSecret}, Logger: slog.New(slog.DiscardHandler), Now: clock.Now,
			StripeClient: idempotencytest.NewStripeClient(thinKey, api),
		})
		require.NoError(t, err)

		before := time.Now().Truncate(time.Second)
		notification := api.Add(meterError("evt_thin_inbox", "acct_1", time.Time{}))
		a := idempotencytest.Deliver(h, notification, testSecret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
		require.Equal(t, 1, api.Fetches("evt_thin_inbox"), "fetched as it is stored")
		rec, found, err := in.Lookup(t.Context(), "evt_thin_inbox")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, []any{meterErrorType, "acct_1", "mtr_1"}, []any{rec.EventType, rec.Account, rec.ObjectID})
		require.WithinRange(t, rec.Created, before, time.Now(), "a zero Created is the time of Add")

		n, err := in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Empty(t, received(), "the first attempt failed")
		rec, _, err = in.Lookup(t.Context(), "evt_thin_inbox")
		require.NoError(t, err)
		clock.Set(rec.NextAttemptAt)
		n, err = in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)

		evs := received()
		require.Len(t, evs, 1)
		require.Equal(t, []any{"evt_thin_inbox", "acct_1", "mtr_1", "There is 1 invalid event"},
			[]any{evs[0].ID, evs[0].Account, evs[0].ObjectID, evs[0].Object.DeveloperMessageSummary})
		require.Equal(t, 1, api.Fetches("evt_thin_inbox"), "an attempt applies the stored event, without a fetch")
	})
}

// TestV2EventsAnswers: the fake answers an event only to a request made as
// its context, and 404 resource_missing otherwise, so that a fetch that
// would not find the event at Stripe does not find it in a test; a path
// that is not an event's is answered 404 without that code. Every request
// for an event counts in Fetches. On a ServeMux beside a fake of your own,
// it answers through the same client.
func TestV2EventsAnswers(t *testing.T) {
	t.Parallel()
	api := idempotencytest.NewV2Events()
	api.Add(meterError("evt_connect", "acct_1", time.Time{}))
	api.Add(meterError("evt_platform", "", time.Time{}))
	client := idempotencytest.NewStripeClient(thinKey, api)
	fetch := func(id, context string) error {
		params := &stripe.V2CoreEventRetrieveParams{}
		if context != "" {
			params.SetStripeContext(context)
		}
		_, err := client.V2CoreEvents.Retrieve(t.Context(), id, params)
		return err
	}
	code := func(err error) string {
		var v2 *stripe.V2RawError
		require.ErrorAs(t, err, &v2)
		return v2.Code
	}

	require.NoError(t, fetch("evt_connect", "acct_1"))
	require.NoError(t, fetch("evt_platform", ""))
	require.Equal(t, "resource_missing", code(fetch("evt_connect", "")), "a connected account's event fetched as the platform")
	require.Equal(t, "resource_missing", code(fetch("evt_connect", "acct_2")), "as another account")
	require.Equal(t, "resource_missing", code(fetch("evt_platform", "acct_1")), "the platform's event as a connected account")
	require.Equal(t, "resource_missing", code(fetch("evt_unknown", "")))
	require.Equal(t, 3, api.Fetches("evt_connect"))
	require.Equal(t, 2, api.Fetches("evt_platform"))
	require.Equal(t, 1, api.Fetches("evt_unknown"))

	_, err := client.V1BillingMeters.Retrieve(t.Context(), "mtr_1", nil)
	var se *stripe.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, []any{http.StatusNotFound, stripe.ErrorCode("")}, []any{se.HTTPStatusCode, se.Code})

	// On a ServeMux beside a fake of the related object, one client reaches both.
	mux := http.NewServeMux()
	mux.Handle("/v2/core/events/", api)
	mux.HandleFunc("GET /v1/billing/meters/mtr_1", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"id":"mtr_1","object":"billing.meter","display_name":"API calls"}`))
	})
	client = idempotencytest.NewStripeClient(thinKey, mux)
	require.NoError(t, fetch("evt_connect", "acct_1"))
	meter, err := client.V1BillingMeters.Retrieve(t.Context(), "mtr_1", nil)
	require.NoError(t, err)
	require.Equal(t, "API calls", meter.DisplayName)
}

// TestV2EventsAddRefusesBadInput: Add panics, naming the field, on an
// event it cannot make the notification or the event of.
func TestV2EventsAddRefusesBadInput(t *testing.T) {
	t.Parallel()
	api := idempotencytest.NewV2Events()
	require.PanicsWithValue(t, "idempotencytest: V2Events.Add: ThinEvent.ID is empty", func() {
		api.Add(idempotencytest.ThinEvent{Type: meterErrorType})
	})
	require.PanicsWithValue(t, "idempotencytest: V2Events.Add: ThinEvent.Type is empty", func() {
		api.Add(idempotencytest.ThinEvent{ID: "evt_1"})
	})
	require.PanicsWithValue(t, "idempotencytest: V2Events.Add: ThinEvent.Data: json: unsupported type: chan int", func() {
		api.Add(idempotencytest.ThinEvent{ID: "evt_1", Type: meterErrorType, Data: make(chan int)})
	})
	require.PanicsWithValue(t, "idempotencytest: V2Events.Add: ThinEvent.Changes: json: unsupported type: func()", func() {
		api.Add(idempotencytest.ThinEvent{ID: "evt_1", Type: meterErrorType, Changes: func() {}})
	})
	require.Zero(t, api.Fetches("evt_1"))
}

// TestNewStripeClient: the client's requests reach the handler with the
// key, the method, the path and the headers stripe-go sends; an error
// answer (a proxy's page) reaches the caller without a retry; a request
// whose context ends while the handler holds it returns the context's
// error.
func TestNewStripeClient(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []*http.Request
	arrived, held := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/customers/cus_1":
			_, _ = w.Write([]byte(`{"id":"cus_1","object":"customer","email":"a@example.com"}`))
		case "/v1/customers/cus_held":
			close(arrived)
			<-r.Context().Done()
			close(held)
		default: // a proxy's page, which stripe-go retries when told to
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>502 Bad Gateway</html>`))
		}
	})
	client := idempotencytest.NewStripeClient("sk_test_key", h)

	params := &stripe.CustomerRetrieveParams{}
	params.SetStripeAccount("acct_1")
	cus, err := client.V1Customers.Retrieve(t.Context(), "cus_1", params)
	require.NoError(t, err)
	require.Equal(t, "a@example.com", cus.Email)

	_, err = client.V1Customers.Retrieve(t.Context(), "cus_down", nil)
	require.Error(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan error, 1)
	go func() {
		_, err := client.V1Customers.Retrieve(ctx, "cus_held", nil)
		got <- err
	}()
	<-arrived
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)
	<-held

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 3, "one request each: no retry")
	r := seen[0]
	require.Equal(t, []string{http.MethodGet, "/v1/customers/cus_1", "Bearer sk_test_key", "acct_1"},
		[]string{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Stripe-Account")})
	require.PanicsWithValue(t, "idempotencytest: NewStripeClient: nil http.Handler", func() {
		idempotencytest.NewStripeClient("sk_test_key", nil)
	})
}
