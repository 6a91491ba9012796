package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

func TestMain(m *testing.M) { os.Exit(idempotencytest.Main(m)) }

const (
	secret = "whsec_otel_test"
	// marker is in every payload's metadata: no span or metric may carry it.
	marker = "payload-marker-4e1f"
)

// event is a minimal event of type typ about object, with metadata.
func event(t testing.TB, id, typ, object string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": 1756742400, "api_version": stripe.APIVersion,
		"data": map[string]any{"object": map[string]any{"id": object, "object": "invoice", "metadata": map[string]string{"note": marker}}},
	})
	require.NoError(t, err)
	return b
}

var errDownstream = errors.New("downstream refused")

// handlers: invoice.paid is processed; invoice.payment_failed always
// fails; customer.subscription.updated fetches the subscription (sub_ok,
// sub_gone answers 404, anything else fails).
func handlers() *idempotency.Handlers {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error { return nil })
	idempotency.On(hs, "invoice.payment_failed", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error {
		return errDownstream
	})
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(_ context.Context, id, _ string) (*stripe.Subscription, error) {
			switch id {
			case "sub_ok":
				return &stripe.Subscription{ID: id}, nil
			case "sub_gone":
				return nil, fmt.Errorf("%w: 404", idempotency.ErrObjectNotFound)
			}
			return nil, errDownstream
		},
		func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error { return nil })
	return hs
}

// telemetry is a Telemetry on an SDK meter read by hand and an SDK tracer
// exporting to memory.
type telemetry struct {
	*idempotencyotel.Telemetry
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
	tp     *sdktrace.TracerProvider // also the tracer of a span made around a delivery, as otelhttp's
}

func newTelemetry(t *testing.T, now func() time.Time) *telemetry {
	t.Helper()
	return newTelemetryConfig(t, idempotencyotel.Config{Now: now})
}

// newTelemetryConfig is newTelemetry with cfg's other fields.
func newTelemetryConfig(t *testing.T, cfg idempotencyotel.Config) *telemetry {
	t.Helper()
	return newTelemetryBy(t, cfg, idempotencyotel.New)
}

// newTelemetryBy is newTelemetryConfig, the Telemetry made by newTel.
func newTelemetryBy(t *testing.T, cfg idempotencyotel.Config, newTel func(idempotencyotel.Config) (*idempotencyotel.Telemetry, error)) *telemetry {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewInMemoryExporter()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() {
		require.NoError(t, mp.Shutdown(context.Background()))
		require.NoError(t, tp.Shutdown(context.Background()))
	})
	cfg.MeterProvider, cfg.TracerProvider = mp, tp
	tel, err := newTel(cfg)
	require.NoError(t, err)
	return &telemetry{Telemetry: tel, reader: reader, spans: spans, tp: tp}
}

// synchronousHandler is a synchronous Handler of handlers() on a memory
// store, observed by tel.
func (tel *telemetry) synchronousHandler(t *testing.T) *idempotency.Handler {
	t.Helper()
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), handlers(), idempotency.Config{
		Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler), Observer: tel.Observer(),
	})
	require.NoError(t, err)
	return h
}

// points collects the metrics: name → attributes ("k=v,k=v", sorted) →
// value. Histograms give their count, sums and gauges their value.
func (tel *telemetry) points(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.reader.Collect(t.Context(), &rm))
	out := map[string]map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, idempotencyotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			pts := map[string]float64{}
			key := func(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					pts[key(p.Attributes)] = float64(p.Count)
				}
			default:
				t.Fatalf("metric %s: unexpected data %T", m.Name, m.Data)
			}
			out[m.Name] = pts
		}
	}
	return out
}

// requireClean fails if a span carries the payload's marker or the secret.
func requireClean(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			require.NotContains(t, v, marker, "span %s attribute %s", s.Name, kv.Key)
			require.NotContains(t, v, secret, "span %s attribute %s", s.Name, kv.Key)
		}
		require.NotContains(t, s.Status.Description, marker)
		require.NotContains(t, s.Status.Description, errDownstream.Error(), "no error text in spans")
	}
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func requireAttr(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := attr(s, key)
	require.True(t, ok, "span %s has no %s", s.Name, key)
	require.Equal(t, want, v.AsInterface(), "span %s attribute %s", s.Name, key)
}

func requireNoAttr(t *testing.T, s tracetest.SpanStub, keys ...string) {
	t.Helper()
	for _, key := range keys {
		v, ok := attr(s, key)
		require.False(t, ok, "span %s has %s=%v", s.Name, key, v.AsInterface())
	}
}

// byEvent indexes the spans that match by their messaging.message.id (an
// event's id, or a task's); of several spans of one event, the first to
// end.
func byEvent(spans tracetest.SpanStubs, match func(tracetest.SpanStub) bool) map[string]tracetest.SpanStub {
	out := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		v, ok := attr(s, "messaging.message.id")
		if _, seen := out[v.AsString()]; ok && !seen && match(s) {
			out[v.AsString()] = s
		}
	}
	return out
}

// isDelivery matches the span of a request to a Handler: the server span,
// or the internal "stripe webhook" span under a server span of the
// caller's.
func isDelivery(s tracetest.SpanStub) bool {
	return s.SpanKind == trace.SpanKindServer || s.Name == "stripe webhook"
}

// isAttempt matches the span of an inbox attempt at a row of kind.
func isAttempt(kind idempotency.InboxKind) func(tracetest.SpanStub) bool {
	return func(s tracetest.SpanStub) bool {
		v, _ := attr(s, "idempotency.kind")
		return s.SpanKind == trace.SpanKindConsumer && v.AsString() == string(kind)
	}
}

// TestInbox: on both stores, deliveries, attempts (processed, dead-lettered,
// tasks none here), fetches and the inbox's gauges are counted; each
// attempt's span is a trace of its own linked to the span of the delivery
// that stored its event, the link stored in between by the store.
func TestInbox(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testInbox(t, open(t))
		})
	}
}

// stores opens each store the inbox tests run on.
var stores = map[string]func(t *testing.T) idempotency.Store{
	"memory": func(*testing.T) idempotency.Store { return idempotency.NewMemoryStore() },
	"postgres": func(t *testing.T) idempotency.Store {
		return idempotencytest.Postgres(t).NewStore(t, idempotency.PgxConfig{})
	},
}

// observedInbox is an inbox of handlers() on store with MaxAttempts 1,
// on a fake clock, observed by tel (its gauges too), and its Handler.
func observedInbox(t *testing.T, store idempotency.Store) (*idempotency.Inbox, *idempotency.Handler, *idempotencytest.Clock, *telemetry) {
	t.Helper()
	clock := idempotencytest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	tel := newTelemetry(t, clock.Now)
	logger := slog.New(slog.DiscardHandler)
	in, err := idempotency.NewInbox(store, handlers(), idempotency.InboxConfig{
		Now: clock.Now, MaxAttempts: 1, Logger: logger, Observer: tel.Observer(),
	})
	require.NoError(t, err)
	reg, err := tel.ObserveInbox(in)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Unregister()) })
	h, err := in.Handler(idempotency.Config{Secrets: []string{secret}, Now: clock.Now, Logger: logger, Observer: tel.Observer()})
	require.NoError(t, err)
	return in, h, clock, tel
}

func testInbox(t *testing.T, store idempotency.Store) {
	in, h, clock, tel := observedInbox(t, store)

	for _, e := range []struct{ id, typ, object string }{
		{"evt_paid", "invoice.paid", "in_1"},
		{"evt_fails", "invoice.payment_failed", "in_2"},
		{"evt_sub", "customer.subscription.updated", "sub_ok"},
		{"evt_sub_gone", "customer.subscription.updated", "sub_gone"},
	} {
		a := idempotencytest.Deliver(h, event(t, e.id, e.typ, e.object), secret)
		require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	}
	a := idempotencytest.Deliver(h, event(t, "evt_paid", "invoice.paid", "in_1"), secret)
	require.Equal(t, idempotency.OutcomeDuplicate, a.Outcome)
	a = idempotencytest.Deliver(h, event(t, "evt_forged", "invoice.paid", "in_1"), "whsec_forged")
	require.Equal(t, http.StatusBadRequest, a.Status)

	clock.Advance(7 * time.Minute)
	pts := tel.points(t)
	require.Equal(t, deliveriesCounted(map[string]float64{
		"outcome=queued,status=200": 4, "outcome=duplicate,status=200": 1, "outcome=rejected,status=400": 1,
	}), pts["idempotency.deliveries"])
	require.Equal(t, map[string]float64{"outcome=queued": 4, "outcome=duplicate": 1, "outcome=rejected": 1}, pts["idempotency.delivery.duration"])
	require.Equal(t, float64(4), pts["idempotency.inbox.depth"]["kind=event,state=pending"])
	require.Equal(t, float64(0), pts["idempotency.inbox.depth"]["kind=task,state=pending"])
	require.Len(t, pts["idempotency.inbox.depth"], 13, "every state of each kind, zero included, but ignored for tasks")
	require.NotContains(t, pts["idempotency.inbox.depth"], "kind=task,state=ignored", "a task is never ignored")
	require.Contains(t, pts["idempotency.inbox.depth"], "kind=event,state=ignored")
	require.Equal(t, map[string]float64{"": 420}, pts["idempotency.inbox.oldest_pending_age"], "seconds since the oldest pending event was received")
	require.Empty(t, pts["idempotency.inbox.last_attempt_age"], "nothing attempted: no age")

	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 4, n)
	pts = tel.points(t)
	require.Equal(t, map[string]float64{
		"kind=event,outcome=processed,state=processed": 2,
		"kind=event,outcome=skipped,state=skipped":     1, // the 404
		"kind=event,outcome=failed,state=dead_letter":  1,
	}, pts["idempotency.attempts"])
	require.Equal(t, map[string]float64{"kind=event": 1, "kind=task": 0}, pts["idempotency.dead_letters"])
	require.Equal(t, map[string]float64{"result=ok": 1, "result=not_found": 1}, pts["idempotency.stripe.fetches"])
	require.Equal(t, map[string]float64{"result=ok": 1, "result=not_found": 1}, pts["idempotency.stripe.fetch.duration"])
	require.Equal(t, float64(1), pts["idempotency.inbox.depth"]["kind=event,state=dead_letter"])
	require.Equal(t, float64(0), pts["idempotency.inbox.depth"]["kind=event,state=pending"])
	require.Equal(t, map[string]float64{"": 0}, pts["idempotency.inbox.oldest_pending_age"], "nothing pending")
	clock.Advance(2 * time.Minute)
	pts = tel.points(t)
	require.Equal(t, map[string]float64{"": 120}, pts["idempotency.inbox.last_attempt_age"], "seconds since the last attempt started")

	spans := tel.spans.GetSpans()
	requireClean(t, spans)
	deliveries := byEvent(spans, isDelivery)
	attempts := byEvent(spans, isAttempt(idempotency.KindEvent))
	require.Len(t, attempts, 4)
	for id, at := range attempts {
		d, ok := deliveries[id] // the first delivery: the one that stored the event
		require.True(t, ok, "no delivery span of %s", id)
		require.Equal(t, trace.SpanKindServer, d.SpanKind, "no span in the request's context: the delivery's is its server span")
		require.Equal(t, "POST", d.Name, "an HTTP server span with no route is named by its method")
		requireAttr(t, d, "http.request.method", "POST")
		requireAttr(t, d, "url.scheme", "http")
		requireNoAttr(t, d, "http.route", "error.type", "stripe.event.id")
		require.Equal(t, semconv.SchemaURL, d.InstrumentationScope.SchemaURL)
		require.Equal(t, trace.SpanKindConsumer, at.SpanKind)
		typ, ok := attr(at, "stripe.event.type")
		require.True(t, ok)
		require.Equal(t, "process "+typ.AsString(), at.Name, "messaging: {operation name} {destination}")
		requireAttr(t, at, "messaging.system", "stripe")
		requireAttr(t, at, "messaging.operation.type", "process")
		requireAttr(t, at, "messaging.operation.name", "process")
		requireAttr(t, at, "messaging.message.id", id)
		requireAttr(t, at, "messaging.destination.name", typ.AsString())
		requireNoAttr(t, at, "stripe.event.id")
		require.Equal(t, semconv.SchemaURL, at.InstrumentationScope.SchemaURL)
		require.Len(t, at.Links, 1, "the attempt of %s links to its delivery", id)
		require.Equal(t, d.SpanContext.TraceID(), at.Links[0].SpanContext.TraceID(), id)
		require.Equal(t, d.SpanContext.SpanID(), at.Links[0].SpanContext.SpanID(), id)
		require.NotEqual(t, d.SpanContext.TraceID(), at.SpanContext.TraceID(), "an attempt is a trace of its own")
		require.False(t, at.Parent.IsValid(), "an attempt's span is a root")
		requireAttr(t, at, "idempotency.attempt", int64(1))
		requireAttr(t, at, "idempotency.kind", "event")
	}
	requireAttr(t, deliveries["evt_paid"], "stripe.object.id", "in_1")
	requireAttr(t, deliveries["evt_paid"], "http.response.status_code", int64(200))
	requireAttr(t, attempts["evt_paid"], "stripe.event.type", "invoice.paid")
	requireAttr(t, attempts["evt_paid"], "stripe.object.id", "in_1")
	requireAttr(t, attempts["evt_paid"], "idempotency.outcome", "processed")
	requireAttr(t, attempts["evt_fails"], "idempotency.outcome", "failed")
	requireAttr(t, attempts["evt_fails"], "idempotency.state", "dead_letter")
	require.Equal(t, codes.Error, attempts["evt_fails"].Status.Code)
	requireAttr(t, attempts["evt_fails"], "error.type", "failed")
	require.Equal(t, codes.Unset, attempts["evt_paid"].Status.Code)
	requireNoAttr(t, attempts["evt_paid"], "error.type")

	var fetches []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == "stripe fetch" {
			fetches = append(fetches, s)
		}
	}
	require.Len(t, fetches, 2)
	for _, f := range fetches {
		obj, _ := attr(f, "stripe.object.id")
		parent := attempts["evt_sub"]
		if obj.AsString() == "sub_gone" {
			parent = attempts["evt_sub_gone"]
		}
		require.Equal(t, parent.SpanContext.SpanID(), f.Parent.SpanID(), "a fetch is a child of its attempt")
		require.Equal(t, trace.SpanKindClient, f.SpanKind)
		requireAttr(t, f, "service.peer.name", "stripe")
		requireNoAttr(t, f, "error.type", "server.address")
	}
}

// TestSynchronous: the synchronous Handler's delivery span is the parent
// of its fetch spans, a 5xx marks it as an error (a 4xx does not), and
// nothing is linked or stored.
func TestSynchronous(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, nil)
	h := tel.synchronousHandler(t)
	for _, e := range []struct {
		id, typ, object string
		status          int
	}{
		{"evt_paid", "invoice.paid", "in_1", 200},
		{"evt_fails", "invoice.payment_failed", "in_2", 500},
		{"evt_sub", "customer.subscription.updated", "sub_down", 500},
	} {
		a := idempotencytest.Deliver(h, event(t, e.id, e.typ, e.object), secret)
		require.Equal(t, e.status, a.Status, e.id)
	}
	a := idempotencytest.Deliver(h, event(t, "evt_forged", "invoice.paid", "in_1"), "whsec_forged")
	require.Equal(t, http.StatusBadRequest, a.Status)

	pts := tel.points(t)
	require.Equal(t, deliveriesCounted(map[string]float64{
		"outcome=processed,status=200": 1, "outcome=failed,status=500": 2, "outcome=rejected,status=400": 1,
	}), pts["idempotency.deliveries"])
	require.Equal(t, map[string]float64{"result=error": 1}, pts["idempotency.stripe.fetches"])
	require.NotContains(t, pts, "idempotency.attempts")

	spans := tel.spans.GetSpans()
	requireClean(t, spans)
	deliveries := byEvent(spans, isDelivery)
	require.Len(t, deliveries, 3, "the rejected delivery has no event id")
	require.Equal(t, codes.Unset, deliveries["evt_paid"].Status.Code)
	requireNoAttr(t, deliveries["evt_paid"], "error.type")
	require.Equal(t, codes.Error, deliveries["evt_fails"].Status.Code)
	requireAttr(t, deliveries["evt_fails"], "error.type", "500")
	for _, s := range spans {
		switch {
		case s.Name == "stripe fetch":
			require.Equal(t, deliveries["evt_sub"].SpanContext.SpanID(), s.Parent.SpanID(), "the fetch is a child of its delivery")
			require.Equal(t, codes.Error, s.Status.Code)
			requireAttr(t, s, "idempotency.fetch.result", "error")
			requireAttr(t, s, "error.type", "_OTHER")
		case isDelivery(s):
			if _, ok := attr(s, "messaging.message.id"); !ok {
				requireAttr(t, s, "http.response.status_code", int64(400))
				require.Equal(t, codes.Unset, s.Status.Code, "a 4xx is not the server's error")
				requireNoAttr(t, s, "error.type")
			}
		default:
			t.Fatalf("unexpected span %s", s.Name)
		}
	}
}

// TestLinkOnlyFromARecordingSpan: without a span in the delivery's context
// nothing is stored, and a stored text that is no traceparent gives no
// link; neither fails the attempt.
func TestLinkOnlyFromARecordingSpan(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, nil)
	o := tel.Observer()
	require.Empty(t, o.Link(context.Background()))
	ctx, done := o.Attempt(context.Background(), idempotency.InboxRecord{EventID: "evt_1", Attempt: 1}, "00-not-a-traceparent")
	require.True(t, trace.SpanContextFromContext(ctx).IsValid())
	done(idempotency.Result{EventID: "evt_1", Outcome: idempotency.OutcomeProcessed, Attempt: 1})
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 1)
	require.Empty(t, spans[0].Links)
	require.Equal(t, "process", spans[0].Name, "no destination known: the operation alone")
	requireNoAttr(t, spans[0], "messaging.destination.name")
	require.True(t, strings.HasPrefix(o.Link(ctx), "00-"+spans[0].SpanContext.TraceID().String()+"-"), "Link gives the context span's traceparent")
}

// TestObserveInboxStatsFailureAndUnregister: a collection whose inbox
// query fails leaves the gauges out rather than reporting zeros, and logs
// the store's error at Warn through Config.Logger, once per failed
// collection; it returns no error to the reader, which handed it to
// OpenTelemetry's error handler, a plain line of package log outside the
// service's slog. Once unregistered, the inbox is not asked again.
func TestObserveInboxStatsFailureAndUnregister(t *testing.T) {
	t.Parallel()
	db := idempotencytest.Postgres(t)
	in, err := idempotency.NewInbox(db.NewStore(t, idempotency.PgxConfig{}), handlers(), idempotency.InboxConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	logs := &recordedLogs{}
	tel := newTelemetryConfig(t, idempotencyotel.Config{Logger: slog.New(logs)})
	reg, err := tel.ObserveInbox(in)
	require.NoError(t, err)

	collect := func() (map[string]bool, error) {
		var rm metricdata.ResourceMetrics
		err := tel.reader.Collect(t.Context(), &rm)
		names := map[string]bool{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != "idempotency.dead_letters" && m.Name != "idempotency.deliveries" { // counters, at 0 from the start
					names[m.Name] = true
				}
			}
		}
		return names, err
	}
	names, err := collect()
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"idempotency.inbox.depth": true, "idempotency.inbox.oldest_pending_age": true, "idempotency.inbox.running": true}, names)
	require.Empty(t, logs.all())

	db.Pool.Close() // the database is gone
	for i := 1; i <= 2; i++ {
		names, err = collect()
		require.NoError(t, err, "the Logger has the error, not OpenTelemetry's error handler")
		require.Equal(t, map[string]bool{"idempotency.inbox.running": true}, names,
			"no gauge of the database reads 0 for an inbox that could not be read; the process's own is read")
		recs := logs.all()
		require.Len(t, recs, i, "one line per failed collection")
		r := recs[i-1]
		require.Equal(t, slog.LevelWarn, r.Level)
		require.Equal(t, "idempotencyotel: cannot read the inbox's stats; its gauges are left out of this collection", r.Message)
		require.Contains(t, r.attrs["error"], "inbox stats")
	}

	require.NoError(t, reg.Unregister())
	names, err = collect()
	require.NoError(t, err, "the callback no longer runs")
	require.Empty(t, names)
	require.Len(t, logs.all(), 2)
}

// recordedLogs is a slog.Handler that keeps every record, its attributes
// as text.
type recordedLogs struct {
	mu   sync.Mutex
	recs []recordedLog
}

type recordedLog struct {
	slog.Record
	attrs map[string]string
}

func (h *recordedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordedLogs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordedLogs) WithGroup(string) slog.Handler            { return h }

func (h *recordedLogs) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, recordedLog{Record: r, attrs: attrs})
	return nil
}

func (h *recordedLogs) all() []recordedLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

// The delivery span's http.request.method is the request's method when it
// is one of HTTP's, and "_OTHER" when not, as OpenTelemetry's HTTP
// conventions ask: the method is the sender's, unverified, and Go's server
// takes one as long as a header (a 64 KiB one was stored whole). HTTP's
// are those the conventions know by default, QUERY among them since
// semconv v1.43.0 (it was "_OTHER", the span named "HTTP").
func TestDeliverySpanMethodIsBounded(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, nil)
	h := tel.synchronousHandler(t)
	srv := httptest.NewServer(h) // a real server: the method comes over the wire
	defer srv.Close()
	for method, want := range map[string]string{
		http.MethodGet:                    http.MethodGet,
		"QUERY":                           "QUERY",
		"X" + strings.Repeat("A", 64<<10): "_OTHER",
		"post":                            "_OTHER",
	} {
		requireMethodReported(t, tel, srv, method, want)
	}
}

// requireMethodReported sends a request of method to srv, a Handler
// observed by tel, and requires its delivery span to report the method as
// want, and to be named after it ("HTTP" for _OTHER).
func requireMethodReported(t *testing.T, tel *telemetry, srv *httptest.Server, method, want string) {
	t.Helper()
	name := want
	if want == "_OTHER" {
		name = "HTTP" // OpenTelemetry's name of a request whose method is none of HTTP's
	}
	tel.spans.Reset()
	req, err := http.NewRequest(method, srv.URL+"/webhook", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "a method other than POST")
	spans := tel.spans.GetSpans()
	require.Len(t, spans, 1)
	v, ok := attr(spans[0], "http.request.method")
	require.True(t, ok)
	require.Equal(t, want, v.AsString(), "method of %d bytes", len(method))
	require.Equal(t, name, spans[0].Name, "method of %d bytes", len(method))
}

func byName(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestDeliverySpanKindFollowsTheRequestsContext: the delivery's span is the
// request's server span, named and described by OpenTelemetry's HTTP
// conventions, when the request's context holds no span or only a remote
// one; under a span of the service's own (otelhttp's server span) it is an
// internal "stripe webhook" span, a child of it, which leaves the HTTP
// attributes to that span and names an error by the delivery's outcome.
func TestDeliverySpanKindFollowsTheRequestsContext(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, nil)
	h := tel.synchronousHandler(t)
	deliver := func(ctx context.Context, h http.Handler, target, id, typ string, status int) tracetest.SpanStub {
		t.Helper()
		tel.spans.Reset()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, idempotencytest.NewSignedRequest(target, event(t, id, typ, "in_1"), secret).WithContext(ctx))
		require.Equal(t, status, rec.Code, rec.Body.String())
		d, ok := byEvent(tel.spans.GetSpans(), isDelivery)[id]
		require.True(t, ok, "no delivery span of %s", id)
		return d
	}

	t.Run("under a span of the service's", func(t *testing.T) {
		for _, c := range []struct {
			id, typ string
			status  int
		}{{"evt_wrapped_paid", "invoice.paid", 200}, {"evt_wrapped_fails", "invoice.payment_failed", 500}} {
			ctx, server := tel.tp.Tracer("otelhttp").Start(t.Context(), "POST /webhook", trace.WithSpanKind(trace.SpanKindServer))
			d := deliver(ctx, h, "/", c.id, c.typ, c.status)
			server.End()
			require.Equal(t, trace.SpanKindInternal, d.SpanKind, "no server span inside a server span")
			require.Equal(t, "stripe webhook", d.Name)
			require.Equal(t, server.SpanContext().SpanID(), d.Parent.SpanID())
			requireNoAttr(t, d, "http.request.method", "http.response.status_code", "url.scheme", "http.route")
			requireAttr(t, d, "messaging.message.id", c.id)
			requireAttr(t, d, "stripe.event.type", c.typ)
			if c.status == 200 {
				requireAttr(t, d, "idempotency.outcome", "processed")
				requireNoAttr(t, d, "error.type")
				require.Equal(t, codes.Unset, d.Status.Code)
			} else {
				requireAttr(t, d, "error.type", "failed")
				require.Equal(t, codes.Error, d.Status.Code)
			}
		}
	})
	t.Run("under a remote span", func(t *testing.T) {
		remote := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
		})
		d := deliver(trace.ContextWithRemoteSpanContext(t.Context(), remote), h, "/", "evt_remote", "invoice.paid", 200)
		require.Equal(t, trace.SpanKindServer, d.SpanKind, "a traceparent the request brought: this process's first span is the server's")
		require.Equal(t, remote.SpanID(), d.Parent.SpanID())
		require.Equal(t, "POST", d.Name)
		requireAttr(t, d, "http.response.status_code", int64(200))
	})
	t.Run("no span", func(t *testing.T) {
		d := deliver(t.Context(), h, "/", "evt_bare", "invoice.payment_failed", 500)
		require.Equal(t, trace.SpanKindServer, d.SpanKind)
		require.False(t, d.Parent.IsValid())
		require.Equal(t, "POST", d.Name)
		requireAttr(t, d, "http.request.method", "POST")
		requireAttr(t, d, "url.scheme", "http")
		requireAttr(t, d, "http.response.status_code", int64(500))
		requireAttr(t, d, "error.type", "500")
		require.Equal(t, codes.Error, d.Status.Code)
	})
	t.Run("routed by a ServeMux", func(t *testing.T) {
		mux := http.NewServeMux()
		mux.Handle("POST example.com/stripe/{endpoint}", h)
		d := deliver(t.Context(), mux, "http://example.com/stripe/webhook", "evt_routed", "invoice.paid", 200)
		require.Equal(t, "POST /stripe/{endpoint}", d.Name, "{method} {route}: the pattern's path, not the request's")
		requireAttr(t, d, "http.route", "/stripe/{endpoint}")
	})
}

// TestFetchSpanErrorType: a failed fetch's error.type is the status of the
// Stripe API's answer when there is one, "timeout" when the context's
// deadline passed, and "_OTHER" otherwise; never the error's text.
func TestFetchSpanErrorType(t *testing.T) {
	t.Parallel()
	tel := newTelemetry(t, time.Now)
	fetch := tel.Observer().Fetch
	fetch(t.Context(), "customer.subscription.updated", "sub_503", time.Second, fmt.Errorf("%w: retrieving: %w", idempotency.ErrStripeAPI, &stripe.Error{HTTPStatusCode: 503, Msg: marker}))
	fetch(t.Context(), "customer.subscription.updated", "sub_slow", time.Second, fmt.Errorf("retrieving: %w", context.DeadlineExceeded))
	fetch(t.Context(), "customer.subscription.updated", "sub_down", time.Second, errDownstream)
	fetch(t.Context(), "customer.subscription.updated", "sub_gone", time.Second, fmt.Errorf("%w: 404", idempotency.ErrObjectNotFound))
	spans := tel.spans.GetSpans()
	requireClean(t, spans)
	want := map[string]string{"sub_503": "503", "sub_slow": "timeout", "sub_down": "_OTHER"}
	require.Len(t, spans, 4)
	for _, s := range spans {
		require.Equal(t, "stripe fetch", s.Name)
		obj, _ := attr(s, "stripe.object.id")
		if obj.AsString() == "sub_gone" {
			requireNoAttr(t, s, "error.type")
			continue
		}
		requireAttr(t, s, "error.type", want[obj.AsString()])
	}
}
