package idempotencyotel_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	idempotencyotel "github.com/seed-a84bb619/idempotency/otel"
)

// BenchmarkDelivery measures a new processed delivery on the memory store
// without an Observer and with Telemetry on the SDK (metrics aggregated in
// memory, every span sampled and ended, none exported): what observing
// adds to a delivery.
func BenchmarkDelivery(b *testing.B) {
	observers := map[string]func(b *testing.B) *idempotency.Observer{
		"none": func(*testing.B) *idempotency.Observer { return nil },
		"otel-sdk": func(b *testing.B) *idempotency.Observer {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			tp := sdktrace.NewTracerProvider()
			tel, err := idempotencyotel.New(idempotencyotel.Config{MeterProvider: mp, TracerProvider: tp})
			require.NoError(b, err)
			return tel.Observer()
		},
	}
	for _, name := range []string{"none", "otel-sdk"} {
		b.Run(name, func(b *testing.B) {
			// A new store each pass over the payloads: every delivery is new.
			newHandler := func() *idempotency.Handler {
				h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), handlers(), idempotency.Config{
					Secrets: []string{secret}, Logger: slog.New(slog.DiscardHandler), Observer: observers[name](b),
				})
				require.NoError(b, err)
				return h
			}
			h := newHandler()
			// Signed ahead: the loop measures the Handler alone.
			const n = 4096
			payloads := make([][]byte, n)
			headers := make([]string, n)
			now := time.Now()
			for i := range n {
				payloads[i] = event(b, fmt.Sprintf("evt_bench_%d", i), "invoice.paid", "in_1")
				headers[i] = idempotencytest.SignatureHeader(payloads[i], secret, now)
			}
			req := httptest.NewRequest(http.MethodPost, "/", nil)
			var body bytes.Reader
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == n {
					b.StopTimer()
					h, i = newHandler(), 0
					b.StartTimer()
				}
				body.Reset(payloads[i])
				req.Body, req.ContentLength = readCloser{&body}, int64(len(payloads[i]))
				req.Header.Set("Stripe-Signature", headers[i])
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
				i++
			}
		})
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
