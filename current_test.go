package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v82"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// The misuse of OnCurrent and the adapters around it. The behaviour on
// both stores (the per-object lock, coalescing, 404, fetch errors, Connect,
// CheckOrder) is in the conformance suite, idempotencytest's
// conformance_current.go.

func fetchNothing(context.Context, string, string) (*stripe.Subscription, error) {
	return nil, errors.New("not called")
}

func handleNothing(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error {
	return nil
}

// TestOnCurrentPanicsOnMisuse: OnCurrent panics, as On does, on a
// programming error, with a message that names it.
func TestOnCurrentPanicsOnMisuse(t *testing.T) {
	t.Parallel()
	types := []string{"customer.subscription.updated"}
	for name, tc := range map[string]struct {
		hs    *idempotency.Handlers
		types []string
		fetch idempotency.FetchFunc[*stripe.Subscription]
		fn    idempotency.EventFunc[*stripe.Subscription]
		msg   string
	}{
		"nil Handlers":       {nil, types, fetchNothing, handleNothing, "nil *Handlers"},
		"nil types":          {idempotency.NewHandlers(), nil, fetchNothing, handleNothing, "no event types"},
		"empty types":        {idempotency.NewHandlers(), []string{}, fetchNothing, handleNothing, "no event types"},
		"nil fetch":          {idempotency.NewHandlers(), types, nil, handleNothing, "nil fetch"},
		"nil handler func":   {idempotency.NewHandlers(), types, fetchNothing, nil, "nil fetch or handler func"},
		"empty event type":   {idempotency.NewHandlers(), []string{""}, fetchNothing, handleNothing, "empty event type"},
		"a type given twice": {idempotency.NewHandlers(), []string{"customer.subscription.updated", "customer.subscription.updated"}, fetchNothing, handleNothing, "already registered"},
	} {
		t.Run(name, func(t *testing.T) {
			v := panicValue(func() { idempotency.OnCurrent(tc.hs, tc.types, tc.fetch, tc.fn) })
			require.NotNil(t, v, "OnCurrent did not panic")
			err, ok := v.(error)
			require.True(t, ok, "the panic value is an error: %v", v)
			require.ErrorContains(t, err, tc.msg)
		})
	}

	t.Run("a type already registered", func(t *testing.T) {
		hs := idempotency.NewHandlers()
		idempotency.On(hs, "customer.subscription.deleted", handleNothing)
		v := panicValue(func() {
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated", "customer.subscription.deleted"}, fetchNothing, handleNothing)
		})
		err, ok := v.(error)
		require.True(t, ok, "the panic value is an error: %v", v)
		require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
		require.ErrorContains(t, err, "customer.subscription.deleted")

		hs = idempotency.NewHandlers()
		idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchNothing, handleNothing)
		v = panicValue(func() {
			idempotency.OnCurrent(hs, []string{"customer.subscription.updated"}, fetchNothing, handleNothing)
		})
		err, ok = v.(error)
		require.True(t, ok, "the panic value is an error: %v", v)
		require.ErrorIs(t, err, idempotency.ErrDuplicateRegistration)
	})
}

// panicValue runs f and returns what it panicked with, nil if it did not.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestRetrieve: the adapter sets Stripe-Account only for a connected
// account, and wraps every error in ErrStripeAPI, a 404 in
// ErrObjectNotFound too, the *stripe.Error, a network or a context error
// still reachable.
func TestRetrieve(t *testing.T) {
	t.Parallel()
	var gotID string
	var gotParams *stripe.SubscriptionRetrieveParams
	var answer error
	fetch := idempotency.Retrieve(func(_ context.Context, id string, params *stripe.SubscriptionRetrieveParams) (*stripe.Subscription, error) {
		gotID, gotParams = id, params
		if answer != nil {
			return nil, answer
		}
		return &stripe.Subscription{ID: id, Status: stripe.SubscriptionStatusActive}, nil
	})
	ctx := t.Context()

	sub, err := fetch(ctx, "sub_1", "")
	require.NoError(t, err)
	require.Equal(t, "sub_1", sub.ID)
	require.Equal(t, "sub_1", gotID)
	require.NotNil(t, gotParams, "the adapter passes params")
	require.Nil(t, gotParams.StripeAccount, "the platform's object is fetched without Stripe-Account")

	_, err = fetch(ctx, "sub_2", "acct_1Connected")
	require.NoError(t, err)
	require.NotNil(t, gotParams.StripeAccount)
	require.Equal(t, "acct_1Connected", *gotParams.StripeAccount)

	notFound := &stripe.Error{HTTPStatusCode: http.StatusNotFound, Type: stripe.ErrorTypeInvalidRequest, Code: stripe.ErrorCodeResourceMissing, Msg: "No such subscription: 'sub_3'"}
	answer = notFound
	_, err = fetch(ctx, "sub_3", "")
	require.ErrorIs(t, err, idempotency.ErrObjectNotFound)
	var se *stripe.Error
	require.ErrorAs(t, err, &se)
	require.Same(t, notFound, se)

	answer = fmt.Errorf("wrapped: %w", notFound)
	_, err = fetch(ctx, "sub_3", "")
	require.ErrorIs(t, err, idempotency.ErrObjectNotFound, "a wrapped 404 is a 404 too")

	for _, other := range []*stripe.Error{
		{HTTPStatusCode: http.StatusTooManyRequests, Type: stripe.ErrorTypeInvalidRequest, Code: stripe.ErrorCodeRateLimit, RequestID: "req_429"},
		{HTTPStatusCode: http.StatusInternalServerError, Type: stripe.ErrorTypeAPI},
		{HTTPStatusCode: http.StatusBadRequest, Type: stripe.ErrorTypeInvalidRequest, Code: stripe.ErrorCodeResourceMissing, Msg: "about jane@example.com"},
	} {
		answer = other
		_, err = fetch(ctx, "sub_4", "")
		require.ErrorIs(t, err, idempotency.ErrStripeAPI)
		require.NotErrorIs(t, err, idempotency.ErrObjectNotFound)
		require.ErrorAs(t, err, &se)
		require.Same(t, other, se)
		require.Contains(t, err.Error(), fmt.Sprintf("HTTP %d %s", other.HTTPStatusCode, other.Type))
		require.NotContains(t, err.Error(), "jane@example.com", "the message is not quoted")
	}
	answer = context.DeadlineExceeded
	_, err = fetch(ctx, "sub_5", "")
	require.ErrorIs(t, err, idempotency.ErrStripeAPI)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestRetrieveQuotesNoAnswer: an object stripe-go cannot decode makes an
// error that quotes the answer's body; neither the error the handler gets
// nor the delivery's log line quotes it. A 200 stripe-go could not read is
// answered 503 stripe_unavailable, as a thin event's fetch of one is.
func TestRetrieveQuotesNoAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"sub_1","object":"subscription","status":12,"metadata":{"email":"jane.doe@example.com"}}`))
	}))
	t.Cleanup(srv.Close)
	client := stripe.NewClient(fakeStripeKey, fakeBackends(srv.URL, nil))
	hs := idempotency.NewHandlers()
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		idempotency.Retrieve(client.V1Subscriptions.Retrieve), handleNothing)
	log, logs := testLogger()
	var res idempotency.Result
	h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: log, OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, fixture(t, "customer.subscription.updated"), testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status)
	require.ErrorIs(t, res.Err, idempotency.ErrStripeAPI)
	require.Contains(t, res.Err.Error(), "could not read")
	require.NotContains(t, res.Err.Error(), "jane.doe@example.com")
	require.Contains(t, logs.String(), "could not read")
	require.NotContains(t, logs.String(), "jane.doe@example.com")
}

// TestFetchTimeoutBoundsAHangingFetch: a fetch that never answers is cut at
// FetchTimeout, within the handler's own longer timeout: the event fails
// with a deadline error, answered 503 stripe_unavailable as a fetch the
// API answers 429 or 5xx is (it was 500 processing_failed, a handler's
// error), nothing written, and the handler func does not run. On the
// fake clock of a synctest bubble: the fetch's deadline and the answer
// are FetchTimeout after the delivery to the nanosecond, however long the
// verification and the claim before it take on a loaded machine.
func TestFetchTimeoutBoundsAHangingFetch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		type deadline struct {
			at time.Time
			ok bool
		}
		deadlines := make(chan deadline, 1)
		hs := idempotency.NewHandlers()
		idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
			func(ctx context.Context, _, _ string) (*stripe.Subscription, error) {
				at, ok := ctx.Deadline()
				deadlines <- deadline{at, ok}
				<-ctx.Done()
				return nil, ctx.Err()
			},
			func(context.Context, idempotency.Tx, idempotency.Event[*stripe.Subscription]) error {
				t.Error("the handler func ran after a fetch that timed out")
				return nil
			})
		results := make(chan idempotency.Result, 1)
		store := idempotency.NewMemoryStore()
		const handlerTimeout = 30 * time.Second
		h, err := idempotency.NewHandler(store, hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: handlerTimeout,
			OnResult: func(r idempotency.Result) { results <- r },
		})
		require.NoError(t, err)

		start := time.Now()
		a := idempotencytest.Deliver(h, fixture(t, "customer.subscription.updated"), testSecret)
		elapsed := time.Since(start)
		require.Equal(t, http.StatusServiceUnavailable, a.Status, a.Body)
		require.JSONEq(t, `{"error":"stripe_unavailable"}`, a.Body)
		d := <-deadlines
		require.True(t, d.ok, "the fetch has no deadline")
		require.Equal(t, start.Add(idempotency.FetchTimeout), d.at, "the fetch's deadline is FetchTimeout")
		require.Equal(t, idempotency.FetchTimeout, elapsed, "FetchTimeout, not the handler's timeout, ended the fetch")
		r := <-results
		require.ErrorIs(t, r.Err, context.DeadlineExceeded)
		require.NotErrorIs(t, r.Err, idempotency.ErrTimeout, "the handler's own timeout did not expire")
		require.ErrorContains(t, r.Err, "fetching the current object")
		require.Equal(t, idempotency.OutcomeFailed, r.Outcome)
		_, found, err := store.LookupEvent(t.Context(), r.EventID)
		require.NoError(t, err)
		require.False(t, found, "the failed event was recorded")
	})
}

// TestHandlerTimeoutDuringAFetchAnswers500: a fetch cut by the handler's
// own Config.Timeout, shorter than FetchTimeout (a lock waited for took the
// rest), is the handler's timeout, answered 500 processing_failed with
// ErrTimeout, not 503 for the API. On the fake clock of a synctest bubble:
// the claim and the lock before the fetch, which must come before
// Timeout, take no time on it however loaded the machine (on the real
// clock they raced the Timeout).
func TestHandlerTimeoutDuringAFetchAnswers500(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hs := idempotency.NewHandlers()
		fetching := make(chan time.Time, 1)
		idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
			func(ctx context.Context, _, _ string) (*stripe.Subscription, error) {
				fetching <- time.Now()
				<-ctx.Done()
				return nil, ctx.Err()
			}, handleNothing)
		results := make(chan idempotency.Result, 1)
		const timeout = time.Second
		h, err := idempotency.NewHandler(idempotency.NewMemoryStore(), hs, idempotency.Config{
			Secrets: []string{testSecret}, Logger: discardLogger(), Timeout: timeout,
			OnResult: func(r idempotency.Result) { results <- r },
		})
		require.NoError(t, err)
		start := time.Now()
		a := idempotencytest.Deliver(h, fixture(t, "customer.subscription.updated"), testSecret)
		require.Equal(t, start, <-fetching, "the fetch began before any time passed")
		require.Equal(t, timeout, time.Since(start), "answered at the handler's Timeout")
		require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
		require.JSONEq(t, `{"error":"processing_failed"}`, a.Body)
		r := <-results
		require.ErrorIs(t, r.Err, idempotency.ErrTimeout)
		require.ErrorContains(t, r.Err, "fetching the current object")
	})
}

// notAStore runs handlers in a Tx of no store of the package.
type notAStore struct{}

type notAStoreTx struct{}

func (notAStoreTx) Guard(context.Context, string, string) (bool, error) { return true, nil }
func (notAStoreTx) AfterCommit(func(context.Context))                   {}
func (notAStoreTx) EventID() string                                     { return "evt_foreign" }
func (notAStoreTx) EventType() string                                   { return "customer.subscription.updated" }

func (notAStore) Ping(context.Context) error { return nil }

func (notAStore) Run(ctx context.Context, _ idempotency.Claim, apply idempotency.ApplyFunc) (idempotency.Outcome, error) {
	if apply == nil {
		return idempotency.OutcomeIgnored, nil
	}
	if err := apply(ctx, notAStoreTx{}); err != nil {
		return idempotency.OutcomeFailed, err
	}
	return idempotency.OutcomeProcessed, nil
}

// TestCurrentNeedsStoreTx: OnCurrent and CheckOrder keep their state in the
// transaction of MemoryStore or PgxStore; on another Store the event fails
// with ErrNeedsStoreTx, before anything is fetched.
func TestCurrentNeedsStoreTx(t *testing.T) {
	t.Parallel()
	hs := idempotency.NewHandlers()
	fetched := false
	idempotency.OnCurrent(hs, []string{"customer.subscription.updated"},
		func(context.Context, string, string) (*stripe.Subscription, error) {
			fetched = true
			return &stripe.Subscription{}, nil
		}, handleNothing)
	results := make(chan idempotency.Result, 1)
	h, err := idempotency.NewHandler(notAStore{}, hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), OnResult: func(r idempotency.Result) { results <- r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, fixture(t, "customer.subscription.updated"), testSecret)
	require.Equal(t, http.StatusInternalServerError, a.Status, a.Body)
	require.ErrorIs(t, (<-results).Err, idempotency.ErrNeedsStoreTx)
	require.False(t, fetched, "the object was fetched without a store transaction")

	_, err = idempotency.CheckOrder(t.Context(), notAStoreTx{}, "subscription", "sub_1", time.Now())
	require.ErrorIs(t, err, idempotency.ErrNeedsStoreTx)
}
