package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestInboxDecodeFailureRetriedThenRedriven: an event whose data.object
// does not fit the handler's Go type (a field of another JSON kind: a bug
// in the type) is retried with backoff, not dead-lettered at once, since a
// release whose type fits may come within the backoff, or already run on
// another replica. Each attempt's last error says it is a decode failure,
// names the field and the types, and quotes no value of the payload; at
// MaxAttempts it is dead-lettered, and redriven once a release fixes the
// type, it is applied, once.
func TestInboxDecodeFailureRetriedThenRedriven(t *testing.T) {
	t.Parallel()
	const secret = "4242424242"
	payload := []byte(strings.Replace(string(snapshotEvent(t, "evt_decode_fail", "invoice.paid", "in_decode_fail", time.Now().Unix())),
		`"amount_paid":100`, `"amount_paid":`+secret, 1))
	require.Contains(t, string(payload), secret)
	for storeName, store := range bothStores(t) {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			clock := idempotencytest.NewClock(time.Now())
			open := func(hs *idempotency.Handlers) *idempotency.Inbox {
				in, err := idempotency.NewInbox(store, hs, idempotency.InboxConfig{
					Now: clock.Now, Logger: discardLogger(), MaxAttempts: 3,
					Backoff: func(int) time.Duration { return time.Minute },
				})
				require.NoError(t, err)
				return in
			}
			buggy := idempotency.NewHandlers()
			idempotency.On(buggy, "invoice.paid", func(context.Context, idempotency.Tx, idempotency.Event[struct {
				AmountPaid string `json:"amount_paid"` // Stripe sends a number
			}]) error {
				return errors.New("never called: the object does not decode")
			})
			in := open(buggy)
			h, err := in.Handler(idempotency.Config{Secrets: []string{testSecret}, Logger: discardLogger()})
			require.NoError(t, err)
			require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, payload, testSecret).Outcome)

			for attempt, state := range []idempotency.InboxState{idempotency.InboxFailed, idempotency.InboxFailed, idempotency.InboxDeadLetter} {
				n, err := in.WorkDue(t.Context())
				require.NoError(t, err)
				require.Equal(t, 1, n)
				rec, _, err := in.Lookup(t.Context(), "evt_decode_fail")
				require.NoError(t, err)
				require.Equal(t, state, rec.State, "attempt %d", attempt+1)
				require.Equal(t, attempt+1, rec.Attempt)
				require.Contains(t, rec.LastError, "decoding data.object of invoice.paid event into")
				require.Contains(t, rec.LastError, `field "amount_paid": cannot decode a JSON number into string`)
				require.NotContains(t, rec.LastError, secret, "the last error quotes the payload")
				clock.Advance(time.Minute)
			}

			var applied atomic.Int32
			fixed := idempotency.NewHandlers()
			idempotency.On(fixed, "invoice.paid", func(_ context.Context, _ idempotency.Tx, ev idempotency.Event[struct {
				AmountPaid int64 `json:"amount_paid"`
			}]) error {
				require.Equal(t, int64(4242424242), ev.Object.AmountPaid)
				applied.Add(1)
				return nil
			})
			in = open(fixed)
			n, err := in.Redrive(t.Context(), idempotency.RedriveFilter{EventIDs: []string{"evt_decode_fail"}})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			for range 2 {
				_, err := in.WorkDue(t.Context())
				require.NoError(t, err)
				clock.Advance(time.Minute)
			}
			require.Equal(t, int32(1), applied.Load())
			rec, _, err := in.Lookup(t.Context(), "evt_decode_fail")
			require.NoError(t, err)
			require.Equal(t, idempotency.InboxProcessed, rec.State)
		})
	}
}
