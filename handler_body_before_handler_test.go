package idempotency_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// bodyRoute is a webhook route of either mode on a memory store, whose
// invoice.paid handler must not run: every request below is rejected.
type bodyRoute struct {
	store   *idempotency.MemoryStore
	inbox   *idempotency.Inbox // nil: synchronous
	handler *idempotency.Handler
	logs    *syncBuffer
	results chan idempotency.Result
}

func newBodyRoute(t *testing.T, inbox bool) *bodyRoute {
	t.Helper()
	rt := &bodyRoute{store: idempotency.NewMemoryStore(), results: make(chan idempotency.Result, 1)}
	hs := idempotency.NewHandlers()
	idempotency.On(hs, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Invoice]) error {
		t.Error("the handler ran")
		return nil
	})
	logger, logs := testLogger()
	rt.logs = logs
	cfg := idempotency.Config{Secrets: []string{testSecret}, Logger: logger, OnResult: func(r idempotency.Result) { rt.results <- r }}
	var err error
	if inbox {
		rt.inbox, err = idempotency.NewInbox(rt.store, hs, idempotency.InboxConfig{Logger: logger})
		require.NoError(t, err)
		rt.handler, err = rt.inbox.Handler(cfg)
	} else {
		rt.handler, err = idempotency.NewHandler(rt.store, hs, cfg)
	}
	require.NoError(t, err)
	return rt
}

// requireNothingStored: neither the ledger nor the inbox holds anything.
func (rt *bodyRoute) requireNothingStored(t *testing.T) {
	t.Helper()
	events, err := rt.store.ListEvents(t.Context(), idempotency.EventFilter{})
	require.NoError(t, err)
	require.Empty(t, events, "the ledger holds an event")
	if rt.inbox != nil {
		recs, err := rt.inbox.List(t.Context(), idempotency.InboxFilter{})
		require.NoError(t, err)
		require.Empty(t, recs, "the inbox holds an event")
	}
}

// TestBodyReadBeforeTheHandler: a middleware in front of the Handler that
// read the body (a request logger) without putting back the same bytes,
// closed it, or limited it below Config.MaxBodyBytes is named in
// Result.Err and the log line, without a byte of the body, in either mode:
// "request body unreadable: unexpected EOF" and "invalid Stripe-Signature"
// alone did not say that anything before the Handler had touched it, and a
// limit of the middleware's was answered 400 unreadable_body with the
// body's Content-Length, 413 body_too_large without it, and named by
// neither. Nothing is stored; a sender that hung up is not blamed on a
// middleware.
func TestBodyReadBeforeTheHandler(t *testing.T) {
	t.Parallel()
	payload := eventPayload(t, "invoice.paid", "evt_read_before", paid)
	readAll := func(r *http.Request) { _, _ = io.ReadAll(r.Body) }
	for _, tt := range []struct {
		name    string
		chunked bool                                         // sent without a Content-Length
		before  func(w http.ResponseWriter, r *http.Request) // the middleware
		status  int
		answer  string
		sentry  error
		mention []string
	}{{
		name:   "read, not put back",
		before: func(_ http.ResponseWriter, r *http.Request) { readAll(r) },
		status: 400, answer: `{"error":"unreadable_body"}`, sentry: idempotency.ErrUnreadableBody,
		mention: []string{fmt.Sprintf("none of its %d bytes (Content-Length) was left to read", len(payload)), "a middleware before the Handler"},
	}, {
		name: "read in part",
		before: func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadFull(r.Body, make([]byte, 100))
		},
		status: 400, answer: `{"error":"unreadable_body"}`, sentry: idempotency.ErrUnreadableBody,
		mention: []string{fmt.Sprintf("it ended after %d of its %d bytes (Content-Length)", len(payload)-100, len(payload)), "a middleware before the Handler"},
	}, {
		name:   "closed",
		before: func(_ http.ResponseWriter, r *http.Request) { _ = r.Body.Close() },
		status: 400, answer: `{"error":"unreadable_body"}`, sentry: idempotency.ErrUnreadableBody,
		mention: []string{"a middleware before the Handler closed it"},
	}, {
		name:    "sent chunked, read, not put back",
		chunked: true,
		before:  func(_ http.ResponseWriter, r *http.Request) { readAll(r) },
		status:  400, answer: `{"error":"invalid_signature"}`, sentry: idempotency.ErrInvalidSignature,
		mention: []string{"the body is empty", "a middleware before the Handler"},
	}, {
		name: "re-encoded",
		before: func(_ http.ResponseWriter, r *http.Request) {
			var indented bytes.Buffer
			b, _ := io.ReadAll(r.Body)
			_ = json.Indent(&indented, b, "", "\t")
			r.Body, r.ContentLength = io.NopCloser(&indented), int64(indented.Len())
		},
		status: 400, answer: `{"error":"invalid_signature"}`, sentry: idempotency.ErrInvalidSignature,
		mention: []string{"no v1 signature matches the", "with the secret", "a middleware or proxy that re-encoded"},
	}, {
		name: "limited below MaxBodyBytes",
		before: func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, 1024)
		},
		status: 413, answer: `{"error":"body_too_large"}`, sentry: idempotency.ErrBodyTooLarge,
		mention: []string{"over the limit of 1024 bytes that a middleware before the Handler set on it", "under Config.MaxBodyBytes (1048576)"},
	}, {
		name:    "sent chunked, limited below MaxBodyBytes",
		chunked: true,
		before: func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, 1024)
		},
		status: 413, answer: `{"error":"body_too_large"}`, sentry: idempotency.ErrBodyTooLarge,
		mention: []string{"over the limit of 1024 bytes that a middleware before the Handler set on it"},
	}} {
		for _, inbox := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/inbox=%t", tt.name, inbox), func(t *testing.T) {
				t.Parallel()
				rt := newBodyRoute(t, inbox)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					tt.before(w, r)
					rt.handler.ServeHTTP(w, r)
				}))
				t.Cleanup(srv.Close)
				var body io.Reader = bytes.NewReader(payload)
				if tt.chunked {
					body = io.MultiReader(body) // of no known length
				}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, body)
				require.NoError(t, err)
				req.Header.Set("Stripe-Signature", idempotencytest.SignatureHeader(payload, testSecret, time.Now()))
				resp, err := srv.Client().Do(req)
				require.NoError(t, err)
				answer, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, tt.status, resp.StatusCode, "answer: %s", answer)
				require.Equal(t, tt.answer, string(answer))
				res := recv(t, rt.results, "the delivery's Result")
				require.Equal(t, idempotency.OutcomeRejected, res.Outcome)
				require.ErrorIs(t, res.Err, tt.sentry)
				for _, m := range tt.mention {
					require.Contains(t, res.Err.Error(), m)
					require.Contains(t, rt.logs.String(), m)
				}
				require.NotContains(t, rt.logs.String(), "in_1Pgc6tB7WZ01zgkWu9fdqL6I", "the log quotes the body")
				rt.requireNothingStored(t)
			})
		}
	}

	t.Run("a sender that hung up", func(t *testing.T) {
		t.Parallel()
		rt := newBodyRoute(t, false)
		srv := httptest.NewServer(rt.handler)
		t.Cleanup(srv.Close)
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nStripe-Signature: %s\r\nContent-Length: %d\r\n\r\n%s",
			idempotencytest.SignatureHeader(payload, testSecret, time.Now()), len(payload), payload[:10])
		require.NoError(t, err)
		require.NoError(t, conn.(*net.TCPConn).CloseWrite()) // hangs up, its body cut short
		res := recv(t, rt.results, "the delivery's Result")
		require.ErrorIs(t, res.Err, idempotency.ErrUnreadableBody)
		require.ErrorIs(t, res.Err, io.ErrUnexpectedEOF)
		require.NotContains(t, res.Err.Error(), "middleware")
		require.NoError(t, conn.Close())
		rt.requireNothingStored(t)
	})
}
