package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
	"github.com/seed-a84bb619/idempotency/internal/race"
)

// The inbox's two halves on the 5 KB invoice.paid fixture, on both stores:
//
//	go test -run '^$' -bench Inbox -benchmem
//
// BenchmarkInboxIngest times inbox.Handler, one delivery at a time: a new
// event (verify, parse, one insert, answer queued) and a duplicate (the
// same insert finds the id). BenchmarkInboxDrain stores inboxDrainEvents
// events with the timer stopped, then times the workers applying them all:
// Run with the default 8 workers, and WorkDue, one at a time on the
// caller's goroutine. Its ns/event is the time per event; ns/op is the time
// of the whole batch. Each event is about an invoice of its own, so that
// the per-object order does not serialise them, and its *stripe.Invoice
// handler writes a row through PgxTx on PostgreSQL. The PostgreSQL test
// server runs with fsync off.

// inboxDrainEvents is how many events one BenchmarkInboxDrain iteration
// applies: enough for the per-event time to dwarf Run's start, few enough
// for CI's single iteration under -race.
const inboxDrainEvents = 256

// inboxDeliveries returns deliveries from+1 .. from+n of the template, each
// a new event about an invoice of its own, signed now.
func inboxDeliveries(t *deliveryTemplate, from, n int) []signedDelivery {
	out := make([]signedDelivery, n)
	for i := range out {
		p := bytes.Clone(t.payload)
		put := func(end int, v int) {
			d := strconv.Itoa(v)
			copy(p[end-len(d):end], d)
		}
		k := from + i + 1
		put(t.eventAt, k)
		put(t.invoiceAt, k)
		put(t.accountAt, k%1000)
		out[i] = signedDelivery{payload: p, header: idempotencytest.SignatureHeader(p, testSecret, time.Now())}
	}
	return out
}

// inboxBench is an inbox on one store, its webhook handler, and a count of
// the events its handler applied.
type inboxBench struct {
	inbox   *idempotency.Inbox
	h       http.Handler
	applied atomic.Int64
}

// newInboxBench wires an inbox on store whose invoice.paid handler decodes
// a *stripe.Invoice and calls write in the event's transaction.
func newInboxBench(b *testing.B, store idempotency.Store, cfg idempotency.InboxConfig,
	write func(ctx context.Context, tx idempotency.Tx, inv *stripe.Invoice) error) *inboxBench {
	ib := &inboxBench{}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
		if ev.Object.Lines == nil || len(ev.Object.Lines.Data) == 0 {
			return errors.New("decoded nothing")
		}
		if err := write(ctx, tx, ev.Object); err != nil {
			return err
		}
		ib.applied.Add(1)
		return nil
	})
	cfg.Logger = discardLogger()
	in, err := idempotency.NewInbox(store, hs, cfg)
	require.NoError(b, err)
	h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
	require.NoError(b, err)
	ib.inbox, ib.h = in, h
	return ib
}

// waitApplied returns once n events were applied, failing if Run
// returns (on done) first.
func (ib *inboxBench) waitApplied(b *testing.B, n int64, done <-chan error) {
	for ib.applied.Load() < n {
		select {
		case err := <-done:
			b.Fatalf("Run returned early: %v", err)
		case <-time.After(100 * time.Microsecond):
		}
	}
}

// memoryInvoiceWrite claims the invoice as a guard: the memory store's
// stand-in for a row.
func memoryInvoiceWrite(ctx context.Context, tx idempotency.Tx, inv *stripe.Invoice) error {
	_, err := tx.Guard(ctx, "invoice-credit", inv.ID)
	return err
}

// pgInvoiceWrite credits the invoice's account in the event's transaction.
func pgInvoiceWrite(ctx context.Context, tx idempotency.Tx, inv *stripe.Invoice) error {
	_, err := idempotency.PgxTx(tx).Exec(ctx,
		`INSERT INTO counters (name, value) VALUES ($1, 1) ON CONFLICT (name) DO UPDATE SET value = counters.value + 1`,
		inv.Metadata["account_id"])
	return err
}

// newInboxPgStore is a migrated PgxStore in a fresh schema with the
// counters table pgInvoiceWrite writes. The benchmarks never empty it:
// TRUNCATE would invalidate every connection's cached plans, which a
// running service does not pay for each batch; they send new event ids
// instead.
func newInboxPgStore(b *testing.B) *idempotency.PgxStore {
	db := newPgDB(b)
	s, err := idempotency.NewPgxStore(db.Pool, idempotency.PgxConfig{Schema: db.Schema})
	require.NoError(b, err)
	require.NoError(b, s.Migrate(b.Context()))
	_, err = db.Pool.Exec(b.Context(), `CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL)`)
	require.NoError(b, err)
	return s
}

// deliverInbox sends d to h and fails unless the answer is 200 with outcome want.
func deliverInbox(b *testing.B, h http.Handler, d signedDelivery, req *http.Request, body *bytes.Reader, w *discardWriter) {
	if status := serveInbox(h, d, req, body, w); status != http.StatusOK {
		b.Fatalf("status %d", status)
	}
}

// serveInbox sends d to h and returns the answer's status; it may run on
// any goroutine.
func serveInbox(h http.Handler, d signedDelivery, req *http.Request, body *bytes.Reader, w *discardWriter) int {
	w.status = 0
	h.ServeHTTP(w, d.request(req, body))
	return w.status
}

func BenchmarkInboxIngest(b *testing.B) {
	tmpl := newDeliveryTemplate(b)
	const batch = 2048
	stores := []struct {
		name string
		open func(b *testing.B) http.Handler
	}{
		{"memory", func(b *testing.B) http.Handler {
			return newInboxBench(b, idempotency.NewMemoryStore(), idempotency.InboxConfig{}, memoryInvoiceWrite).h
		}},
		{"postgres", func(b *testing.B) http.Handler {
			return newInboxBench(b, newInboxPgStore(b), idempotency.InboxConfig{}, pgInvoiceWrite).h
		}},
	}
	for _, s := range stores {
		b.Run(s.name+"/new", func(b *testing.B) {
			h := s.open(b)
			ds := inboxDeliveries(tmpl, 0, batch)
			req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
			require.NoError(b, err)
			var body bytes.Reader
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.SetBytes(int64(len(ds[0].payload)))
			sent, i := 0, 0
			for b.Loop() {
				if i == len(ds) {
					b.StopTimer()
					ds, i = inboxDeliveries(tmpl, sent, batch), 0
					b.StartTimer()
				}
				deliverInbox(b, h, ds[i], req, &body, w)
				sent, i = sent+1, i+1
			}
		})
		b.Run(s.name+"/duplicate", func(b *testing.B) {
			h := s.open(b)
			d := inboxDeliveries(tmpl, 0, 1)[0]
			req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
			require.NoError(b, err)
			var body bytes.Reader
			w := &discardWriter{h: http.Header{}}
			deliverInbox(b, h, d, req, &body, w)
			b.ReportAllocs()
			b.SetBytes(int64(len(d.payload)))
			for b.Loop() {
				deliverInbox(b, h, d, req, &body, w)
			}
		})
	}
}

// drainConfig is the drain benchmarks' inbox: every worker applies,
// though the events were delivered through its Handler just before the
// timer starts (IngestWorkers would otherwise hold half of them back for
// the first 250 ms).
var drainConfig = idempotency.InboxConfig{Workers: idempotency.DefaultWorkers, IngestWorkers: idempotency.DefaultWorkers}

func BenchmarkInboxDrain(b *testing.B) {
	tmpl := newDeliveryTemplate(b)
	stores := []struct {
		name string
		// open returns a func that makes an inbox with nothing due; the
		// memory store's is new each time (BenchmarkInboxDrainBesideFinished
		// times it beside the events it keeps).
		open func(b *testing.B) func() *inboxBench
	}{
		{"memory", func(b *testing.B) func() *inboxBench {
			return func() *inboxBench {
				return newInboxBench(b, idempotency.NewMemoryStore(), drainConfig, memoryInvoiceWrite)
			}
		}},
		{"postgres", func(b *testing.B) func() *inboxBench {
			store := newInboxPgStore(b)
			return func() *inboxBench { return newInboxBench(b, store, drainConfig, pgInvoiceWrite) }
		}},
	}
	drains := []struct {
		name  string
		drain func(b *testing.B, ib *inboxBench)
	}{
		{"Run", func(b *testing.B, ib *inboxBench) {
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan error, 1)
			go func() { done <- ib.inbox.Run(ctx) }()
			ib.waitApplied(b, inboxDrainEvents, done)
			cancel()
			require.NoError(b, <-done)
		}},
		{"WorkDue", func(b *testing.B, ib *inboxBench) {
			n, err := ib.inbox.WorkDue(b.Context())
			require.NoError(b, err)
			require.Equal(b, inboxDrainEvents, n)
		}},
	}
	for _, s := range stores {
		for _, d := range drains {
			b.Run(s.name+"/"+d.name, func(b *testing.B) {
				fresh := s.open(b)
				req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
				require.NoError(b, err)
				var body bytes.Reader
				w := &discardWriter{h: http.Header{}}
				b.ReportAllocs()
				var elapsed time.Duration
				iterations := 0
				for b.Loop() {
					b.StopTimer()
					ib := fresh()
					for _, dl := range inboxDeliveries(tmpl, iterations*inboxDrainEvents, inboxDrainEvents) {
						deliverInbox(b, ib.h, dl, req, &body, w)
					}
					iterations++
					start := time.Now()
					b.StartTimer()
					d.drain(b, ib)
					b.StopTimer()
					elapsed += time.Since(start)
					require.EqualValues(b, inboxDrainEvents, ib.applied.Load(), "events applied")
					st, err := ib.inbox.Stats(b.Context())
					require.NoError(b, err)
					require.Zero(b, st.Counts[idempotency.InboxPending]+st.Counts[idempotency.InboxProcessing]+st.Counts[idempotency.InboxFailed], "events left")
					b.StartTimer()
				}
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(iterations*inboxDrainEvents), "ns/event")
			})
		}
	}
}

// BenchmarkInboxBurst sends inboxBurstEvents new events through the inbox
// Handler from 32 goroutines while Run's 8 workers apply them, on
// PostgreSQL, with InboxConfig.IngestWorkers at its default (4 of the 8
// apply while deliveries come) and at 8 (the limit off). It reports the
// time per delivery until the last was acknowledged (ns/ack) and until the
// last was applied (ns/event): the over-HTTP comparison's acknowledged and
// end-to-end figures, in process and on the test server (fsync off).
func BenchmarkInboxBurst(b *testing.B) {
	const inboxBurstEvents, senders = 1024, 32
	tmpl := newDeliveryTemplate(b)
	store := newInboxPgStore(b)
	sent := 0
	for _, iw := range []int{0, idempotency.DefaultWorkers} {
		name := "default"
		if iw != 0 {
			name = strconv.Itoa(iw)
		}
		b.Run("postgres/ingest-workers="+name, func(b *testing.B) {
			var acked, applied time.Duration
			iterations := 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				ib := newInboxBench(b, store, idempotency.InboxConfig{IngestWorkers: iw}, pgInvoiceWrite)
				ds := inboxDeliveries(tmpl, sent, inboxBurstEvents)
				sent += inboxBurstEvents
				ctx, cancel := context.WithCancel(b.Context())
				done := make(chan error, 1)
				go func() { done <- ib.inbox.Run(ctx) }()
				var next, failed atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				b.StartTimer()
				for range senders {
					wg.Go(func() {
						req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
						if err != nil {
							panic(err)
						}
						var body bytes.Reader
						w := &discardWriter{h: http.Header{}}
						for i := next.Add(1) - 1; i < inboxBurstEvents; i = next.Add(1) - 1 {
							if serveInbox(ib.h, ds[i], req, &body, w) != http.StatusOK {
								failed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				acked += time.Since(start)
				ib.waitApplied(b, inboxBurstEvents, done)
				applied += time.Since(start)
				b.StopTimer()
				cancel()
				require.NoError(b, <-done)
				require.Zero(b, failed.Load(), "deliveries not answered 200")
				iterations++
				b.StartTimer()
			}
			b.ReportMetric(float64(acked.Nanoseconds())/float64(iterations*inboxBurstEvents), "ns/ack")
			b.ReportMetric(float64(applied.Nanoseconds())/float64(iterations*inboxBurstEvents), "ns/event")
		})
	}
}

// BenchmarkInboxDrainBesideFinished times WorkDue applying
// inboxBacklogEvents new events on a MemoryStore that keeps 0, 10,000 or
// 50,000 finished events beside them (ignored ones, stored with the timer
// stopped), as a service's tests and local load runs keep what they
// applied until Prune: the lease is to cost the same whatever the store
// keeps finished. Its ns/event is the time per event applied. The events
// applied are forgotten between iterations, so that every iteration finds
// the same rows.
func BenchmarkInboxDrainBesideFinished(b *testing.B) {
	const inboxBacklogEvents = 1000
	tmpl := newDeliveryTemplate(b)
	req, err := http.NewRequest(http.MethodPost, "/webhook", nil)
	require.NoError(b, err)
	var body bytes.Reader
	w := &discardWriter{h: http.Header{}}
	sizes := []int{0, 10_000, 50_000}
	if race.Enabled { // a run of the code, not a figure: see internal/race
		sizes = []int{0, 1_000, 5_000}
	}
	for _, finished := range sizes {
		b.Run("memory/finished="+strconv.Itoa(finished), func(b *testing.B) {
			store := idempotency.NewMemoryStore()
			// Recorded as an inbox with no invoice.paid handler records
			// them (RecordIgnored), without the HTTP request: 50,000
			// deliveries cost a quarter of a minute under -race.
			for k := 1; k <= finished; k++ {
				require.NoError(b, idempotency.MemoryRecordIgnored(b.Context(), store, inboxEventID(k), "invoice.paid", "in_finished_"+strconv.Itoa(k), tmpl.payload, time.Now()))
			}
			ib := newInboxBench(b, store, drainConfig, memoryInvoiceWrite)
			b.ReportAllocs()
			var elapsed time.Duration
			iterations := 0
			for b.Loop() {
				b.StopTimer()
				ib.applied.Store(0)
				ds := inboxDeliveries(tmpl, finished, inboxBacklogEvents)
				for _, dl := range ds {
					deliverInbox(b, ib.h, dl, req, &body, w)
				}
				iterations++
				start := time.Now()
				b.StartTimer()
				n, err := ib.inbox.WorkDue(b.Context())
				b.StopTimer()
				elapsed += time.Since(start)
				require.NoError(b, err)
				require.Equal(b, inboxBacklogEvents, n)
				require.EqualValues(b, inboxBacklogEvents, ib.applied.Load(), "events applied")
				for k := finished + 1; k <= finished+inboxBacklogEvents; k++ {
					forgot, err := store.Forget(b.Context(), inboxEventID(k))
					require.NoError(b, err)
					require.True(b, forgot)
				}
				st, err := ib.inbox.Stats(b.Context())
				require.NoError(b, err)
				require.Equal(b, finished, st.Counts[idempotency.InboxIgnored], "finished events kept")
				b.StartTimer()
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(iterations*inboxBacklogEvents), "ns/event")
		})
	}
}

// inboxEventID is the id of delivery k of inboxDeliveries.
func inboxEventID(k int) string {
	d := strconv.Itoa(k)
	return evtPlaceholder[:len(evtPlaceholder)-len(d)] + d
}
