package idempotency_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestThinNotificationOfAHeldEventIsNotFetched: a thin notification whose
// event the store holds already (claimed, or in the inbox) is answered
// duplicate without a call to the Stripe API. Each copy of a notification
// used to fetch its event again: Stripe's redeliveries, and anyone who
// captured one signed notification and sent it again and again within
// Config.Tolerance, spent the account's API rate limit, which the
// service's own calls (payments, refunds) share, one call per request.
// The first delivery fetches once, as before; a delivery that failed
// stores nothing and the next fetches again.
func TestThinNotificationOfAHeldEventIsNotFetched(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		thinEvents(app)
		t.Run("synchronous", func(t *testing.T) {
			f, notification, _ := newThinFake("evt_thin_held_sync")
			var mu sync.Mutex
			var last idempotency.Result
			h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
				OnResult: func(r idempotency.Result) {
					mu.Lock()
					defer mu.Unlock()
					last = r
				},
			})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, notification, testSecret).Outcome)
			answers := idempotencytest.Replay(h, notification, testSecret, 20)
			require.Equal(t, map[int]int{http.StatusOK: 20}, answers.Statuses())
			require.Equal(t, 20, answers.Count(idempotency.OutcomeDuplicate))
			require.Equal(t, 1, len(f.calls()), "the first delivery's fetch alone")
			require.Equal(t, 1, app.appliedCounts(t)["evt_thin_held_sync"])
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, []string{"evt_thin_held_sync", thinType, thinMeter}, []string{last.EventID, last.EventType, last.ObjectID},
				"a duplicate's Result names the event and its object")
		})
		t.Run("inbox", func(t *testing.T) {
			f, notification, _ := newThinFake("evt_thin_held_inbox")
			in, h := app.inbox(t, f.serve(t))
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, notification, testSecret).Outcome)
			require.Equal(t, idempotency.OutcomeDuplicate, idempotencytest.Deliver(h, notification, testSecret).Outcome, "pending in the inbox")
			n, err := in.WorkDue(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, n)
			answers := idempotencytest.Replay(h, notification, testSecret, 20)
			require.Equal(t, 20, answers.Count(idempotency.OutcomeDuplicate), "processed")
			require.Equal(t, 1, len(f.calls()), "the first delivery's fetch alone")
			require.Equal(t, 1, app.appliedCounts(t)["evt_thin_held_inbox"])
		})
		t.Run("failed first", func(t *testing.T) {
			f, notification, _ := newThinFake("evt_thin_held_failed")
			f.fail = func(n int, _ *http.Request) int {
				if n == 1 {
					return http.StatusServiceUnavailable
				}
				return 0
			}
			h, err := idempotency.NewHandler(app.store, app.hs, idempotency.Config{
				Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t),
			})
			require.NoError(t, err)
			require.Equal(t, http.StatusServiceUnavailable, idempotencytest.Deliver(h, notification, testSecret).Status)
			require.Equal(t, idempotency.OutcomeProcessed, idempotencytest.Deliver(h, notification, testSecret).Outcome,
				"nothing held: fetched again")
			require.Equal(t, 2, len(f.calls()))
		})
	})
}

// hangingLedger is a MemoryStore whose LookupEvent answers only when its
// context ends: a database that does not answer.
type hangingLedger struct{ *idempotency.MemoryStore }

func (s hangingLedger) LookupEvent(ctx context.Context, _ string) (idempotency.EventRecord, bool, error) {
	<-ctx.Done()
	return idempotency.EventRecord{}, false, ctx.Err()
}

// TestThinLookupThatTakesTheTimeoutIsTheStores: the look-up of whether
// the store holds a thin notification's event shares Config.Timeout with
// its fetch, so that the answer still takes at most twice Timeout; a
// look-up that takes all of it is answered 503 store_unavailable, naming
// the store and the timeout, without a call to the Stripe API, which is
// not what was slow.
func TestThinLookupThatTakesTheTimeoutIsTheStores(t *testing.T) {
	t.Parallel()
	app := newService(t, "memory")
	thinEvents(app)
	f, notification, _ := newThinFake("evt_thin_lookup_hangs")
	var res idempotency.Result
	h, err := idempotency.NewHandler(hangingLedger{idempotency.NewMemoryStore()}, app.hs, idempotency.Config{
		Secrets: []string{testSecret}, Logger: discardLogger(), StripeClient: f.serve(t), Timeout: 50 * time.Millisecond,
		OnResult: func(r idempotency.Result) { res = r },
	})
	require.NoError(t, err)
	a := idempotencytest.Deliver(h, notification, testSecret)
	require.Equal(t, http.StatusServiceUnavailable, a.Status)
	require.JSONEq(t, `{"error":"store_unavailable"}`, a.Body)
	require.Equal(t, idempotency.OutcomeUnavailable, res.Outcome)
	require.ErrorIs(t, res.Err, idempotency.ErrStoreUnavailable)
	require.ErrorIs(t, res.Err, idempotency.ErrTimeout)
	require.Empty(t, f.calls(), "nothing fetched")
}
