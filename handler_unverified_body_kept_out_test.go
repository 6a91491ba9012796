package idempotency_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestUnverifiedBodyReachesNoLogHookOrStore: what an unauthenticated
// sender puts in a body is read only once the signature verifies. A
// request refused before that (no signature, a wrong secret, a timestamp
// out of tolerance, a garbage header, a body over the limit) leaves the
// event id, type and object id of its body out of the log (at Debug),
// out of the Result that OnResult and the Observer's done get, and out of
// both stores; a thin notification's id is not fetched. The synchronous
// Handler, an Inbox's, and one with a StripeClient for thin events alike.
func TestUnverifiedBodyReachesNoLogHookOrStore(t *testing.T) {
	t.Parallel()
	const (
		eventID  = "evt_unverified_7f2c"
		objectID = "in_unverified_7f2c"
		thinID   = "evt_unverified_thin_7f2c"
	)
	snapshot := invoicePayload(t, eventID, objectID, "acct_unverified")
	thin, _ := thinEvent(thinID)
	secrets := []string{testSecret}
	headers := map[string]func(body []byte) string{
		"no header": func([]byte) string { return "" },
		"wrong secret": func(b []byte) string {
			return idempotencytest.SignatureHeader(b, "whsec_not_the_endpoints", time.Now())
		},
		"stale": func(b []byte) string {
			return idempotencytest.SignatureHeader(b, testSecret, time.Now().Add(-time.Hour))
		},
		"ahead": func(b []byte) string {
			return idempotencytest.SignatureHeader(b, testSecret, time.Now().Add(time.Hour))
		},
		"garbage":   func([]byte) string { return "t=x,v1=" + eventID },
		"too large": func(b []byte) string { return idempotencytest.SignatureHeader(b, testSecret, time.Now()) },
	}
	for _, kind := range []string{"sync", "inbox", "thin"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			store := idempotency.NewMemoryStore()
			logger, logs := testLogger()
			var mu sync.Mutex
			var results []idempotency.Result
			keep := func(r idempotency.Result) {
				mu.Lock()
				defer mu.Unlock()
				results = append(results, r)
			}
			f, _, _ := newThinFake(thinID)
			cfg := idempotency.Config{
				Secrets: secrets, Logger: logger, OnResult: keep, MaxBodyBytes: int64(len(snapshot)) + 1,
				Observer: &idempotency.Observer{Delivery: func(ctx context.Context, _ *http.Request) (context.Context, func(idempotency.Result)) {
					return ctx, keep
				}},
			}
			hs := registry()
			body := snapshot
			if kind == "thin" {
				idempotency.On(hs, thinType, func(context.Context, idempotency.Tx, idempotency.Event[map[string]any]) error { return nil })
				cfg.StripeClient = f.serve(t)
				body = thin
				cfg.MaxBodyBytes = int64(len(thin)) + 1
			}
			var inbox *idempotency.Inbox
			var h *idempotency.Handler
			var err error
			if kind == "inbox" {
				inbox, err = idempotency.NewInbox(store, hs, idempotency.InboxConfig{Logger: logger})
				require.NoError(t, err)
				h, err = inbox.Handler(cfg)
			} else {
				h, err = idempotency.NewHandler(store, hs, cfg)
			}
			require.NoError(t, err)

			for name, header := range headers {
				sent := body
				if name == "too large" {
					sent = append(bytes.Clone(body), strings.Repeat(" ", 2)...)
				}
				req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(sent))
				if hd := header(sent); hd != "" {
					req.Header.Set("Stripe-Signature", hd)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, rec.Code, "%s: %s", name, rec.Body)
			}

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, results, 2*len(headers), "OnResult and the Observer's done, once per request")
			for _, r := range results {
				require.Equal(t, idempotency.OutcomeRejected, r.Outcome)
				require.Empty(t, r.EventID, "%v", r.Err)
				require.Empty(t, r.EventType, "%v", r.Err)
				require.Empty(t, r.ObjectID, "%v", r.Err)
				for _, s := range []string{eventID, objectID, thinID, "acct_unverified", thinAccount} {
					require.NotContains(t, r.Err.Error(), s)
				}
			}
			for _, s := range []string{eventID, objectID, thinID, "invoice.paid", thinType, "acct_unverified", thinAccount, testSecret} {
				require.NotContains(t, logs.String(), s, "the log")
			}
			for _, id := range []string{eventID, thinID} {
				_, found, err := store.LookupEvent(t.Context(), id)
				require.NoError(t, err)
				require.False(t, found, "the ledger")
				if inbox != nil {
					_, found, err = inbox.Lookup(t.Context(), id)
					require.NoError(t, err)
					require.False(t, found, "the inbox")
				}
			}
			require.Empty(t, f.calls(), "no fetch from the Stripe API")
		})
	}
}
