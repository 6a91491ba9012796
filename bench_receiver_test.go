package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// BenchmarkReceiver runs the library's handler and a hand-written receiver
// of the classic pattern side by side on PostgreSQL, in one run:
//
//	go test -run '^$' -bench Receiver -benchmem
//
// The hand-written one is what a careful engineer writes with stripe-go and
// pgx alone: ConstructEvent, then in one transaction claim the event id,
// claim the invoice id, and credit the account. Both get the same signed
// 5 KB invoice.paid deliveries from parallel goroutines (20% duplicates, 5%
// twin events for an invoice already sent) and must end with the same
// credits. ns/op is the machine's time per delivery: its inverse is the
// throughput. The test server runs with fsync off, unlike
// ../shared/bench/compare.sh, which measures the example server over HTTP
// with PostgreSQL's default durability.
func BenchmarkReceiver(b *testing.B) {
	b.Run("handwritten", func(b *testing.B) {
		benchReceiver(b, func(db *pgxpool.Pool) http.Handler { return &handwritten{db: db} })
	})
	b.Run("library", func(b *testing.B) {
		benchReceiver(b, func(db *pgxpool.Pool) http.Handler {
			store, err := idempotency.NewPgxStore(db, idempotency.PgxConfig{Schema: currentSchema(b, db)})
			require.NoError(b, err)
			require.NoError(b, store.Migrate(b.Context()))
			hs := idempotency.NewHandlers()
			grant := idempotency.NewAction(hs, idempotency.ActionSpec{
				Name: "credit-invoice", Key: "invoice id", Owners: []string{"invoice.paid"}, KeyIsObjectID: true,
			}, func(ctx context.Context, tx idempotency.Tx, _ string, account string) error {
				return credit(ctx, idempotency.PgxTx(tx), account)
			})
			idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
				_, err := grant.Do(ctx, tx, ev.Object.ID, ev.Object.Metadata["account_id"])
				return err
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(b, err)
			return h
		})
	})
}

func currentSchema(b *testing.B, db *pgxpool.Pool) string {
	var s string
	require.NoError(b, db.QueryRow(b.Context(), `SELECT current_schema()`).Scan(&s))
	return s
}

// credit adds 100 credits to the account, creating it.
func credit(ctx context.Context, tx pgx.Tx, account string) error {
	tag, err := tx.Exec(ctx, `UPDATE accounts SET credits = credits + 100 WHERE id = $1`, account)
	if err != nil || tag.RowsAffected() == 1 {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO accounts (id, credits) VALUES ($1, 100)
ON CONFLICT (id) DO UPDATE SET credits = accounts.credits + 100`, account)
	return err
}

func benchReceiver(b *testing.B, newHandler func(*pgxpool.Pool) http.Handler) {
	db := newPgDB(b)
	_, err := db.Pool.Exec(b.Context(), `CREATE TABLE accounts (id text PRIMARY KEY, credits bigint NOT NULL DEFAULT 0);
CREATE TABLE events (event_id text PRIMARY KEY, type text NOT NULL, processed_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE invoice_payments (invoice_id text PRIMARY KEY, account_id text NOT NULL)`)
	require.NoError(b, err)
	h := newHandler(db.Pool)
	tmpl := newDeliveryTemplate(b)

	var next atomic.Int64
	var failed atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			req := tmpl.delivery(next.Add(1))
			w.status = 0
			h.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if hw, ok := h.(*handwritten); ok && failed.Load() > 0 {
		b.Logf("last error: %v", hw.lastErr.Load())
	}
	require.Zero(b, failed.Load(), "deliveries answered other than 200")
	// Every distinct invoice sent credited 100, once.
	n := next.Load()
	invoices := map[int64]bool{}
	for i := int64(1); i <= n; i++ {
		invoices[invoiceOf(eventOf(i))] = true
	}
	var credits int64
	require.NoError(b, db.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(credits), 0) FROM accounts`).Scan(&credits))
	require.Equal(b, 100*int64(len(invoices)), credits)
}

// The delivery mix: delivery n sends event eventOf(n), about invoice
// invoiceOf(event). Every fifth delivery repeats an earlier event (a
// duplicate); one event in twenty is a twin, about the invoice of an
// earlier event.
func eventOf(n int64) int64 {
	if n%5 == 0 && n > 5 {
		return n - 3
	}
	return n
}

func invoiceOf(event int64) int64 {
	if event%20 == 1 && event > 20 {
		return event - 2
	}
	return event
}

// deliveryTemplate is the invoice.paid fixture, indented as Stripe sends
// it, with fixed-width places for the event id, the invoice id and the
// account id.
type deliveryTemplate struct {
	payload                       []byte
	eventAt, invoiceAt, accountAt int
}

const (
	evtPlaceholder  = "evt_000000000000000000000000"
	invPlaceholder  = "in_0000000000000000000000000"
	acctPlaceholder = "acct_0000"
)

func newDeliveryTemplate(b *testing.B) *deliveryTemplate {
	var ev map[string]any
	require.NoError(b, json.Unmarshal(fixture(b, "invoice.paid"), &ev))
	ev["id"] = evtPlaceholder
	obj := ev["data"].(map[string]any)["object"].(map[string]any)
	obj["id"] = invPlaceholder
	obj["metadata"] = map[string]string{"account_id": acctPlaceholder}
	payload, err := json.MarshalIndent(ev, "", "  ")
	require.NoError(b, err)
	t := &deliveryTemplate{payload: payload}
	t.eventAt = indexOf(b, payload, evtPlaceholder) + len(evtPlaceholder)
	t.invoiceAt = indexOf(b, payload, invPlaceholder) + len(invPlaceholder)
	t.accountAt = indexOf(b, payload, acctPlaceholder) + len(acctPlaceholder)
	return t
}

func indexOf(b *testing.B, payload []byte, s string) int {
	i := bytes.Index(payload, []byte(s))
	require.GreaterOrEqual(b, i, 0, s)
	return i
}

// delivery returns the signed request of delivery n.
func (t *deliveryTemplate) delivery(n int64) *http.Request {
	event := eventOf(n)
	invoice := invoiceOf(event)
	p := append([]byte(nil), t.payload...)
	put := func(end int, v int64) {
		d := strconv.FormatInt(v, 10)
		copy(p[end-len(d):end], d)
	}
	put(t.eventAt, event)
	put(t.invoiceAt, invoice)
	put(t.accountAt, invoice%1000)
	return idempotencytest.NewSignedRequest("/webhook", p, testSecret)
}

// handwritten is the receiver a careful engineer writes with stripe-go and
// pgx alone, as ../shared/bench/baseline does.
type handwritten struct {
	db      *pgxpool.Pool
	lastErr atomic.Value
}

func (h *handwritten) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), testSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	if err != nil {
		h.lastErr.Store(err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	dup, err := h.process(ctx, &ev)
	if err != nil {
		h.lastErr.Store(err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if dup {
		_, _ = io.WriteString(w, "duplicate")
		return
	}
	_, _ = io.WriteString(w, "ok")
}

func (h *handwritten) process(ctx context.Context, ev *stripe.Event) (dup bool, err error) {
	tx, err := h.db.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx, `INSERT INTO events (event_id, type) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`, ev.ID, string(ev.Type))
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return true, nil
	}
	var inv stripe.Invoice
	if err := json.Unmarshal(ev.Data.Raw, &inv); err != nil {
		return false, fmt.Errorf("decode invoice: %w", err)
	}
	account := inv.Metadata["account_id"]
	if account == "" {
		return false, errors.New("no account")
	}
	tag, err = tx.Exec(ctx, `INSERT INTO invoice_payments (invoice_id, account_id) VALUES ($1, $2) ON CONFLICT (invoice_id) DO NOTHING`, inv.ID, account)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 1 {
		if err := credit(ctx, tx, account); err != nil {
			return false, err
		}
	}
	return false, tx.Commit(ctx)
}
