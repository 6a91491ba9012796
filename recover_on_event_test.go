package idempotency_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
	"github.com/seed-a84bb619/idempotency/idempotencytest"
)

// TestRecoverOnEventReportsEachListedEvent: RecoverOptions.OnEvent is
// called once for each event the report's Listed counts, oldest first,
// with its type and outcome: a duplicate's, an ignored one's, and a
// malformed one's type as listed, which is how a caller learns which
// types the Events API listed no event for.
func TestRecoverOnEventReportsEachListedEvent(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		created := time.Now().Add(-time.Hour).Unix()
		dup := snapshotEvent(t, "evt_on_0", "invoice.paid", "in_on_0", created)
		f.add(dup)
		f.add(snapshotEvent(t, "evt_on_1", "invoice.paid", "in_on_1", created+1))
		f.add(snapshotEvent(t, "evt_on_2", "customer.created", "cus_on_2", created+2))
		f.add(fmt.Appendf(nil, `{"id":"evt_on_3","object":"event","type":"invoice.paid","created":%d,"data":"not an object"}`, created+3))
		_, h := app.inbox(t, nil)
		require.Equal(t, idempotency.OutcomeQueued, idempotencytest.Deliver(h, dup, testSecret).Outcome)

		var got []idempotency.Result
		rep, err := h.Recover(t.Context(), client, idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour),
			OnEvent: func(res idempotency.Result) { got = append(got, res) }})
		require.NoError(t, err)
		require.Equal(t, 4, rep.Listed)
		require.Len(t, got, rep.Listed)
		for i, want := range []struct {
			typ     string
			outcome idempotency.Outcome
		}{
			{"invoice.paid", idempotency.OutcomeDuplicate},
			{"invoice.paid", idempotency.OutcomeQueued},
			{"customer.created", idempotency.OutcomeIgnored},
			{"invoice.paid", idempotency.OutcomeRejected},
		} {
			require.Equal(t, fmt.Sprintf("evt_on_%d", i), got[i].EventID)
			require.Equal(t, want.typ, got[i].EventType, got[i].EventID)
			require.Equal(t, want.outcome, got[i].Outcome, got[i].EventID)
		}
		require.ErrorIs(t, got[3].Err, idempotency.ErrMalformedEvent)
	})
}
