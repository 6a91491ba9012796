package idempotencyotel_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// TestTwoInboxesToldApart: a process with two inboxes (two memory stores,
// or two schemas of one PostgreSQL database) observes each through a
// Telemetry of its own on one MeterProvider, Config.Attributes naming the
// inbox: the Prometheus exporter serves both, the gauges, the
// deliveries, the attempts and the dead letters of each under its label,
// and the scrape does not fail on a series served twice. Unregistering
// one inbox's gauges leaves the other's. Both stores.
func TestTwoInboxesToldApart(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(reg))
			require.NoError(t, err)
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
			t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			t.Cleanup(srv.Close)

			regs := map[string]interface{ Unregister() error }{}
			for _, inbox := range []string{"billing", "shipping"} {
				tel, err := idempotencyotel.New(idempotencyotel.Config{MeterProvider: mp, Attributes: []attribute.KeyValue{attribute.String("inbox", inbox)}})
				require.NoError(t, err)
				in, err := idempotency.NewInbox(open(t), handlers(), idempotency.InboxConfig{
					MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler), Observer: tel.Observer(),
				})
				require.NoError(t, err)
				h, err := in.Handler(idempotency.Config{Secrets: []string{secret}})
				require.NoError(t, err)
				r, err := tel.ObserveInbox(in)
				require.NoError(t, err)
				regs[inbox] = r
				a := idempotencytest.Deliver(h, event(t, "evt_"+inbox+"_1", "invoice.paid", "in_1"), secret)
				require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
				if inbox == "shipping" { // one more event, which dead-letters
					a = idempotencytest.Deliver(h, event(t, "evt_"+inbox+"_2", "invoice.payment_failed", "in_2"), secret)
					require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
					n, err := in.WorkDue(t.Context())
					require.NoError(t, err)
					require.Equal(t, 2, n)
				}
			}

			scrape := func() string {
				t.Helper()
				resp, err := http.Get(srv.URL)
				require.NoError(t, err)
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, "the scrape fails:\n%s", body)
				return string(body)
			}
			page := scrape()
			for _, want := range []string{
				`idempotency_inbox_depth{inbox="billing",kind="event",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",state="pending"} 1`,
				`idempotency_inbox_depth{inbox="shipping",kind="event",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",state="pending"} 0`,
				`idempotency_inbox_depth{inbox="shipping",kind="event",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",state="dead_letter"} 1`,
				`idempotency_inbox_running{inbox="billing",`,
				`idempotency_inbox_running{inbox="shipping",`,
				`idempotency_inbox_oldest_pending_age_seconds{inbox="billing",`,
				`idempotency_inbox_oldest_pending_age_seconds{inbox="shipping",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 0`,
				`idempotency_inbox_last_attempt_age_seconds{inbox="shipping",`,
				`idempotency_deliveries_total{inbox="billing",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",outcome="queued",status="200"} 1`,
				`idempotency_deliveries_total{inbox="shipping",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",outcome="queued",status="200"} 2`,
				`idempotency_dead_letters_total{inbox="billing",kind="event",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 0`,
				`idempotency_dead_letters_total{inbox="shipping",kind="event",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version=""} 1`,
				`idempotency_attempts_total{inbox="shipping",kind="event",otel_scope_name="` + idempotencyotel.ScopeName + `",otel_scope_schema_url="",otel_scope_version="",outcome="processed",state="processed"} 1`,
			} {
				require.Contains(t, page, want)
			}
			require.NotContains(t, page, `idempotency_inbox_last_attempt_age_seconds{inbox="billing",`, "billing attempted nothing")
			require.NotContains(t, page, `idempotency_attempts_total{inbox="billing",`)
			for _, l := range strings.Split(page, "\n") {
				if strings.HasPrefix(l, "idempotency_") {
					require.Contains(t, l, `{inbox="`, "every series names its inbox: %s", l)
				}
			}

			require.NoError(t, regs["billing"].Unregister())
			page = scrape()
			require.NotContains(t, page, `idempotency_inbox_depth{inbox="billing",`, "unregistered")
			require.NotContains(t, page, `idempotency_inbox_running{inbox="billing",`, "unregistered")
			require.Contains(t, page, `idempotency_inbox_depth{inbox="shipping",`)
			require.Contains(t, page, `idempotency_inbox_running{inbox="shipping",`)
		})
	}
}

// TestConfigAttributesRefused: New refuses an attribute with no key or no
// value, a key given twice, and one of the metrics' or the spans' own
// keys, which would replace the value the instrument or the span
// records, naming it.
func TestConfigAttributesRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		attrs []attribute.KeyValue
		want  string
	}{
		{[]attribute.KeyValue{{Key: "", Value: attribute.StringValue("a")}}, `Config.Attributes: an attribute with no key or no value`},
		{[]attribute.KeyValue{{Key: "inbox"}}, `Config.Attributes: an attribute with no key or no value ("inbox")`},
		{[]attribute.KeyValue{attribute.String("inbox", "a"), attribute.String("inbox", "b")}, `Config.Attributes: "inbox" twice`},
		{[]attribute.KeyValue{attribute.String("outcome", "a")}, `Config.Attributes: "outcome" is an attribute of the metrics' own`},
		{[]attribute.KeyValue{attribute.String("rows", "a")}, `Config.Attributes: "rows" is an attribute of the metrics' own`},
		{[]attribute.KeyValue{attribute.String("messaging.system", "a")}, `Config.Attributes: "messaging.system" is an attribute of the spans' own`},
		{[]attribute.KeyValue{attribute.String("idempotency.outcome", "a")}, `Config.Attributes: "idempotency.outcome" is an attribute of the spans' own`},
		{[]attribute.KeyValue{attribute.String("http.route", "a")}, `Config.Attributes: "http.route" is an attribute of the spans' own`},
		// Labels a Prometheus exporter writes itself, or that Prometheus
		// reserves: each failed every scrape, or wrote a label twice.
		{[]attribute.KeyValue{attribute.String("otel_scope_name", "a")}, `Config.Attributes: "otel_scope_name" is a label Prometheus`},
		{[]attribute.KeyValue{attribute.String("otel.scope.version", "a")}, `Config.Attributes: "otel.scope.version" is a label Prometheus`},
		{[]attribute.KeyValue{attribute.String("le", "a")}, `Config.Attributes: "le" is a label Prometheus`},
		{[]attribute.KeyValue{attribute.String("quantile", "a")}, `Config.Attributes: "quantile" is a label Prometheus`},
		{[]attribute.KeyValue{attribute.String("__name__", "a")}, `Config.Attributes: "__name__" is a label Prometheus`},
		{[]attribute.KeyValue{attribute.String("inbox.name", "a"), attribute.String("inbox_name", "b")}, `Config.Attributes: "inbox.name" and "inbox_name" are one Prometheus label, inbox_name`},
	} {
		_, err := idempotencyotel.New(idempotencyotel.Config{MeterProvider: sdkmetric.NewMeterProvider(), Attributes: c.attrs})
		require.ErrorContains(t, err, c.want, "%v", c.attrs)
	}
}

// TestObserveInboxRefusesASecondInbox: one Telemetry observes one inbox
// at a time. A second ObserveInbox, of another inbox or of the same one,
// fails naming Config.Attributes and registers nothing: it reported the
// same series as the first, a collection keeping one inbox's gauges (the
// other's pending events read 0, and the alert on them stayed silent).
// Once the first registration is unregistered, another inbox is
// observed. Both stores.
func TestObserveInboxRefusesASecondInbox(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t, nil)
			logger := slog.New(slog.DiscardHandler)
			first, err := idempotency.NewInbox(open(t), handlers(), idempotency.InboxConfig{Logger: logger, Observer: tel.Observer()})
			require.NoError(t, err)
			second, err := idempotency.NewInbox(open(t), handlers(), idempotency.InboxConfig{Logger: logger, Observer: tel.Observer()})
			require.NoError(t, err)
			h, err := first.Handler(idempotency.Config{Secrets: []string{secret}})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, event(t, "evt_first", "invoice.paid", "in_1"), secret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

			reg, err := tel.ObserveInbox(first)
			require.NoError(t, err)
			const pending = "kind=event,state=pending"
			for _, in := range []*idempotency.Inbox{second, first} {
				again, err := tel.ObserveInbox(in)
				require.EqualError(t, err, "idempotencyotel: ObserveInbox: this Telemetry observes an inbox already, whose series another would share: "+
					"make a Telemetry for each inbox, naming it in Config.Attributes, or unregister the first")
				require.Nil(t, again)
				require.Equal(t, 1.0, tel.points(t)["idempotency.inbox.depth"][pending], "the first inbox's pending event, not the second's 0")
			}

			require.NoError(t, reg.Unregister())
			require.NotContains(t, tel.points(t), "idempotency.inbox.depth")
			reg, err = tel.ObserveInbox(second)
			require.NoError(t, err, "the first unregistered")
			require.Equal(t, 0.0, tel.points(t)["idempotency.inbox.depth"][pending])
			require.NoError(t, reg.Unregister())
			require.NoError(t, reg.Unregister(), "a second Unregister, as the SDK's, changes nothing")
			reg, err = tel.ObserveInbox(first)
			require.NoError(t, err)
			require.NoError(t, reg.Unregister())
		})
	}
}

// TestObserveInboxStaleUnregisterFreesNothing: a registration's
// Unregister called again, once the Telemetry observes another inbox
// (a shutdown hook and a deferred Unregister, say), leaves that
// registration as it is: ObserveInbox still refuses a third inbox, whose
// gauges would be the second's series, and the second's are collected.
// Both stores.
func TestObserveInboxStaleUnregisterFreesNothing(t *testing.T) {
	t.Parallel()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tel := newTelemetry(t, nil)
			logger := slog.New(slog.DiscardHandler)
			inboxes := make([]*idempotency.Inbox, 3)
			for i := range inboxes {
				in, err := idempotency.NewInbox(open(t), handlers(), idempotency.InboxConfig{Logger: logger, Observer: tel.Observer()})
				require.NoError(t, err)
				inboxes[i] = in
			}
			h, err := inboxes[1].Handler(idempotency.Config{Secrets: []string{secret}})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, event(t, "evt_second", "invoice.paid", "in_1"), secret)
			require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)

			first, err := tel.ObserveInbox(inboxes[0])
			require.NoError(t, err)
			require.NoError(t, first.Unregister())
			second, err := tel.ObserveInbox(inboxes[1])
			require.NoError(t, err)
			require.NoError(t, first.Unregister(), "again, while the second is registered")

			third, err := tel.ObserveInbox(inboxes[2])
			require.ErrorContains(t, err, "observes an inbox already", "the second is still registered")
			require.Nil(t, third)
			require.Equal(t, 1.0, tel.points(t)["idempotency.inbox.depth"]["kind=event,state=pending"], "the second inbox's pending event")
			require.NoError(t, second.Unregister())
			third, err = tel.ObserveInbox(inboxes[2])
			require.NoError(t, err)
			require.NoError(t, third.Unregister())
		})
	}
}

// TestConfigAttributesOnSpans: Config.Attributes are on the spans too, so
// that a trace's backend tells the two inboxes' attempts apart: the
// delivery's, the attempt's and the fetch's, after the span's own.
func TestConfigAttributesOnSpans(t *testing.T) {
	t.Parallel()
	tel := newTelemetryConfig(t, idempotencyotel.Config{Attributes: []attribute.KeyValue{attribute.String("inbox", "billing")}})
	in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), handlers(), idempotency.InboxConfig{
		MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler), Observer: tel.Observer(),
	})
	require.NoError(t, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{secret}})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, event(t, "evt_spans", "customer.subscription.updated", "sub_ok"), secret)
	require.Equal(t, idempotency.OutcomeQueued, a.Outcome, a.Body)
	n, err := in.WorkDue(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	spans := tel.spans.GetSpans()
	require.Len(t, spans, 3)
	for _, s := range spans {
		requireAttr(t, s, "inbox", "billing")
	}
	require.ElementsMatch(t, []string{"POST", "process customer.subscription.updated", "stripe fetch"},
		[]string{spans[0].Name, spans[1].Name, spans[2].Name})
}
