package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// ctxSeen records the context of each request it passes on.
type ctxSeen struct {
	next http.Handler
	seen chan context.Context
}

func (c ctxSeen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.seen <- r.Context()
	c.next.ServeHTTP(w, r)
}

type requestMark struct{}

// TestThinEventFetchRunsOnTheRequestContext: the fetch of a thin event's
// event is made on the delivery's request context (its values, such as a
// trace, and its cancellation when the sender hangs up), bounded by
// Config.Timeout: not on a context of its own, and never without a
// deadline (stripe-go's own HTTP timeout is 80 seconds).
func TestThinEventFetchRunsOnTheRequestContext(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	got := thinEvents(app)
	f, notification, _ := newThinFake("evt_thin_ctx")
	seen := make(chan context.Context, 1)
	client := idempotencytest.NewStripeClient(fakeStripeKey, ctxSeen{f, seen})
	h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: time.Hour, StripeClient: client,
	})
	require.NoError(t, err)

	req := idempotencytest.NewSignedRequest("/", notification, testSecret)
	req = req.WithContext(context.WithValue(req.Context(), requestMark{}, "the delivery's"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Len(t, got(), 1)

	ctx := <-seen
	require.Equal(t, "the delivery's", ctx.Value(requestMark{}), "the fetch is made on the request's context")
	deadline, ok := ctx.Deadline()
	require.True(t, ok, "the fetch has a deadline")
	require.LessOrEqual(t, time.Until(deadline), time.Hour, "the fetch is bounded by Config.Timeout")
}
