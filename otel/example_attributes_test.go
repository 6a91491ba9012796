package idempotencyotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// Two inboxes in one process, each on a store of its own (two schemas of
// one database, in production), each observed by a Telemetry of its own
// on the one MeterProvider, Config.Attributes naming the inbox: every
// series carries it, so that the gauges of one are not the other's.
func ExampleConfig_attributes() {
	reader := sdkmetric.NewManualReader() // in production, the Prometheus exporter
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	quiet := slog.New(slog.DiscardHandler)
	for inbox, events := range map[string]int{"billing": 1, "shipping": 2} {
		tel, err := idempotencyotel.New(idempotencyotel.Config{MeterProvider: provider, Logger: quiet,
			Attributes: []attribute.KeyValue{attribute.String("inbox", inbox)}})
		if err != nil {
			log.Fatal(err)
		}
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[json.RawMessage]) error { return nil })
		in, err := idempotency.NewInbox(idempotency.NewMemoryStore(), hs, idempotency.InboxConfig{Observer: tel.Observer(), Logger: quiet})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := tel.ObserveInbox(in); err != nil { // Unregister the registration it returns at shutdown
			log.Fatal(err)
		}
		h, err := in.Handler(idempotency.Config{Secrets: []string{"whsec_test"}})
		if err != nil {
			log.Fatal(err)
		}
		for i := range events {
			idempotencytest.Deliver(h, []byte(fmt.Sprintf(`{"id":"evt_%s_%d","object":"event","type":"invoice.paid","created":1756742400,`+
				`"data":{"object":{"id":"in_%d","object":"invoice"}}}`, inbox, i, i)), "whsec_test")
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "idempotency.inbox.depth" {
			continue
		}
		for _, p := range m.Data.(metricdata.Gauge[int64]).DataPoints {
			if state, _ := p.Attributes.Value("state"); state.AsString() == "pending" {
				inbox, _ := p.Attributes.Value("inbox")
				kind, _ := p.Attributes.Value("kind")
				lines = append(lines, fmt.Sprintf("inbox=%s kind=%s pending=%d", inbox.AsString(), kind.AsString(), p.Value))
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// inbox=billing kind=event pending=1
	// inbox=billing kind=task pending=0
	// inbox=shipping kind=event pending=2
	// inbox=shipping kind=task pending=0
}
