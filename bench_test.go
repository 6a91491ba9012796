package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency"
)

// The benchmarks compare, on one 5 KB invoice.paid event, the handler's
// request path with what a hand-written receiver spends in stripe-go alone:
//
//	go test -run '^$' -bench 'Webhook' -benchmem
//
// Each processed delivery carries a new event id and is signed in the loop,
// as a sender would: the signing costs about as much as the verification.

// benchDelivery is one reusable request: a payload whose event id is
// rewritten in place for each iteration, and its signature.
type benchDelivery struct {
	payload []byte
	idAt    int // offset of the event id's digits
	req     *http.Request
	body    bytes.Reader
	n       int
}

func newBenchDelivery(b *testing.B, metadata map[string]string) *benchDelivery {
	payload := eventPayload(b, "invoice.paid", "evt_000000000000000000000000", metadata)
	d := &benchDelivery{payload: payload, idAt: bytes.Index(payload, []byte("evt_000")) + 4}
	req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
	require.NoError(b, err)
	d.req = req
	return d
}

// next returns the request for a delivery of event n (a duplicate when n
// repeats).
func (d *benchDelivery) next(n int) *http.Request {
	digits := strconv.Itoa(n)
	copy(d.payload[d.idAt+24-len(digits):d.idAt+24], digits)
	d.body.Reset(d.payload)
	d.req.Body = readCloser{&d.body}
	d.req.ContentLength = int64(len(d.payload))
	d.req.Header.Set("Stripe-Signature", idempotency.SignatureHeader(d.payload, testSecret, time.Now()))
	return d.req
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }

func benchHandler(b *testing.B, store idempotency.Store, register func(hs *idempotency.Handlers)) http.Handler {
	hs := idempotency.NewHandlers()
	register(hs)
	h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(b, err)
	return h
}

func onInvoice(hs *idempotency.Handlers) {
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.Object.Metadata["account_id"] == "" {
			return fmt.Errorf("decoded nothing")
		}
		_, err := tx.Guard(ctx, "invoice-credit", ev.ID)
		return err
	})
}

func onSlimInvoice(hs *idempotency.Handlers) {
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[slimInvoice]) error {
		if ev.Object.Metadata["account_id"] == "" {
			return fmt.Errorf("decoded nothing")
		}
		_, err := tx.Guard(ctx, "invoice-credit", ev.ID)
		return err
	})
}

func serveBench(b *testing.B, h http.Handler, d *benchDelivery, want int, id func(i int) int) {
	b.ReportAllocs()
	b.SetBytes(int64(len(d.payload)))
	w := &discardWriter{h: http.Header{}}
	i := 0
	for b.Loop() {
		w.status = 0
		h.ServeHTTP(w, d.next(id(i)))
		if w.status != want {
			b.Fatalf("status %d, want %d", w.status, want)
		}
		i++
	}
}

func BenchmarkWebhook(b *testing.B) {
	md := map[string]string{"account_id": "acct_bench"}

	b.Run("stripe-go/ConstructEvent+Invoice", func(b *testing.B) {
		d := newBenchDelivery(b, md)
		b.ReportAllocs()
		b.SetBytes(int64(len(d.payload)))
		i := 0
		for b.Loop() {
			req := d.next(i)
			ev, err := webhook.ConstructEventWithOptions(d.payload, req.Header.Get("Stripe-Signature"), testSecret,
				webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
			if err != nil {
				b.Fatal(err)
			}
			var inv stripe.Invoice
			if err := json.Unmarshal(ev.Data.Raw, &inv); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("memory/processed/stripe.Invoice", func(b *testing.B) {
		serveBench(b, benchHandler(b, idempotency.NewMemoryStore(), onInvoice), newBenchDelivery(b, md), 200, func(i int) int { return i })
	})
	b.Run("memory/processed/slim", func(b *testing.B) {
		serveBench(b, benchHandler(b, idempotency.NewMemoryStore(), onSlimInvoice), newBenchDelivery(b, md), 200, func(i int) int { return i })
	})
	b.Run("memory/duplicate", func(b *testing.B) {
		serveBench(b, benchHandler(b, idempotency.NewMemoryStore(), onInvoice), newBenchDelivery(b, md), 200, func(int) int { return 1 })
	})
	b.Run("memory/rejected-signature", func(b *testing.B) {
		h := benchHandler(b, idempotency.NewMemoryStore(), onInvoice)
		d := newBenchDelivery(b, md)
		b.ReportAllocs()
		w := &discardWriter{h: http.Header{}}
		for b.Loop() {
			req := d.next(1)
			req.Header.Set("Stripe-Signature", "t=1,v1=00")
			h.ServeHTTP(w, req)
		}
	})
}

// BenchmarkPgxStore measures Store.Run on PostgreSQL: a new event (begin,
// claim, guard, commit), a duplicate (begin, claim, rollback), and
// duplicates of one event from parallel goroutines.
func BenchmarkPgxStore(b *testing.B) {
	apply := func(ctx context.Context, tx idempotency.Tx) error {
		_, err := tx.Guard(ctx, "invoice-credit", tx.EventID())
		return err
	}
	newStore := func(b *testing.B) *idempotency.PgxStore {
		db := newPgDB(b)
		s, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
		require.NoError(b, err)
		require.NoError(b, s.Migrate(b.Context()))
		return s
	}
	run := func(b *testing.B, s *idempotency.PgxStore, id string, want idempotency.Outcome) {
		out, err := s.Run(b.Context(), idempotency.Claim{EventID: id, EventType: "invoice.paid"}, apply)
		if err != nil || out != want {
			b.Fatalf("Run(%s) = %s, %v; want %s", id, out, err, want)
		}
	}
	b.Run("processed", func(b *testing.B) {
		s := newStore(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			run(b, s, "evt_"+strconv.Itoa(i), idempotency.OutcomeProcessed)
			i++
		}
	})
	b.Run("duplicate", func(b *testing.B) {
		s := newStore(b)
		run(b, s, "evt_dup", idempotency.OutcomeProcessed)
		b.ReportAllocs()
		for b.Loop() {
			run(b, s, "evt_dup", idempotency.OutcomeDuplicate)
		}
	})
	b.Run("concurrent-duplicates", func(b *testing.B) {
		s := newStore(b)
		run(b, s, "evt_dup", idempotency.OutcomeProcessed)
		b.ReportAllocs()
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				run(b, s, "evt_dup", idempotency.OutcomeDuplicate)
			}
		})
	})
}
