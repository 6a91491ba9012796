package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/seed-a84bb619/idempotency"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// metrics serves the service's metrics for Prometheus on an address of
// their own (-metrics-addr): idempotencyotel's instruments on an
// OpenTelemetry meter read by OpenTelemetry's Prometheus exporter. A nil
// *metrics is off, and its methods do nothing.
type metrics struct {
	tel      *idempotencyotel.Telemetry
	provider *sdkmetric.MeterProvider
	srv      *http.Server
	inbox    interface{ Unregister() error } // the inbox's gauges, once registered
}

// startMetrics serves GET /metrics on addr, and returns nil when addr is
// empty.
func startMetrics(addr string, logger *slog.Logger) (*metrics, error) {
	if addr == "" {
		return nil, nil
	}
	// A registry of its own: the exporter's metrics alone (no Go runtime
	// collector), nothing another package registered globally.
	reg := prometheus.NewRegistry()
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(reg))
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	tel, err := idempotencyotel.New(idempotencyotel.Config{MeterProvider: provider, Logger: logger})
	if err != nil {
		return nil, errors.Join(err, provider.Shutdown(context.Background()))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, errors.Join(err, provider.Shutdown(context.Background()))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &metrics{tel: tel, provider: provider, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = m.srv.Serve(ln) }()
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return m, nil
}

// observer is the Observer of the webhook and the inbox; nil when off.
func (m *metrics) observer() *idempotency.Observer {
	if m == nil {
		return nil
	}
	return m.tel.Observer()
}

// observeInbox adds the gauges of in's depth, oldest pending event and
// last attempt.
func (m *metrics) observeInbox(in *idempotency.Inbox) error {
	if m == nil {
		return nil
	}
	reg, err := m.tel.ObserveInbox(in)
	m.inbox = reg
	return err
}

// pruner is p, counting what it prunes in the metrics when they are on.
func (m *metrics) pruner(p idempotency.Pruner) idempotency.Pruner {
	if m == nil {
		return p
	}
	return m.tel.Pruner(p)
}

// close stops serving metrics: a scrape in flight gets 5 seconds.
func (m *metrics) close() {
	if m == nil {
		return
	}
	if m.inbox != nil {
		_ = m.inbox.Unregister() // before the store closes: no scrape asks it for stats
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	_ = m.provider.Shutdown(ctx)
}
