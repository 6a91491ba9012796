package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The benchmarks compare, on the 5 KB invoice.paid fixture as Stripe sends
// it, the handler's request path with what a hand-written receiver spends in
// stripe-go alone:
//
//	go test -run '^$' -bench 'Webhook' -benchmem
//
// The deliveries are signed before the timer runs, as a sender signs them:
// the loop measures only the receiver. Processed deliveries carry a new event
// id each; a fresh store takes over every len(deliveries) iterations.

// signedDelivery is one request body and its Stripe-Signature header.
type signedDelivery struct {
	payload []byte
	header  string
}

// signedDeliveries returns n copies of the fixture with distinct event ids
// of the fixture's length, each signed now.
func signedDeliveries(b *testing.B, n int) []signedDelivery {
	raw := fixture(b, "invoice.paid")
	id := []byte("evt_1S2kq5B7WZ01zgkWbX2cNw7Y")
	at := bytes.Index(raw, id)
	require.GreaterOrEqual(b, at, 0)
	out := make([]signedDelivery, n)
	for i := range out {
		p := bytes.Clone(raw)
		digits := strconv.Itoa(i)
		copy(p[at+len(id)-len(digits):], digits)
		out[i] = signedDelivery{payload: p, header: idempotencytest.SignatureHeader(p, testSecret, time.Now())}
	}
	return out
}

// request fills req with d, reusing its body reader.
func (d signedDelivery) request(req *http.Request, body *bytes.Reader) *http.Request {
	body.Reset(d.payload)
	req.Body = io.NopCloser(body)
	req.ContentLength = int64(len(d.payload))
	req.Header.Set("Stripe-Signature", d.header)
	return req
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(p), nil
}
func (w *discardWriter) WriteHeader(status int) { w.status = status }

func benchHandler(b *testing.B, register func(hs *idempotency.Handlers)) http.Handler {
	hs := idempotency.NewHandlers()
	register(hs)
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(b, err)
	return h
}

func onInvoice(hs *idempotency.Handlers) {
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.Object.Lines == nil || len(ev.Object.Lines.Data) == 0 {
			return errors.New("decoded nothing")
		}
		_, err := tx.Guard(ctx, "invoice-credit", ev.ID)
		return err
	})
}

func onSlimInvoice(hs *idempotency.Handlers) {
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[slimInvoice]) error {
		if len(ev.Object.Lines.Data) == 0 {
			return errors.New("decoded nothing")
		}
		_, err := tx.Guard(ctx, "invoice-credit", ev.ID)
		return err
	})
}

// serveBench delivers ds in turn; with fresh set, each pass over ds goes to
// a new handler, so that every delivery is new.
func serveBench(b *testing.B, ds []signedDelivery, newHandler func() http.Handler, fresh bool) {
	h := newHandler()
	req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
	require.NoError(b, err)
	var body bytes.Reader
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.SetBytes(int64(len(ds[0].payload)))
	i := 0
	for b.Loop() {
		if fresh && i == len(ds) {
			b.StopTimer()
			h, i = newHandler(), 0
			b.StartTimer()
		}
		w.status = 0
		h.ServeHTTP(w, ds[i%len(ds)].request(req, &body))
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
		i++
	}
}

func BenchmarkWebhook(b *testing.B) {
	ds := signedDeliveries(b, 2048)

	b.Run("stripe-go/ConstructEvent+Invoice", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(ds[0].payload)))
		i := 0
		for b.Loop() {
			d := ds[i%len(ds)]
			ev, err := webhook.ConstructEventWithOptions(d.payload, d.header, testSecret,
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
		serveBench(b, ds, func() http.Handler { return benchHandler(b, onInvoice) }, true)
	})
	b.Run("memory/processed/slim", func(b *testing.B) {
		serveBench(b, ds, func() http.Handler { return benchHandler(b, onSlimInvoice) }, true)
	})
	b.Run("memory/duplicate", func(b *testing.B) {
		h := benchHandler(b, onInvoice)
		serveBench(b, ds[:1], func() http.Handler { return h }, false)
	})
	b.Run("memory/rejected-signature", func(b *testing.B) {
		bad := []signedDelivery{{payload: ds[0].payload, header: "t=1,v1=00"}}
		h := benchHandler(b, onInvoice)
		req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
		require.NoError(b, err)
		var body bytes.Reader
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, bad[0].request(req, &body))
		}
	})
}

// BenchmarkPgxStore measures Store.Run on PostgreSQL: a new event (begin,
// claim and savepoint in one round trip, a guard, commit), a duplicate, and
// duplicates of one event from parallel goroutines. The duplicate runs
// come twice: answered from the ids the store remembers, and with that
// memory off, from the database (a replica that has not seen the event).
func BenchmarkPgxStore(b *testing.B) {
	apply := func(ctx context.Context, tx idempotency.Tx) error {
		_, err := tx.Guard(ctx, "invoice-credit", tx.EventID())
		return err
	}
	newStore := func(b *testing.B, cfg idempotency.PgxConfig) *idempotency.PgxStore {
		db := newPgDB(b)
		cfg.Schema = db.Schema
		s, err := idempotency.NewPgxStore(db.Pool, cfg)
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
		s := newStore(b, idempotency.PgxConfig{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			run(b, s, "evt_"+strconv.Itoa(i), idempotency.OutcomeProcessed)
			i++
		}
	})
	for name, cfg := range map[string]idempotency.PgxConfig{"remembered": {}, "database": {RecentClaims: -1}} {
		b.Run("duplicate/"+name, func(b *testing.B) {
			s := newStore(b, cfg)
			run(b, s, "evt_dup", idempotency.OutcomeProcessed)
			b.ReportAllocs()
			for b.Loop() {
				run(b, s, "evt_dup", idempotency.OutcomeDuplicate)
			}
		})
		b.Run("concurrent-duplicates/"+name, func(b *testing.B) {
			s := newStore(b, cfg)
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
}
