package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

const (
	thinType    = "v1.billing.meter.error_report_triggered"
	thinMeter   = "mtr_test_61RCjiqdTDC91zgip41IqPCzPnxqqSVc"
	thinAccount = "acct_1Nv0FGQ9RKHgCVdK"
	thinSummary = "There is 1 invalid event"
)

// thinEvent returns the notification an event destination sends for event
// id, and the event GET /v2/core/events/{id} returns (Stripe's API
// reference example, as a connected account's).
func thinEvent(id string) (notification, event []byte) {
	notification = fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z","context":%q,"related_object":{"id":%q,"type":"billing.meter","url":"/v1/billing/meters/%s"}}`,
		id, thinType, thinAccount, thinMeter, thinMeter)
	event = fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","context":%q,"created":"2024-09-26T17:46:22.134Z",
"data":{"developer_message_summary":%q,"reason":{"error_count":1,"error_types":[{"code":"meter_event_no_customer_defined","error_count":1,"sample_errors":[{"error_message":"Customer mapping key stripe_customer_id not found in payload.","request":{"identifier":"cb447754"}}]}]},"validation_end":"2024-09-26T17:46:20.000Z","validation_start":"2024-09-26T17:46:10.000Z"},
"changes":null,"livemode":false,"reason":null,"related_object":{"id":%q,"type":"billing.meter","url":"/v1/billing/meters/%s"},"type":%q}`,
		id, thinAccount, thinSummary, thinMeter, thinMeter, thinType)
	return notification, event
}

// newThinFake is a fake of the Stripe API that serves the v2 event id; it
// returns the notification of that event and the event.
func newThinFake(id string) (f *fakeStripe, notification, event []byte) {
	f = newFakeStripe()
	notification, event = thinEvent(id)
	f.v2[id] = event
	return f, notification, event
}

// thinEvents registers a handler of the thin event type on app, which
// counts its applications and keeps the events it received.
func thinEvents(app *service) func() []idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData] {
	var mu sync.Mutex
	var got []idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]
	idempotency.On(app.hs, thinType, func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData]) error {
		tx.AfterCommit(func(context.Context) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev)
		})
		return app.count(ctx, tx, ev.ID, nil)
	})
	return func() []idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData] {
		mu.Lock()
		defer mu.Unlock()
		return append([]idempotency.Event[stripe.V1BillingMeterErrorReportTriggeredEventData](nil), got...)
	}
}

type ledger interface {
	LookupEvent(ctx context.Context, eventID string) (idempotency.EventRecord, bool, error)
}

// TestThinEvent: a thin notification is verified, its event fetched as the
// notification's context, claimed by its id and applied once; the handler
// gets the event's data as Object and the fetched event as Raw, and the
// ledger names the related object.
func TestThinEvent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		received := thinEvents(app)
		f, notification, event := newThinFake("evt_thin_1")
		var results []idempotency.Result
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
			OnResult: func(r idempotency.Result) { results = append(results, r) },
		})
		require.NoError(t, err)

		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, notification, testSecret).Outcome)
		require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(h, notification, testSecret).Outcome)
		app.requireAppliedOnce(t, []string{"evt_thin_1"})

		evs := received()
		require.Len(t, evs, 1)
		ev := evs[0]
		require.Equal(t, "evt_thin_1", ev.ID)
		require.Equal(t, thinType, ev.Type)
		require.Equal(t, thinAccount, ev.Account)
		require.Equal(t, time.Date(2024, 9, 26, 17, 46, 22, 0, time.UTC), ev.Created.UTC())
		require.Empty(t, ev.APIVersion)
		require.Equal(t, thinSummary, ev.Object.DeveloperMessageSummary)
		require.Equal(t, time.Date(2024, 9, 26, 17, 46, 20, 0, time.UTC), ev.Object.ValidationEnd.UTC())
		require.Equal(t, int64(1), ev.Object.Reason.ErrorCount)
		require.Nil(t, ev.Previous)
		require.JSONEq(t, string(event), string(ev.Raw))
		require.Equal(t, thinMeter, results[0].ObjectID)

		rec, found, err := app.store.(ledger).LookupEvent(t.Context(), "evt_thin_1")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, thinMeter, rec.ObjectID)
		require.Equal(t, thinAccount, rec.Account)

		calls := f.calls()
		require.Len(t, calls, 1, "the first delivery fetches the event; the second, of an event the ledger holds, is answered duplicate without a fetch")
		require.Equal(t, "/v2/core/events/evt_thin_1", calls[0].Path)
		require.Equal(t, thinAccount, calls[0].Header.Get("Stripe-Context"))
	})
}

// TestThinEventInbox: in inbox mode the event is fetched at ingest, and
// what the inbox stores and its workers apply is the fetched event.
func TestThinEventInbox(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		received := thinEvents(app)
		f, notification, event := newThinFake("evt_thin_inbox")
		in, h := app.inbox(t, f.serve(t))

		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, notification, testSecret).Outcome)
		rec, found, err := in.Lookup(t.Context(), "evt_thin_inbox")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, thinMeter, rec.ObjectID)
		require.Equal(t, time.Date(2024, 9, 26, 17, 46, 22, 0, time.UTC), rec.Created.UTC())
		require.Equal(t, []any{thinType, thinAccount, false, ""}, []any{rec.EventType, rec.Account, rec.Livemode, rec.APIVersion},
			"the type, the context as the account, and no API version: v2 events are unversioned")

		n, err := in.WorkDue(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		app.requireAppliedOnce(t, []string{"evt_thin_inbox"})
		evs := received()
		require.Len(t, evs, 1)
		require.Equal(t, thinSummary, evs[0].Object.DeveloperMessageSummary)
		require.JSONEq(t, string(event), string(evs[0].Raw))
	})
}

// TestThinEventFetchFailures: a fetch that fails is answered 503 when it
// may pass (network, timeout, 429, 5xx) and 500 otherwise, so that Stripe
// sends the notification again; nothing is stored, and neither the key nor
// the payload reaches the log. Once the API answers, the redelivery is
// applied.
func TestThinEventFetchFailures(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	fail := func(status int) func(*fakeStripe, string) *stripe.Client {
		return func(f *fakeStripe, _ string) *stripe.Client {
			f.fail = func(int, *http.Request) int { return status }
			return nil
		}
	}
	cases := []struct {
		name   string
		setup  func(f *fakeStripe, url string) *stripe.Client // nil: a client of the fake
		status int
		body   string
		says   string
	}{
		{"503", fail(503), 503, `{"error":"stripe_unavailable"}`, "error api_error"},
		{"429", fail(429), 503, `{"error":"stripe_unavailable"}`, "error invalid_request_error (rate_limit)"},
		{"network", func(*fakeStripe, string) *stripe.Client {
			return stripe.NewClient(fakeStripeKey, fakeBackends(closed.URL, nil))
		}, 503, `{"error":"stripe_unavailable"}`, "connection refused"},
		{"not found", func(f *fakeStripe, _ string) *stripe.Client { delete(f.v2, "evt_thin_fail"); return nil },
			500, `{"error":"processing_failed"}`, "error invalid_request_error (resource_missing)"},
		{"wrong key", func(_ *fakeStripe, url string) *stripe.Client {
			return stripe.NewClient("sk_test_wrong", fakeBackends(url, nil))
		},
			500, `{"error":"processing_failed"}`, "error invalid_request_error"},
		{"another event", func(f *fakeStripe, _ string) *stripe.Client {
			_, other := thinEvent("evt_other")
			f.v2["evt_thin_fail"] = other
			return nil
		},
			500, `{"error":"processing_failed"}`, "another id or type"},
		{"another type", func(f *fakeStripe, _ string) *stripe.Client {
			// The event asked for, its type another: a handler would be
			// given an event it was not registered for.
			f.v2["evt_thin_fail"] = []byte(strings.ReplaceAll(string(f.v2["evt_thin_fail"]), thinType, "v1.billing.meter.no_meter_found"))
			return nil
		},
			500, `{"error":"processing_failed"}`, "another id or type"},
		{"not JSON", func(f *fakeStripe, _ string) *stripe.Client {
			f.v2["evt_thin_fail"] = []byte(`{"developer_message_summary": "` + thinSummary)
			return nil
		}, 503, `{"error":"stripe_unavailable"}`, "could not read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			app := newService(t, "memory")
			thinEvents(app)
			f, notification, event := newThinFake("evt_thin_fail")
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			client := c.setup(f, srv.URL)
			if client == nil {
				client = stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))
			}
			log, logs := testLogger()
			var res idempotency.Result
			h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: log, StripeClient: client,
				OnResult: func(r idempotency.Result) { res = r },
			})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, notification, testSecret)
			require.Equal(t, c.status, a.Status)
			require.JSONEq(t, c.body, a.Body)
			require.ErrorIs(t, res.Err, idempotency.ErrStripeAPI)
			require.Contains(t, res.Err.Error(), c.says)
			require.Equal(t, "evt_thin_fail", res.EventID)
			_, found, err := app.store.(ledger).LookupEvent(t.Context(), "evt_thin_fail")
			require.NoError(t, err)
			require.False(t, found, "nothing stored")
			for _, secret := range []string{fakeStripeKey, "sk_test_wrong", thinSummary, "stripe_customer_id"} {
				require.NotContains(t, logs.String(), secret)
				require.NotContains(t, res.Err.Error(), secret)
			}

			// Stripe sends it again once the API answers.
			f.mu.Lock()
			f.fail, f.v2["evt_thin_fail"] = nil, event
			f.mu.Unlock()
			h, err = idempotency.NewHandler(app.store, app.hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: log, StripeClient: stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil)),
			})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, notification, testSecret).Outcome)
			app.requireAppliedOnce(t, []string{"evt_thin_fail"})
		})
	}
}

// TestThinEventTimeout: a fetch that does not answer within
// Config.Timeout is answered 503.
func TestThinEventTimeout(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	thinEvents(app)
	notification, _ := thinEvent("evt_thin_slow")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; the client gives up
	}))
	t.Cleanup(srv.Close)
	var res idempotency.Result
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: 50 * time.Millisecond,
		StripeClient: stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil)),
		OnResult:     func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status)
	require.ErrorIs(t, res.Err, context.DeadlineExceeded)
	require.Empty(t, app.appliedCounts(t))
}

// TestThinEventClientChecked: a client that is not one is refused by
// NewHandler, not at each delivery.
func TestThinEventClientChecked(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	_, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{Secrets: []string{testSecret}, StripeClient: new(stripe.Client)})
	require.ErrorContains(t, err, "Config.StripeClient is nil or not made by stripe.NewClient")
}

// TestThinEventOnCurrent: an OnCurrent handler of a thin event type fetches
// the related object (a thin event's data has no id of its own), as the
// event's context, and gets the object as the API returns it.
func TestThinEventOnCurrent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		type meter struct{ ID, Status string }
		var fetched []string
		var got []meter
		idempotency.OnCurrent(app.hs, []string{thinType}, func(ctx context.Context, id, account string) (meter, error) {
			fetched = append(fetched, id+" as "+account)
			return meter{ID: id, Status: "inactive"}, nil
		}, func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[meter]) error {
			got = append(got, ev.Object)
			return app.count(ctx, tx, ev.ID, nil)
		})
		f, notification, _ := newThinFake("evt_thin_current")
		h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, notification, testSecret).Outcome)
		require.Equal(t, []string{thinMeter + " as " + thinAccount}, fetched)
		require.Equal(t, []meter{{ID: thinMeter, Status: "inactive"}}, got)
		app.requireAppliedOnce(t, []string{"evt_thin_current"})
	})
}

// TestThinEventOnCurrentWithoutRelatedObject: a thin event that names no
// related object is skipped by an OnCurrent handler, without a fetch: the
// id in the event's own data is not the id of an object to fetch.
func TestThinEventOnCurrentWithoutRelatedObject(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	var fetched []string
	idempotency.OnCurrent(app.hs, []string{thinType}, func(ctx context.Context, id, account string) (struct{}, error) {
		fetched = append(fetched, id)
		return struct{}{}, nil
	}, func(context.Context, idempotency.Tx, idempotency.Event[struct{}]) error {
		return errors.New("the handler runs only with a fetched object")
	})
	const id = "evt_thin_unrelated"
	notification := fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z"}`, id, thinType)
	f := newFakeStripe()
	f.v2[id] = fmt.Appendf(nil, `{"id":%q,"object":"v2.core.event","type":%q,"livemode":false,"created":"2024-09-26T17:46:22.134Z","data":{"id":"not_an_object_id"},"related_object":null}`, id, thinType)
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Empty(t, fetched)
	require.Equal(t, idempotency.OutcomeSkipped, a.Outcome, a.Body)
}
