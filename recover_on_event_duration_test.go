package idempotency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed-a84bb619/idempotency"
)

// TestRecoverOnEventHasTheDuration: the Result RecoverOptions.OnEvent is
// given has the Duration the event took to hand to the Handler, as
// Config.OnResult's of a delivery has, so that a caller that feeds both to
// one latency histogram records what each took, not 0 for every
// recovered event.
func TestRecoverOnEventHasTheDuration(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, app *service) {
		f := newFakeStripe()
		client := f.serve(t)
		f.add(snapshotEvent(t, "evt_ond_0", "invoice.paid", "in_ond_0", time.Now().Add(-time.Hour).Unix()))
		var got []idempotency.Result
		_, err := app.handler(t).Recover(t.Context(), client, idempotency.RecoverOptions{Since: time.Now().Add(-2 * time.Hour),
			OnEvent: func(res idempotency.Result) { got = append(got, res) }})
		require.NoError(t, err)
		require.Len(t, got, 1)
		require.Equal(t, idempotency.OutcomeProcessed, got[0].Outcome)
		require.Positive(t, got[0].Duration)
	})
}
