package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// bench is one webhook route on a memory store, with an invoice.paid handler
// that credits an account once per invoice.
type bench struct {
	store   *idempotency.MemoryStore
	handler *idempotency.Handler
	logs    *syncBuffer
	credits *counters
	runs    atomic.Int32
	results chan idempotency.Result
}

func newBench(t *testing.T, cfg idempotency.Config, register func(hs *idempotency.Handlers, b *bench)) *bench {
	t.Helper()
	b := &bench{
		store:   idempotency.NewMemoryStore(),
		credits: &counters{m: map[string]int{}},
		results: make(chan idempotency.Result, 100),
	}
	hs := idempotency.NewHandlers()
	if register != nil {
		register(hs, b)
	} else {
		idempotency.On(hs, "invoice.paid", b.creditInvoice)
	}
	logger, logs := testLogger()
	b.logs = logs
	if cfg.Secrets == nil {
		cfg.Secrets = []string{testSecret}
	}
	cfg.Logger = logger
	cfg.OnResult = func(r idempotency.Result) { b.results <- r }
	h, err := idempotency.NewHandler(b.store, hs, cfg)
	require.NoError(t, err)
	b.handler = h
	t.Cleanup(func() {
		// Nothing a client sent may reach the logs: no secret, no payload.
		logs := b.logs.String()
		require.NotContains(t, logs, testSecret)
		require.NotContains(t, logs, "jenny.rosen@example.com")
		require.NotContains(t, logs, "cus_QXg1o8vcGmoR32")
	})
	return b
}

func (b *bench) creditInvoice(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
	b.runs.Add(1)
	account := ev.Object.Metadata["account_id"]
	if account == "" {
		return idempotency.Skip("invoice has no account_id in metadata")
	}
	first, err := tx.Guard(ctx, "invoice-credit", ev.Object.ID)
	if err != nil || !first {
		return err
	}
	return b.credits.add(ctx, tx, account, 100)
}

func (b *bench) serve(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	return rec
}

func (b *bench) lastResult(t *testing.T) idempotency.Result {
	t.Helper()
	select {
	case r := <-b.results:
		return r
	default:
		t.Fatal("no result reported")
		return idempotency.Result{}
	}
}

func (b *bench) requireLedger(t *testing.T, id string, want bool) {
	t.Helper()
	_, ok, err := b.store.LookupEvent(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, want, ok, "event %s in the ledger", id)
}

func (b *bench) requireNothingStored(t *testing.T) {
	t.Helper()
	recs, err := b.store.ListEvents(t.Context(), idempotency.EventFilter{})
	require.NoError(t, err)
	require.Empty(t, recs, "nothing stored")
}

func requireAnswer(t *testing.T, rec *httptest.ResponseRecorder, status int, body string) {
	t.Helper()
	require.Equal(t, status, rec.Code, "body: %s", rec.Body.String())
	require.Equal(t, body, rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
}

var paid = map[string]string{"account_id": "acct_42"}

func TestHandlerProcessedThenDuplicate(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	payload := eventPayload(t, "invoice.paid", "evt_1", paid)

	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"processed"}`)
	res := b.lastResult(t)
	require.Equal(t, idempotency.OutcomeProcessed, res.Outcome)
	require.Equal(t, "evt_1", res.EventID)
	require.Equal(t, "invoice.paid", res.EventType)
	require.Equal(t, "in_1Pgc6tB7WZ01zgkWu9fdqL6I", res.ObjectID)
	require.NoError(t, res.Err)
	require.Equal(t, 100, b.credits.get(t, "acct_42"))
	rec, ok, err := b.store.LookupEvent(t.Context(), "evt_1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "in_1Pgc6tB7WZ01zgkWu9fdqL6I", rec.ObjectID)

	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"duplicate"}`)
	require.Equal(t, idempotency.OutcomeDuplicate, b.lastResult(t).Outcome)
	require.EqualValues(t, 1, b.runs.Load(), "a duplicate runs nothing")
	require.Equal(t, 100, b.credits.get(t, "acct_42"))
}

func TestHandlerTwinEventsCreditOnce(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "invoice.paid", b.creditInvoice)
		idempotency.On(hs, "invoice.payment_succeeded", b.creditInvoice)
	})
	for _, name := range []string{"invoice.paid", "invoice.payment_succeeded"} {
		id := "evt_" + strings.ReplaceAll(name, ".", "_")
		rec := b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, name, id, paid), testSecret))
		requireAnswer(t, rec, 200, `{"outcome":"processed"}`)
	}
	require.Equal(t, 100, b.credits.get(t, "acct_42"), "two events about one invoice credit once")
}

func TestHandlerConcurrentCopies(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	answers := idempotencytest.Replay(b.handler, eventPayload(t, "invoice.paid", "evt_storm", paid), testSecret, 50)
	require.Equal(t, map[int]int{200: 50}, answers.Statuses())
	require.Equal(t, 1, answers.Count(idempotency.OutcomeProcessed))
	require.Equal(t, 49, answers.Count(idempotency.OutcomeDuplicate))
	require.EqualValues(t, 1, b.runs.Load())
	require.Equal(t, 100, b.credits.get(t, "acct_42"))
}

func TestHandlerIgnored(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	payload := eventPayload(t, "checkout.session.completed", "evt_cs", nil)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"ignored"}`)
	b.requireLedger(t, "evt_cs", false)

	rb := newBench(t, idempotency.Config{RecordIgnored: true}, nil)
	requireAnswer(t, rb.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"ignored"}`)
	rec, ok, err := rb.store.LookupEvent(t.Context(), "evt_cs")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.OutcomeIgnored, rec.Outcome)
	requireAnswer(t, rb.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"duplicate"}`)
}

func TestHandlerSkip(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	payload := eventPayload(t, "invoice.paid", "evt_nometa", nil)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"skipped"}`)
	rec, ok, err := b.store.LookupEvent(t.Context(), "evt_nometa")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, idempotency.OutcomeSkipped, rec.Outcome)
	require.Equal(t, "invoice has no account_id in metadata", rec.SkipReason)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"duplicate"}`)
	require.EqualValues(t, 1, b.runs.Load(), "a skipped event is never run again")
}

// failing registers an invoice.paid handler that credits, then fails as fail
// says.
func failing(fail func(ctx context.Context) error) func(hs *idempotency.Handlers, b *bench) {
	return func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "invoice.paid", func(ctx context.Context, tx idempotency.Tx, ev idempotency.Event[*stripe.Invoice]) error {
			if err := b.creditInvoice(ctx, tx, ev); err != nil {
				return err
			}
			return fail(ctx)
		})
	}
}

func TestHandlerFailuresWriteNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     idempotency.Config
		fail    func(ctx context.Context) error
		wantErr error
	}{
		{"error", idempotency.Config{}, func(context.Context) error { return errors.New("ledger service said no: internal detail") }, nil},
		{"panic", idempotency.Config{}, func(context.Context) error { panic("nil map somewhere") }, nil},
		{"timeout", idempotency.Config{Timeout: 50 * time.Millisecond}, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, idempotency.ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, tt.cfg, failing(tt.fail))
			payload := eventPayload(t, "invoice.paid", "evt_fail", paid)
			rec := b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret))
			requireAnswer(t, rec, 500, `{"error":"processing_failed"}`)
			res := b.lastResult(t)
			require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
			require.Error(t, res.Err)
			if tt.wantErr != nil {
				require.ErrorIs(t, res.Err, tt.wantErr)
			}
			if tt.wantErr == idempotency.ErrTimeout { // names the setting to raise
				require.ErrorContains(t, res.Err, "timed out after 50ms (the handler's transaction, Config.Timeout)")
			}
			require.Equal(t, 0, b.credits.get(t, "acct_42"))
			b.requireLedger(t, "evt_fail", false)
			_, ok, err := b.store.LookupGuard(t.Context(), "invoice-credit", "in_1Pgc6tB7WZ01zgkWu9fdqL6I")
			require.NoError(t, err)
			require.False(t, ok, "the guard rolled back")
			require.Contains(t, b.logs.String(), `"level":"ERROR"`)
		})
	}
}

func TestHandlerPanicLogsStack(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, failing(func(context.Context) error { panic("boom") }))
	b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_p", paid), testSecret))
	var pe *idempotency.PanicError
	require.ErrorAs(t, b.lastResult(t).Err, &pe)
	require.Equal(t, "boom", pe.Value)
	require.Contains(t, b.logs.String(), "handler_test.go", "the log carries the panic's stack")
}

// A handler that panics has failed, even when the panic's value wraps a
// Skip: answered 500 and nothing kept, on both stores, so that Stripe's
// next delivery applies the event once the bug is fixed. It was answered
// 200 skipped, the event dropped for good.
func TestHandlerPanicWrappingSkipIsAFailure(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fixed := false
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				if !fixed {
					panic(fmt.Errorf("a helper's bug: %w", idempotency.Skip("no such plan")))
				}
				return nil
			})
			var res idempotency.Result
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: func(r idempotency.Result) { res = r },
			})
			require.NoError(t, err)
			payload := eventPayload(t, "invoice.paid", "evt_panic_skip", paid)
			a := idempotencytest.Deliver(h, payload, testSecret)
			require.Equal(t, 500, a.Status)
			require.JSONEq(t, `{"error":"processing_failed"}`, a.Body)
			require.Equal(t, idempotency.OutcomeFailed, res.Outcome)
			var pe *idempotency.PanicError
			require.ErrorAs(t, res.Err, &pe)
			_, kept, err := store.(interface {
				LookupEvent(context.Context, string) (idempotency.EventRecord, bool, error)
			}).LookupEvent(t.Context(), "evt_panic_skip")
			require.NoError(t, err)
			require.False(t, kept, "nothing kept")

			fixed = true
			a = idempotencytest.Deliver(h, payload, testSecret)
			require.Equal(t, 200, a.Status)
			require.JSONEq(t, `{"outcome":"processed"}`, a.Body)
		})
	}
}

// A handler's own error that looks like a lost connection (an EOF or a
// network error from another service it called) is a failure, answered
// 500, on both stores: PostgreSQL's store took it for its database gone
// and answered 503 store_unavailable.
func TestHandlerNetworkErrorOfItsOwnIsAFailure(t *testing.T) {
	t.Parallel()
	for name, store := range bothStores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for i, own := range []error{io.ErrUnexpectedEOF, io.EOF, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}} {
				out, err := store.Run(t.Context(), idempotency.Claim{EventID: fmt.Sprint("evt_own_", i), EventType: "invoice.paid"},
					func(context.Context, idempotency.Tx) error { return fmt.Errorf("calling the CRM: %w", own) })
				require.Equal(t, idempotency.OutcomeFailed, out, "%v", own)
				require.ErrorIs(t, err, own)
				require.NotErrorIs(t, err, idempotency.ErrStoreUnavailable, "%v", own)
			}
			hs := idempotency.NewHandlers()
			idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
				return fmt.Errorf("calling the CRM: %w", io.ErrUnexpectedEOF)
			})
			h, err := idempotency.NewHandler(store, hs, idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_own_http", paid), testSecret)
			require.Equal(t, 500, a.Status)
			require.JSONEq(t, `{"error":"processing_failed"}`, a.Body)
		})
	}
}

// unavailableStore fails every call as a store whose database is down.
type unavailableStore struct{}

func (unavailableStore) Ping(context.Context) error { return idempotency.ErrStoreUnavailable }

func (unavailableStore) Run(context.Context, idempotency.Claim, idempotency.ApplyFunc) (idempotency.Outcome, error) {
	return idempotency.OutcomeUnavailable, fmt.Errorf("%w: connection refused", idempotency.ErrStoreUnavailable)
}

func TestHandlerStoreUnavailable(t *testing.T) {
	t.Parallel()
	logger, _ := testLogger()
	h, err := idempotency.NewHandler(unavailableStore{}, registry(), idempotency.Config{Secrets: []string{testSecret}, Logger: logger})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, eventPayload(t, "invoice.paid", "evt_down", paid), testSecret)
	require.Equal(t, 503, a.Status)
	require.Equal(t, `{"error":"store_unavailable"}`, a.Body)
}

func registry() *idempotency.Handlers {
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil })
	return hs
}

func TestHandlerRejects(t *testing.T) {
	t.Parallel()
	payload := eventPayload(t, "invoice.paid", "evt_rej", paid)
	// Each header is signed when its subtest runs (here and below): the
	// signature's timestamp is checked against the real time, and a
	// parallel subtest may wait minutes for its turn on a busy machine,
	// after which a signature made 8 minutes ahead beforehand would be
	// within tolerance.
	sig := func(p []byte, secret string, shift time.Duration) func(time.Time) string {
		return func(now time.Time) string { return idempotencytest.SignatureHeader(p, secret, now.Add(shift)) }
	}
	fixed := func(h string) func(time.Time) string { return func(time.Time) string { return h } }
	tampered := bytes.Clone(payload)
	tampered[bytes.Index(tampered, []byte("2000"))] = '3' // one byte of amount_due

	tests := []struct {
		name   string
		method string
		body   []byte
		header func(now time.Time) string
		status int
		answer string
		err    error
	}{
		{"GET", http.MethodGet, nil, fixed(""), 405, `{"error":"method_not_allowed"}`, nil},
		{"PUT", http.MethodPut, payload, sig(payload, testSecret, 0), 405, `{"error":"method_not_allowed"}`, nil},
		{"no header", http.MethodPost, payload, fixed(""), 400, `{"error":"invalid_signature"}`, idempotency.ErrNotSigned},
		{"garbage header", http.MethodPost, payload, fixed("not a signature"), 400, `{"error":"invalid_signature"}`, idempotency.ErrInvalidSignature},
		{"no timestamp", http.MethodPost, payload, fixed("v1=" + strings.Repeat("ab", 32)), 400, `{"error":"invalid_signature"}`, idempotency.ErrInvalidSignature},
		{"no v1", http.MethodPost, payload, func(now time.Time) string { return fmt.Sprintf("t=%d,v0=abc", now.Unix()) }, 400, `{"error":"invalid_signature"}`, idempotency.ErrInvalidSignature},
		{"wrong secret", http.MethodPost, payload, sig(payload, "whsec_other", 0), 400, `{"error":"invalid_signature"}`, idempotency.ErrInvalidSignature},
		{"one byte changed", http.MethodPost, tampered, sig(payload, testSecret, 0), 400, `{"error":"invalid_signature"}`, idempotency.ErrInvalidSignature},
		{"8 minutes old", http.MethodPost, payload, sig(payload, testSecret, -8*time.Minute), 400, `{"error":"invalid_signature"}`, idempotency.ErrTimestampOutsideTolerance},
		{"8 minutes ahead", http.MethodPost, payload, sig(payload, testSecret, 8*time.Minute), 400, `{"error":"invalid_signature"}`, idempotency.ErrTimestampOutsideTolerance},
		{"not JSON", http.MethodPost, []byte("hello"), sig([]byte("hello"), testSecret, 0), 400, `{"error":"invalid_event"}`, idempotency.ErrMalformedEvent},
		{"not an event", http.MethodPost, []byte(`{"id":"evt_x"}`), sig([]byte(`{"id":"evt_x"}`), testSecret, 0), 400, `{"error":"invalid_event"}`, idempotency.ErrMalformedEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBench(t, idempotency.Config{}, nil)
			req := httptest.NewRequest(tt.method, "/", bytes.NewReader(tt.body))
			if h := tt.header(time.Now()); h != "" {
				req.Header.Set("Stripe-Signature", h)
			}
			rec := b.serve(req)
			requireAnswer(t, rec, tt.status, tt.answer)
			if tt.status == 405 {
				require.Equal(t, "POST", rec.Header().Get("Allow"))
			}
			res := b.lastResult(t)
			require.Equal(t, idempotency.OutcomeRejected, res.Outcome)
			if tt.err != nil {
				require.ErrorIs(t, res.Err, tt.err)
			}
			require.Zero(t, b.runs.Load())
			b.requireNothingStored(t)
			require.Contains(t, b.logs.String(), `"level":"WARN"`)
		})
	}
}

func TestHandlerSignatureVariants(t *testing.T) {
	t.Parallel()
	payload := eventPayload(t, "invoice.paid", "evt_sig", paid)
	// As in TestHandlerRejects, each signature is made when its subtest
	// runs.
	t.Run("several v1 signatures, one matching", func(t *testing.T) {
		t.Parallel()
		now := time.Now()
		_, goodV1, _ := strings.Cut(idempotencytest.SignatureHeader(payload, testSecret, now), ",")
		_, badV1, _ := strings.Cut(idempotencytest.SignatureHeader(payload, "whsec_old", now), ",")
		b := newBench(t, idempotency.Config{}, nil)
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(payload))
		req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,%s,v0=deadbeef,%s,v1=nothex", now.Unix(), badV1, goodV1))
		requireAnswer(t, b.serve(req), 200, `{"outcome":"processed"}`)
	})
	t.Run("second of two secrets", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, idempotency.Config{Secrets: []string{"whsec_old", testSecret}}, nil)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"processed"}`)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, "whsec_old")), 200, `{"outcome":"duplicate"}`)
	})
	t.Run("within tolerance both ways", func(t *testing.T) {
		t.Parallel()
		now := time.Now()
		b := newBench(t, idempotency.Config{}, nil)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequestAt("/", payload, testSecret, now.Add(-2*time.Minute))), 200, `{"outcome":"processed"}`)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequestAt("/", payload, testSecret, now.Add(2*time.Minute))), 200, `{"outcome":"duplicate"}`)
	})
	t.Run("custom tolerance", func(t *testing.T) {
		t.Parallel()
		now := time.Now()
		b := newBench(t, idempotency.Config{Tolerance: 10 * time.Minute}, nil)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequestAt("/", payload, testSecret, now.Add(-7*time.Minute))), 200, `{"outcome":"processed"}`)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequestAt("/", payload, testSecret, now.Add(13*time.Minute))), 400, `{"error":"invalid_signature"}`)
	})
}

func TestHandlerBodyLimit(t *testing.T) {
	t.Parallel()
	payload := eventPayload(t, "invoice.paid", "evt_big", paid)
	b := newBench(t, idempotency.Config{MaxBodyBytes: int64(len(payload) - 1)}, nil)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 413, `{"error":"body_too_large"}`)

	// Without a Content-Length (chunked), the limit holds while reading.
	req := idempotencytest.NewSignedRequest("/", payload, testSecret)
	req.ContentLength = -1
	req.Body = io.NopCloser(bytes.NewReader(payload))
	requireAnswer(t, b.serve(req), 413, `{"error":"body_too_large"}`)
	b.requireNothingStored(t)

	// The default limit takes a 1 MiB body and refuses one byte more.
	d := newBench(t, idempotency.Config{}, nil)
	huge := bytes.Repeat([]byte(" "), idempotency.DefaultMaxBodyBytes+1)
	requireAnswer(t, d.serve(idempotencytest.NewSignedRequest("/", huge, testSecret)), 413, `{"error":"body_too_large"}`)
	padded := append(bytes.Repeat([]byte(" "), idempotency.DefaultMaxBodyBytes-len(payload)), payload...)
	requireAnswer(t, d.serve(idempotencytest.NewSignedRequest("/", padded, testSecret)), 200, `{"outcome":"processed"}`)

	// A body that ends before its Content-Length (the sender hung up) is
	// refused without a verification.
	e := newBench(t, idempotency.Config{}, nil)
	short := idempotencytest.NewSignedRequest("/", payload, testSecret)
	short.Body = io.NopCloser(bytes.NewReader(payload[:len(payload)/2]))
	requireAnswer(t, e.serve(short), 400, `{"error":"unreadable_body"}`)
	require.ErrorIs(t, e.lastResult(t).Err, io.ErrUnexpectedEOF)
	e.requireNothingStored(t)
}

func TestHandlerThinEvent(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, nil)
	thin := []byte(`{"id":"evt_test_65R9Ijk8EqLJMSpBSoq16R9Ijk8Eq","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","livemode":false,"created":"2024-09-17T06:20:52.246Z","related_object":{"id":"mtr_test_61R9IeFqmU7VuFjFk41A","type":"billing.meter","url":"/v1/billing/meters/mtr_test_61R9IeFqmU7VuFjFk41A"}}`)
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", thin, testSecret)), 400, `{"error":"invalid_event"}`)
	require.ErrorIs(t, b.lastResult(t).Err, idempotency.ErrThinEvent)
	require.Contains(t, b.logs.String(), "snapshot events")
	b.requireNothingStored(t)
}

func TestHandlerAPIVersion(t *testing.T) {
	t.Parallel()
	clover := fixture(t, "invoice.paid.api_version-clover")
	other := bytes.Replace(clover, []byte(`"evt_`), []byte(`"evt_2`), 1)

	t.Run("lenient", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, idempotency.Config{}, nil)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", clover, testSecret)), 200, `{"outcome":"skipped"}`)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", other, testSecret)), 200, `{"outcome":"skipped"}`)
		require.Equal(t, 1, strings.Count(b.logs.String(), "2025-09-30.clover\""), "one warning per version: %s", b.logs.String())
		require.Contains(t, b.logs.String(), "API version differs")
	})
	t.Run("strict", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, idempotency.Config{StrictAPIVersion: true}, nil)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", clover, testSecret)), 400, `{"error":"invalid_event"}`)
		require.ErrorIs(t, b.lastResult(t).Err, idempotency.ErrAPIVersionMismatch)
		b.requireNothingStored(t)
		// The pinned version passes in strict mode.
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", fixture(t, "invoice.paid"), testSecret)), 200, `{"outcome":"skipped"}`)
	})
}

func TestHandlerInternalErrorsStayInternal(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, failing(func(context.Context) error { return errors.New("pq: password=hunter2") }))
	rec := b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_x", paid), testSecret))
	require.NotContains(t, rec.Body.String(), "hunter2")
	require.Contains(t, b.lastResult(t).Err.Error(), "hunter2", "the error is reported to the result hook")
}

// slimInvoice is a user's own struct with only the fields a handler reads.
type slimInvoice struct {
	ID       string            `json:"id"`
	Customer string            `json:"customer"`
	Metadata map[string]string `json:"metadata"`
	Lines    struct {
		Data []struct {
			Period struct {
				End int64 `json:"end"`
			} `json:"period"`
		} `json:"data"`
	} `json:"lines"`
}

func TestHandlerDecodesIntoUserStruct(t *testing.T) {
	t.Parallel()
	var got idempotency.Event[slimInvoice]
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "customer.subscription.updated", func(_ context.Context, tx idempotency.Tx, ev idempotency.Event[slimInvoice]) error {
			require.Equal(t, ev.ID, tx.EventID())
			require.Equal(t, ev.Type, tx.EventType())
			got = ev
			return nil
		})
	})
	payload := fixture(t, "customer.subscription.updated")
	requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", payload, testSecret)), 200, `{"outcome":"processed"}`)
	require.Equal(t, "customer.subscription.updated", got.Type)
	require.Equal(t, "2025-08-27.basil", got.APIVersion)
	require.False(t, got.Livemode)
	require.False(t, got.Created.IsZero())
	require.Equal(t, "cus_QXg1o8vcGmoR32", got.Object.Customer)
	require.True(t, strings.HasPrefix(got.Object.ID, "sub_"))
	require.NotEmpty(t, got.Previous, "previous_attributes of an update")
	require.Equal(t, payload, []byte(got.Raw))
}

func TestHandlerDecodeFailureIs500(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct {
			ID int `json:"id"`
		}]) error {
			return nil
		})
	})
	rec := b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_dec", paid), testSecret))
	requireAnswer(t, rec, 500, `{"error":"processing_failed"}`)
	require.ErrorContains(t, b.lastResult(t).Err, "decoding data.object")
	b.requireLedger(t, "evt_dec", false)
}

func TestNewHandlerValidatesConfig(t *testing.T) {
	t.Parallel()
	s, hs := idempotency.NewMemoryStore(), idempotency.NewHandlers()
	tests := []struct {
		cfg  idempotency.Config
		want string
	}{
		{idempotency.Config{}, "Config.Secrets"},
		{idempotency.Config{Secrets: []string{" "}}, "Config.Secrets[0]"},
		{idempotency.Config{Secrets: []string{"s"}, Tolerance: -1}, "Config.Tolerance"},
		{idempotency.Config{Secrets: []string{"s"}, Timeout: -1}, "Config.Timeout"},
		{idempotency.Config{Secrets: []string{"s"}, MaxBodyBytes: -1}, "Config.MaxBodyBytes"},
	}
	for _, tt := range tests {
		_, err := idempotency.NewHandler(s, hs, tt.cfg)
		require.ErrorContains(t, err, tt.want)
	}
	_, err := idempotency.NewHandler(nil, hs, idempotency.Config{Secrets: []string{"s"}})
	require.Error(t, err)
	_, err = idempotency.NewHandler(s, nil, idempotency.Config{Secrets: []string{"s"}})
	require.Error(t, err)
}

func TestRegistration(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	fn := func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error { return nil }
	idempotency.On(hs, "invoice.paid", fn)
	err := idempotency.OnSafely(hs, "invoice.paid", fn)
	require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
	require.ErrorContains(t, err, `"invoice.paid"`)
	require.PanicsWithError(t, err.Error(), func() { idempotency.On(hs, "invoice.paid", fn) })
	require.Error(t, idempotency.OnSafely(hs, "", fn))
	require.Error(t, idempotency.OnSafely[*stripe.Invoice](hs, "invoice.created", nil))
	require.Equal(t, []string{"invoice.paid"}, hs.EventTypes())
	// A registration after NewHandler: TestHandlersRefuseARegistrationAfterTheSnapshot.
}

func TestHandlerSignatureEdgeCases(t *testing.T) {
	t.Parallel()
	payload := eventPayload(t, "invoice.paid", "evt_edge", paid)
	now := time.Now()
	future := idempotencytest.SignatureHeader(payload, testSecret, now.Add(time.Hour))

	b := newBench(t, idempotency.Config{Now: func() time.Time { return now }}, nil)
	// stripe-go signs against the last t=; an earlier, current one must not
	// let a future signature through.
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,%s", now.Unix(), future))
	requireAnswer(t, b.serve(req), 400, `{"error":"invalid_signature"}`)
	require.ErrorIs(t, b.lastResult(t).Err, idempotency.ErrTimestampOutsideTolerance)

	_, err := idempotency.NewHandler(idempotency.NewMemoryStore(), idempotency.NewHandlers(),
		idempotency.Config{Secrets: []string{testSecret + "\n"}})
	require.ErrorContains(t, err, "white space")
}

// StrictAPIVersion refuses only events a handler would decode: one of
// another release train with no handler is answered ignored, recorded
// with RecordIgnored, synchronously and in the inbox. With RecordIgnored
// it was refused (400), and Stripe retried it for days.
func TestHandlerStrictAPIVersionIgnoresUnhandledTypes(t *testing.T) {
	t.Parallel()
	clover := bytes.Replace(fixture(t, "invoice.paid.api_version-clover"), []byte(`"invoice.paid"`), []byte(`"invoice.created"`), 1)
	for _, record := range []bool{false, true} {
		cfg := idempotency.Config{StrictAPIVersion: true, RecordIgnored: record}
		b := newBench(t, cfg, nil)
		requireAnswer(t, b.serve(idempotencytest.NewSignedRequest("/", clover, testSecret)), 200, `{"outcome":"ignored"}`)
		rec, kept, err := b.store.LookupEvent(t.Context(), "evt_1S2kq5B7WZ01zgkWcLv9Xp0T")
		require.NoError(t, err)
		require.Equal(t, record, kept, "recorded with RecordIgnored: %v", record)
		if record {
			require.Equal(t, idempotency.OutcomeIgnored, rec.Outcome)
		}

		store := idempotency.NewMemoryStore()
		inbox, err := idempotency.NewInbox(store, registry(), idempotency.InboxConfig{Logger: discardLogger()})
		require.NoError(t, err)
		cfg.Secrets, cfg.Logger = []string{testSecret}, discardLogger()
		h, err := inbox.Handler(cfg)
		require.NoError(t, err)
		a := idempotencytest.Deliver(h, clover, testSecret)
		require.Equal(t, 200, a.Status, "inbox, RecordIgnored: %v", record)
		require.JSONEq(t, `{"outcome":"ignored"}`, a.Body)
	}
}

func TestHandlerDecodeErrorKeepsValuesOut(t *testing.T) {
	t.Parallel()
	b := newBench(t, idempotency.Config{}, func(hs *idempotency.Handlers, b *bench) {
		idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct {
			AmountDue string `json:"amount_due"`
		}]) error {
			return nil
		})
	})
	b.serve(idempotencytest.NewSignedRequest("/", eventPayload(t, "invoice.paid", "evt_dec2", paid), testSecret))
	err := b.lastResult(t).Err
	var de *idempotency.DecodeError
	require.ErrorAs(t, err, &de)
	require.Contains(t, err.Error(), `field "amount_due"`)
	require.NotContains(t, err.Error(), "2000", "the amount from the payload")
	require.NotContains(t, b.logs.String(), "number 2000")
}
